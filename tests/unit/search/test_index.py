"""VectorIndex behaviour on both adapters: tenants, ties, coverage, persistence, congruence."""

from __future__ import annotations

import numpy as np
import pytest
from search_fixtures import HashEmbedder, load, make_index, random_payloads

from hopweave.errors import EmbeddingSpaceError, FilterError, StoreError, TenantError
from hopweave.models.filters import Eq
from hopweave.search.client_index import ClientIndex
from hopweave.search.edge_index import EdgeIndex
from hopweave.search.embedder import EmbeddingSpace
from hopweave.search.index_base import SPACE_FIELD, CollectionInfo, IndexPoint
from hopweave.search.profiles import get_profile

KINDS = ["edge", "client"]
Q = "late fee waiver for a platinum card payment dispute"


def _search(idx, emb, tenant="t1", profile="rrf_k60", **kw):
    return idx.search(tenant, Q, get_profile(profile), query_vector=emb.embed_one(Q), query_space=emb.space, **kw)


@pytest.mark.parametrize("kind", KINDS)
def test_tenant_isolation(kind, tmp_path, schema, hash_embedder):
    idx = make_index(kind, tmp_path, schema, hash_embedder)
    payloads = random_payloads(80, seed=3)
    load(idx, payloads, hash_embedder)
    for tenant in ("t1", "t2"):
        res = _search(idx, hash_embedder, tenant, limit=100)
        assert res.hits and all(h.payload["tenant_id"] == tenant for h in res.hits)
        # another tenant's filter cannot widen the scope
        res2 = _search(idx, hash_embedder, tenant, where=Eq(field="tenant_id", value="t3"))
        assert res2.hits == ()
    assert _search(idx, hash_embedder, "t9").hits == ()
    with pytest.raises(TenantError):
        _search(idx, hash_embedder, "")
    with pytest.raises(TenantError):
        idx.upsert("t1", [IndexPoint("x", {"tenant_id": "t2", "chunk_id": "x"}, idx.info.encoder().encode_document("a"))])
    with pytest.raises(FilterError):
        _search(idx, hash_embedder, where=Eq(field="not_a_field", value=1))
    idx.close()


@pytest.mark.parametrize("kind", KINDS)
def test_ties_break_by_chunk_id(kind, tmp_path, schema, hash_embedder):
    """60 identical chunks: every channel ties, yet the order (and the cut at the cap) is by id."""
    idx = make_index(kind, tmp_path, schema, hash_embedder)
    base = {"tenant_id": "t1", "document_id": "d", "title": "T", "text": "late fee waiver",
            "version": "current", "tier": "Gold"}
    ids = [f"c{n:03d}" for n in np.random.default_rng(1).permutation(60)]
    load(idx, [dict(base, chunk_id=c) for c in ids], hash_embedder)
    for prof in ("rrf_k60", "dense_only", "lexical_only", "convex_a08"):
        a = _search(idx, hash_embedder, profile=prof, limit=60).ids()
        b = _search(idx, hash_embedder, profile=prof, limit=60).ids()
        assert a == b == sorted(ids)[: len(a)]
        assert len(a) == 50  # the candidate cap, cut by chunk id
    idx.close()


@pytest.mark.parametrize("kind", KINDS)
def test_full_coverage_follows_writes_that_drop_vectors(kind, tmp_path, schema, hash_embedder):
    """Every point embedded: the embedded count is the eligible count (the only writer knows it
    without a second count); once vectors are dropped, the counts are made again."""
    idx = make_index(kind, tmp_path, schema, hash_embedder)
    payloads = [p for p in random_payloads(60, seed=7, tenants=("t1", "t2")) if p["version"] == "current"]
    load(idx, payloads, hash_embedder)
    mine = [p for p in payloads if p["tenant_id"] == "t1"]
    c = _search(idx, hash_embedder, limit=100).coverage
    assert (c.eligible_records, c.embedded_records, c.embedding_coverage) == (len(mine), len(mine), "full")
    victim = mine[0]["document_id"]
    idx.invalidate_vectors("t2", Eq(field="document_id", value=victim))  # another tenant's: t1 stays full
    assert _search(idx, hash_embedder, limit=100).coverage == c
    idx.invalidate_vectors("t1", Eq(field="document_id", value=victim))
    c2 = _search(idx, hash_embedder, limit=100).coverage
    dropped = sum(1 for p in mine if p["document_id"] == victim)
    assert c2.eligible_records == len(mine) and c2.embedded_records == len(mine) - dropped > 0
    assert c2.embedding_coverage == "partial"
    idx.close()


