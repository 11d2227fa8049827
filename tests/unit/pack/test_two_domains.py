"""Two enterprises in one store neither share nor see each other's metagraph or vocabulary, and
re-loading a pack is idempotent and keeps recorded decision traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopweave.errors import PackError
from hopweave.graph import open_graph_store
from hopweave.graph.base import Edge, Node
from hopweave.models.store_settings import read_store_settings
from hopweave.pack.init import init_pack
from hopweave.pack.loader import load_pack


def _rename_goal(d: Path, old: str, new: str) -> None:
    for f in [*(d / "goals").glob("*.yaml"), *(d / "scenarios").glob("*.yaml")]:
        f.write_text(f.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


def _second(tmp_path: Path) -> Path:
    d = tmp_path / "gym"
    init_pack(d, name="gym", tenant="gym-co")
    _rename_goal(d, "RefundRequest", "MembershipRefund")
    for f in (d / "graph").glob("*.jsonl"):  # node ids are unique in a store
        f.write_text(f.read_text(encoding="utf-8").replace("PLAN_", "GYMPLAN_").replace("MEM_", "GYM_").replace("INV_", "GYMINV_"),
                     encoding="utf-8")
    for f in (d / "corpus").glob("*.md"):  # Document node ids (DOC_<document_id>_<revision>) too
        f.write_text(f.read_text(encoding="utf-8").replace("document_id: refund", "document_id: gym-refund"),
                     encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("two")
    shop = tmp / "shop"
    init_pack(shop, name="shop", tenant="shop-co")
    s = tmp / "store"
    load_pack(shop, s, with_vectors=False)
    load_pack(_second(tmp), s, with_vectors=False)
    return s


def test_each_domain_sees_only_its_goals_and_vocabulary(store: Path) -> None:
    settings = read_store_settings(store)
    assert settings is not None and sorted(settings.domains) == ["gym", "shop"]
    assert settings.registry().domain_of("gym-co") == "gym"
    g = open_graph_store(store)
    assert [x.name for x in g.domain_goal_types("shop")] == ["RefundRequest"]
    assert [x.name for x in g.domain_goal_types("gym")] == ["MembershipRefund"]
    assert {p.goal for p in g.domain_patterns("gym")} == {"MembershipRefund"}
    assert sorted(n.id for n in g.find_nodes("shop-co", "Plan")) == ["PLAN_Basic", "PLAN_Pro"]
    assert sorted(n.id for n in g.find_nodes("gym-co", "Plan")) == ["GYMPLAN_Basic", "GYMPLAN_Pro"]
    assert g.get_node("gym-co", "PLAN_Pro") is None
    assert g.get_node("gym-co", "MEM_1001") is None


def test_a_goal_name_belongs_to_one_domain(store: Path, tmp_path: Path) -> None:
    d = tmp_path / "copycat"
    init_pack(d, name="copycat", tenant="copy-co")
    for f in (d / "graph").glob("*.jsonl"):
        f.write_text(f.read_text(encoding="utf-8").replace("PLAN_", "CPLAN_").replace("MEM_", "CMEM_").replace("INV_", "CINV_"),
                     encoding="utf-8")
    with pytest.raises(PackError, match="already belongs to domain 'shop'"):
        load_pack(d, store, with_vectors=False)


def test_a_tenant_belongs_to_one_domain(store: Path, tmp_path: Path) -> None:
    d = tmp_path / "thief"
    init_pack(d, name="thief", tenant="shop-co")
    with pytest.raises(PackError, match="already served by domain 'shop'"):
        load_pack(d, store, with_vectors=False)


def test_reload_is_idempotent_and_keeps_traces(tmp_path: Path) -> None:
    shop = tmp_path / "shop"
    init_pack(shop, name="shop", tenant="shop-co")
    s = tmp_path / "store"
    first = load_pack(shop, s, with_vectors=False)
    g = open_graph_store(s)
    g.write("shop-co", [Node("RT_test", "DecisionTrace", {"kind": "retrieval", "summary": "kept"})],
            [Edge("RT_test", "MEM_1001", "FOR_MEMBER")])
    g.close()
    second = load_pack(shop, s, with_vectors=False)
    assert second["metagraph_revision"] == first["metagraph_revision"]
    assert second["nodes"] == first["nodes"] + 1
    g = open_graph_store(s)
    assert g.get_node("shop-co", "RT_test") is not None
