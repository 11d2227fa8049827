"""Documents for everyone beside documents for one group: a chunk field the filter mapping
declares ``absent_means_any`` compiles to ``field is empty or field = v``, on both Qdrant
adapters and in the post-check (:func:`hopweave.models.filters.matches`), so a Gold customer
retrieves the general document and the Gold one, never the Silver one."""

from __future__ import annotations

from pathlib import Path

import pytest
from search_fixtures import load, make_index

from hopweave.errors import FilterError
from hopweave.models.common import Session
from hopweave.models.filters import Eq, In, IsEmpty, Or, clause_field, compile_matcher, matches
from hopweave.models.ranking import RankingProfile
from hopweave.pack.manifest import read_manifest
from hopweave.search.qdrant_filter import to_edge, to_qdrant
from hopweave.understand.filter_map import FilterMapping, compile_filter, read_mapping_file
from hopweave.understand.models import Entity
from hopweave.understand.scope import SubjectRecord, session_scope

PACK = Path(__file__).resolve().parents[3] / "examples" / "deltabank"
BASE = read_mapping_file(PACK / "filters.yaml")
MAPPING = FilterMapping.model_validate({**BASE.model_dump(mode="json", by_alias=True),
                                        "absent_means_any": ["tier", "region"]})
SETTINGS = read_manifest(PACK).domain_settings()
WIDE = RankingProfile(name="wide_rrf", version=1, method="rrf", rank_constant=60, candidates_per_channel=500)
SESSION = Session(tenant_id="t1", customer_id="CUST_1", region="US")
GOLD = SubjectRecord(subject_id="CUST_1", values={"Tier": ("Gold",)}, names={"Tier": ("Gold",)},
                     origins={"Tier": "CUST_1.tier"})

DOCS = [  # (chunk id, tier, region) ; None = field absent
    ("general", None, None),
    ("general_us", None, "US"),
    ("gold", "Gold", None),
    ("gold_silver", ["Gold", "Silver"], "US"),
    ("silver", "Silver", None),
    ("gold_eu", "Gold", "EU"),
    ("empty_list", [], None),
]


def _payloads() -> list[dict]:
    out = []
    for cid, tier, region in DOCS:
        p = {"tenant_id": "t1", "chunk_id": cid, "document_id": cid, "title": "Late fee waiver",
             "text": f"late fee waiver policy {cid.replace('_', ' ')} customers", "status": "active",
             "version": "current", "revision": "v1", "policy_type": "LateFeeWaiver"}
        if tier is not None:
            p["tier"] = tier
        if region is not None:
            p["region"] = region
        out.append(p)
    return out


def _tree():
    tree, _ = compile_filter(MAPPING, [Entity(type="Tier", value="Gold", source="graph")], SESSION,
                             unscoped=(), as_of="2026-05-12")
    return tree


def test_compiles_to_is_empty_or_equals() -> None:
    tree = _tree()
    tier = Or(clauses=(IsEmpty(field="tier"), Eq(field="tier", value="Gold")))
    region = Or(clauses=(IsEmpty(field="region"), Eq(field="region", value="US")))
    assert tier in tree.clauses and region in tree.clauses
    assert clause_field(tier) == "tier"
    # the session's scope builds the same clause, so merging the two does not repeat it
    scope = session_scope(MAPPING, SETTINGS, GOLD, SESSION, "2026-05-12")
    assert tier in scope.clauses and scope.complete(tree) == tree
    scope.check(IsEmpty(field="tier"))  # "only documents for everyone" narrows the scope
    plain, _ = compile_filter(BASE, [Entity(type="Tier", value="Gold", source="graph")], SESSION, as_of="2026-05-12")
    assert Eq(field="tier", value="Gold") in plain.clauses  # undeclared: strict equality, as before
    q = to_qdrant(tier).model_dump(mode="json", exclude_none=True)
    assert q["should"][0] == {"is_empty": {"key": "tier"}}
    assert "IsEmptyCondition" in repr(to_edge(tier))


def test_post_check_agrees() -> None:
    tree, m = _tree(), compile_matcher(_tree())
    got = {p["chunk_id"] for p in _payloads() if matches(tree, p)}
    assert got == {p["chunk_id"] for p in _payloads() if m(p)}
    assert got == {"general", "general_us", "gold", "gold_silver", "empty_list"}
    two = Or(clauses=(IsEmpty(field="tier"), In(field="tier", values=("Gold", "Silver"))))
    assert {p["chunk_id"] for p in _payloads() if matches(two, p)} == got | {"silver", "gold_eu"}  # no region clause here


@pytest.mark.parametrize("kind", ["edge", "client"])
def test_gold_customer_retrieves_general_and_gold_documents(kind, tmp_path, schema, hash_embedder) -> None:
    embedder = hash_embedder  # the filter is under test, not the ranking
    payloads = _payloads()
    idx = make_index(kind, tmp_path, schema, embedder)
    try:
        load(idx, payloads, embedder)
        query = "late fee waiver policy"
        res = idx.search("t1", query, WIDE, where=_tree(), limit=20, query_vector=embedder.embed_one(query),
                         query_space=embedder.space)
        assert {h.chunk_id for h in res.hits} == {"general", "general_us", "gold", "gold_silver", "empty_list"}
        assert res.candidates["dropped_by_post_check"] == 0  # Qdrant itself applied the clause
    finally:
        idx.close()


def test_unknown_or_reserved_field_is_refused(schema) -> None:
    with pytest.raises(FilterError, match="did you mean 'tier'"):
        FilterMapping.model_validate({**BASE.model_dump(mode="json", by_alias=True),
                                      "absent_means_any": ["teir"]}).check(schema)
    with pytest.raises(FilterError, match="cannot name"):
        FilterMapping.model_validate({**BASE.model_dump(mode="json", by_alias=True),
                                      "absent_means_any": ["tenant_id"]}).check(schema)
    MAPPING.check(schema)