@pytest.mark.parametrize("kind", KINDS)
def test_coverage_missing_partial_and_other_space(kind, tmp_path, schema, hash_embedder):
    idx = make_index(kind, tmp_path, schema, hash_embedder)
    payloads = [p for p in random_payloads(60, seed=5, tenants=("t1",)) if p["version"] == "current"]
    load(idx, payloads, hash_embedder, embed_mask=lambda i, p: i % 3 != 0)
    res = _search(idx, hash_embedder, limit=100)
    c = res.coverage
    assert c.eligible_records == len(payloads)
    assert c.embedded_records == sum(1 for i in range(len(payloads)) if i % 3 != 0)
    assert c.embedding_coverage == "partial"
    assert all(h.semantic is None for h in res.hits if h.payload.get(SPACE_FIELD) is None)

    other = HashEmbedder(revision="2")  # same dims, different space
    res2 = idx.search("t1", Q, get_profile("rrf_k60"), query_vector=other.embed_one(Q), query_space=other.space)
    assert res2.coverage.embedding_coverage == "missing" and res2.coverage.embedded_records == 0
    assert "no semantic candidates" in res2.coverage.semantic_skipped_reason
    assert res2.hits and all(h.semantic is None and h.lexical is not None for h in res2.hits)

    wide = EmbeddingSpace(provider="x", model="y", revision="1", dimensions=8)
    res3 = idx.search("t1", Q, get_profile("rrf_k60"), query_vector=np.ones(8), query_space=wide)
    assert res3.candidates["semantic"] == 0 and "dimensions" in res3.coverage.semantic_skipped_reason
    assert res3.hits  # lexical still works

    # invalidating vectors drops them from the semantic channel and from coverage
    idx.invalidate_vectors("t1", Eq(field="document_id", value=payloads[1]["document_id"]))
    res4 = _search(idx, hash_embedder, limit=100)
    assert res4.coverage.embedded_records < c.embedded_records
    idx.close()


def test_upsert_rejects_wrong_dimensions(tmp_path, schema, hash_embedder):
    idx = EdgeIndex(tmp_path, schema)
    info = idx.ensure_collection(CollectionInfo(space=hash_embedder.space))
    p = IndexPoint("a", {"tenant_id": "t1", "chunk_id": "a", SPACE_FIELD: "x"}, info.encoder().encode_document("a"), np.ones(3))
    with pytest.raises(EmbeddingSpaceError):
        idx.upsert("t1", [p])
    with pytest.raises(EmbeddingSpaceError):
        idx.ensure_collection(CollectionInfo(space=HashEmbedder(dims=8).space))
    idx.close()


@pytest.mark.parametrize("kind", KINDS)
def test_persistence_across_reopen(kind, tmp_path, schema, hash_embedder):
    idx = make_index(kind, tmp_path, schema, hash_embedder)
    load(idx, random_payloads(40, seed=9), hash_embedder)
    before = _search(idx, hash_embedder, limit=20)
    idx.close()
    idx2 = make_index(kind, tmp_path, schema, hash_embedder)
    after = _search(idx2, hash_embedder, limit=20)
    assert after.ids() == before.ids()
    assert [h.score for h in after.hits] == pytest.approx([h.score for h in before.hits])
    assert idx2.require_info().space == before.collection_space == hash_embedder.space
    idx2.close()


def test_missing_collection_is_a_clear_error(tmp_path, schema, hash_embedder):
    with pytest.raises(StoreError):
        _search(EdgeIndex(tmp_path, schema), hash_embedder)


