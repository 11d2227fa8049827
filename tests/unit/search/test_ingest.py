"""Ingest: idempotence, revisions, invalidated vectors, malformed records (real embedder)."""

from __future__ import annotations

import json

import pytest

from hopweave.errors import InputError
from hopweave.models.documents import Document
from hopweave.search.edge_index import EdgeIndex
from hopweave.search.index_base import SPACE_FIELD
from hopweave.search.ingest import Ingestor, load_documents, read_records
from hopweave.search.profiles import get_profile

POLICY_V1 = """# Late fee waiver policy

## 1 Scope
This policy governs late fee waivers on Platinum Card accounts.

## 3.2 Annual courtesy waiver
Platinum customers in good standing may receive one fee waiver per calendar year, up to $50.
"""
POLICY_V2 = POLICY_V1.replace("up to $50", "up to $75").replace("one fee waiver", "two fee waivers")


def _doc(text=POLICY_V1, revision="v1", version="current", **meta):
    return Document(document_id="waiver-policy", tenant_id="t1", text=text, title="Waiver policy",
                    revision=revision, version=version, metadata={"tier": "Platinum", "region": "US", **meta})


def _search(idx, emb, q="fee waiver per calendar year", **kw):
    return idx.search("t1", q, get_profile("rrf_k60"), query_vector=emb.embed_query(q), query_space=emb.space, **kw)


def test_idempotent_reingest_and_revision_supersedes(tmp_path, schema, embedder):
    idx = EdgeIndex(tmp_path, schema)
    ing = Ingestor(idx, embedder)
    r1 = ing.ingest([_doc()])
    assert (r1.new, r1.chunks_written, r1.chunks_embedded) == (1, 2, 2)
    before = idx.fetch("t1")
    r2 = ing.ingest([_doc()])
    assert (r2.unchanged, r2.chunks_written, r2.chunks_embedded) == (1, 0, 0)
    assert idx.fetch("t1") == before

    r3 = ing.ingest([_doc(POLICY_V2, revision="v2")])
    assert r3.updated == 1 and r3.superseded_chunks == 2
    rows = idx.fetch("t1")
    assert sorted((p["revision"], p["version"]) for p in rows) == [
        ("v1", "superseded"), ("v1", "superseded"), ("v2", "current"), ("v2", "current")]
    res = _search(idx, embedder, limit=10)
    assert {h.revision for h in res.hits} == {"v2"}  # the always-on version=current filter
    assert res.coverage.eligible_records == 2 and res.coverage.embedding_coverage == "full"
    audit = _search(idx, embedder, limit=10, include_superseded=True)
    assert {h.revision for h in audit.hits} == {"v1", "v2"}
    # re-ingesting the old revision as history changes nothing
    r4 = ing.ingest([_doc(revision="v1", version="superseded"), _doc(POLICY_V2, revision="v2")])
    assert (r4.unchanged, r4.chunks_written) == (2, 0)
    idx.close()


def test_changed_chunk_text_invalidates_its_vector(tmp_path, schema, embedder):
    idx = EdgeIndex(tmp_path, schema)
    Ingestor(idx, embedder).ingest([_doc()])
    # same revision, one section edited, ingested without an embedder: its old vector must go
    rep = Ingestor(idx, None).ingest([_doc(POLICY_V2)])
    assert rep.vectors_reused == 1 and rep.chunks_without_vector == 1
    rows = {p["section"]: p for p in idx.fetch("t1")}
    assert SPACE_FIELD not in rows["3.2"] and rows["1"][SPACE_FIELD] == embedder.space.key
    res = _search(idx, embedder)
    assert res.coverage.embedding_coverage == "partial" and res.coverage.embedded_records == 1
    hit = next(h for h in res.hits if h.section == "3.2")
    assert hit.semantic is None and hit.lexical is not None
    # re-embedding repairs it without rewriting the unchanged chunk's vector
    rep2 = Ingestor(idx, embedder).ingest([_doc(POLICY_V2)])
    assert rep2.unchanged == 1 and rep2.chunks_embedded == 1
    assert _search(idx, embedder).coverage.embedding_coverage == "full"
    idx.close()


def _write_jsonl(path, lines):
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


GOOD = {"document_id": "a", "tenant_id": "t1", "text": "Late fees are $39.", "tier": "Gold"}
BAD_LINES = [
    GOOD,
    "{not json",
    {"document_id": "b", "tenant_id": "t1", "text": "  "},
    {"document_id": "c", "tenant_id": "t1", "text": "ok", "valid_from": "yesterday"},
    {"document_id": "d", "tenant_id": "t1", "text": "ok", "tier": 3},
    {"tenant_id": "t1", "text": "no id"},
]


def test_malformed_reject_writes_nothing(tmp_path, schema, embedder):
    path = _write_jsonl(tmp_path / "in.jsonl", BAD_LINES)
    with pytest.raises(InputError) as err:
        load_documents(read_records(path), schema, None, on_error="reject")
    msg = str(err.value)
    for line in (2, 3, 4, 5, 6):
        assert f"in.jsonl:{line}" in msg
    assert "valid_from" in msg and "tier" in msg and "nothing was written" in msg
    assert not (tmp_path / "store").exists()


def test_malformed_skip_ingests_the_rest(tmp_path, schema, embedder):
    path = _write_jsonl(tmp_path / "in.jsonl", BAD_LINES)
    docs, rep = load_documents(read_records(path), schema, None, on_error="skip")
    assert [d.document_id for d in docs] == ["a"]
    assert [p.line for p in rep.skipped] == [2, 3, 4, 5, 6]
    idx = EdgeIndex(tmp_path / "store", schema)
    rep = Ingestor(idx, embedder).ingest(docs, report=rep)
    assert rep.chunks_written == 1 and len(rep.skipped) == 5
    assert idx.count("t1") == 1
    idx.close()


def test_two_current_revisions_rejected(tmp_path, schema, embedder):
    idx = EdgeIndex(tmp_path, schema)
    with pytest.raises(InputError, match="two current revisions"):
        Ingestor(idx, embedder).ingest([_doc(), _doc(POLICY_V2, revision="v2")])
    assert not (tmp_path / "vectors").exists()


def test_markdown_front_matter_folder(tmp_path, schema):
    (tmp_path / "p.md").write_text("---\ndocument_id: p\nrevision: v3\ntier: [Gold, Silver]\n"
                                   "valid_from: 2025-01-01\nsummary: short\n---\n# P\n\nBody text.\n")
    docs, rep = load_documents(read_records(tmp_path), schema, "t1")
    d = docs[0]
    assert (d.document_id, d.revision, d.tenant_id) == ("p", "v3", "t1")
    assert d.metadata["tier"] == ["Gold", "Silver"] and d.metadata["valid_from"] == "2025-01-01"
    assert rep.extra_fields == ["summary"]
