"""The corpus as a pack part: Document nodes linked to vocabulary nodes by the manifest's
`corpus.links` (data, not code), SUPERSEDES between revisions, problems for validate."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from hopweave.errors import InputError, PackError
from hopweave.graph.base import Edge
from hopweave.models.schema import GraphSchema
from hopweave.pack.corpus import check_corpus_dir, document_graph, load_corpus, store_resolver
from hopweave.pack.manifest import CorpusLink

PACK = Path(__file__).resolve().parents[3] / "examples" / "deltabank"
LINKS = [CorpusLink(field="product", relationship="OF_PRODUCT", label="Product"),
         CorpusLink(field="tier", relationship="APPLIES_TO", label="Tier"),
         CorpusLink(field="policy_type", relationship="OF_POLICY_TYPE", label="PolicyType")]
PREFIX = {"Product": "PRODUCT", "Tier": "TIER", "PolicyType": "POLICYTYPE"}


@pytest.fixture(scope="module")
def schema() -> GraphSchema:
    return GraphSchema.load(PACK / "schema.yaml")


def test_deltabank_documents_link_as_the_manifest_says(schema):
    docs = load_corpus(PACK / "corpus", schema, "deltabank")
    nodes, edges = document_graph(docs, LINKS, schema=schema, resolve=lambda lab, m, v: f"{PREFIX[lab]}_{v}")
    assert len(nodes) == len(docs) == 34
    by_id = {n.id: n for n in nodes}
    fee = by_id["DOC_fee-schedule-platinum_v4"]
    assert fee.props["tier"] == "Platinum" and fee.props["region"] == "US" and fee.props["version"] == "current"
    assert fee.props["summary"].startswith("fee-schedule-platinum-v4.pdf: ")
    out = [e for e in edges if e.src == fee.id]
    assert out == [Edge(fee.id, "PRODUCT_Platinum_Card", "OF_PRODUCT"), Edge(fee.id, "TIER_Platinum", "APPLIES_TO"),
                   Edge(fee.id, "POLICYTYPE_FeeSchedule", "OF_POLICY_TYPE"),
                   Edge(fee.id, "DOC_fee-schedule-platinum_v3", "SUPERSEDES")]
    # list-valued fields: one edge per value and a comma-joined property
    multi = [n for n in nodes if "," in str(n.props.get("tier", ""))]
    assert multi and all(sum(e.src == n.id and e.type == "APPLIES_TO" for e in edges) ==
                         len(n.props["tier"].split(",")) for n in multi)


def test_unresolved_links_are_one_pack_error(schema):
    docs = load_corpus(PACK / "corpus", schema, "deltabank")
    with pytest.raises(PackError) as exc:
        document_graph(docs, LINKS, schema=schema, resolve=lambda lab, m, v: None if lab == "Tier" else "X")
    assert "tier 'Platinum' matches no Tier node with name = 'Platinum'" in str(exc.value)


def test_store_resolver_matches_by_property(tmp_path):
    from hopweave.graph.base import Node
    from hopweave.graph.networkx_store import NetworkxGraphStore
    from hopweave.models.schema import GLOBAL_TENANT

    store = NetworkxGraphStore(None, GraphSchema.load(PACK / "schema.yaml"))
    store.write(GLOBAL_TENANT, [Node("T_gold", "Tier", {"name": "Gold"})], [])
    resolve = store_resolver(store, "deltabank")
    assert resolve("Tier", "name", "Gold") == "T_gold" and resolve("Tier", "name", "Tin") is None


def test_check_corpus_dir_reports_bad_front_matter(schema, tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.md").write_text(textwrap.dedent("""\
        ---
        document_id: a
        revision: v1
        colour: red
        ---
        ## 1 Intro

        Text.
        """))
    (tmp_path / "corpus" / "b.md").write_text("---\ndocument_id: b\nversion: old\n---\n## 1 Intro\n\nText.\n")
    probs = check_corpus_dir(tmp_path / "corpus", schema, root=tmp_path)
    assert [(p.file, p.record) for p in probs] == [("corpus/b.md", "b"), ("corpus/a.md", None)]
    assert "version" in probs[0].message and "['colour']" in probs[1].message and probs[1].fix
    assert check_corpus_dir(PACK / "corpus", schema, root=PACK) == []
    assert "does not exist" in check_corpus_dir(tmp_path / "nope", schema)[0].message


def _doc(folder: Path, stem: str, tenant: str | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    front = f"document_id: {stem}\nrevision: v1\ntitle: {stem}\n" + (f"tenant_id: {tenant}\n" if tenant else "")
    (folder / f"{stem}.md").write_text(f"---\n{front}---\n\n## 1 Scope\n\nText of {stem}.\n", encoding="utf-8")


def test_front_matter_tenant_overrides_the_corpus_tenant(tmp_path: Path) -> None:
    schema = GraphSchema.base()
    _doc(tmp_path / "corpus", "ours", None)
    _doc(tmp_path / "corpus", "theirs", "zephyr")
    docs = load_corpus(tmp_path / "corpus", schema, "acme", tenants=["acme", "zephyr"])
    assert [(d.document_id, d.tenant_id) for d in docs] == [("ours", "acme"), ("theirs", "zephyr")]
    assert check_corpus_dir(tmp_path / "corpus", schema, root=tmp_path) == []
    with pytest.raises(InputError, match="tenants the pack does not serve"):
        load_corpus(tmp_path / "corpus", schema, "acme", tenants=["acme"])