@pytest.mark.parametrize("profile", ["rrf_k60", "weighted_rrf_v2", "convex_a08", "dense_only", "lexical_only"])
def test_edge_and_client_agree(tmp_path, schema, hash_embedder, profile):
    """Congruence: same ingest, same queries -> same ids, order and (float32) scores."""
    payloads = random_payloads(120, seed=11)
    edge, client = EdgeIndex(tmp_path / "e", schema), ClientIndex(schema, location=":memory:")
    for idx in (edge, client):
        load(idx, payloads, hash_embedder)
    for q, where in [
        (Q, None),
        ("fraud claim refund", Eq(field="region", value="US")),
        ("overdraft interest statement", {"op": "in", "field": "tier", "values": ["Gold", "Silver"]}),
        ("zzzz", None),
    ]:
        kw = dict(where=where, limit=30, query_vector=hash_embedder.embed_one(q), query_space=hash_embedder.space)
        a = edge.search("t1", q, get_profile(profile), **kw)
        b = client.search("t1", q, get_profile(profile), **kw)
        assert a.ids() == b.ids()
        assert [h.score for h in a.hits] == pytest.approx([h.score for h in b.hits], rel=1e-4, abs=1e-6)
        for ha, hb in zip(a.hits, b.hits):
            assert (ha.lexical and ha.lexical.rank) == (hb.lexical and hb.lexical.rank)
            assert (ha.semantic and ha.semantic.rank) == (hb.semantic and hb.semantic.rank)
        assert a.coverage == b.coverage
    edge.close()
    client.close()


def test_post_check_refuses_another_tenants_point(tmp_path, schema, hash_embedder):
    """The base class re-checks what an adapter returns: a leaking backend raises, never returns."""

    class LeakyIndex(EdgeIndex):
        def _query(self, requests):
            out = super()._query(requests)
            if out and out[0]:
                out[0][0].payload = dict(out[0][0].payload, tenant_id="t2")
            return out

    idx = LeakyIndex(tmp_path, schema)
    load(idx, random_payloads(30, seed=2, tenants=("t1",)), hash_embedder)
    with pytest.raises(TenantError):
        _search(idx, hash_embedder)
    idx.close()


def test_post_check_drops_what_python_rejects_with_a_cached_matcher(tmp_path, schema, hash_embedder):
    """A payload the engine returned but the filter rejects in Python is dropped and the rest
    re-fused; the compiled matcher is kept per tree and answers the same on the next search."""
    from hopweave.models.filters import And, IsEmpty, Or, Range, matches

    class Disagreeing(EdgeIndex):
        victim: str | None = None

        def _retrieve(self, point_ids, with_vector=True):
            out = super()._retrieve(point_ids, with_vector)
            return [(dict(p, tier="Bronze") if p.get("chunk_id") == self.victim else p, v) for p, v in out]

    idx = Disagreeing(tmp_path, schema)
    load(idx, random_payloads(60, seed=4, tenants=("t1",)), hash_embedder)
    where = And(clauses=(Eq(field="tier", value="Gold"),
                         Or(clauses=(IsEmpty(field="valid_from"), Range(field="valid_from", lte="2030-01-01")))))
    clean = _search(idx, hash_embedder, where=where, limit=5)
    assert clean.hits and clean.candidates["dropped_by_post_check"] == 0
    idx.victim = clean.hits[0].chunk_id
    idx._hits = None  # the engine's answers change here without a write (which would empty it)
    for _ in range(2):  # the second search reuses the cached matcher
        res = _search(idx, hash_embedder, where=where, limit=5)
        assert res.candidates["dropped_by_post_check"] == 1
        assert idx.victim not in res.ids() and res.ids()[:4] == clean.ids()[1:5]
    assert len(idx._matcher_cache) == 1
    (match,) = idx._matcher_cache.values()
    scoped = idx.scoped_filter("t1", where, True)
    for p in random_payloads(60, seed=4, tenants=("t1",)):
        assert match(p) == matches(scoped, p)
    idx.close()
