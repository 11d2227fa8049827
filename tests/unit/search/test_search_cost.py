"""Search-stage cost work (issue 13/17): the embedded adapter's candidate payload cache, one
engine batch per search, cached compiled filters. Each must leave results untouched."""

from __future__ import annotations

import pytest

from hopweave.models.ranking import FeatureWeights, RankingProfile
from hopweave.search.edge_index import CandidatePayloads, EdgeIndex
from hopweave.search.index_base import VectorIndex
from hopweave.search.profiles import get_profile

from search_fixtures import load, make_index, random_payloads

Q = "late fee waiver for a platinum card payment dispute"
AUTH = RankingProfile(name="t_auth_cost", version=1, method="convex", alpha=0.5, normalisation="minmax",
                      candidates_per_channel=5, fill_channels=True,
                      features=FeatureWeights(doc_type={"policy": 0.3}, recency=0.1, section_heading=0.1,
                                              authority_types=("policy",), authority_candidates=4))


def _payloads() -> list[dict]:
    out = random_payloads(160, seed=5)
    for i, p in enumerate(out):
        p["doc_type"] = "policy" if i % 9 == 0 else "faq"
    return out


def _hits(res) -> list[tuple]:
    return [(h.chunk_id, h.score.hex(), h.lexical, h.semantic, h.features, h.payload.get("doc_type"))
            for h in res.hits]


def _search(idx, profile, hash_embedder, **kw):
    return idx.search("t1", Q, profile, limit=12, query_vector=hash_embedder.embed_one(Q),
                      query_space=hash_embedder.space, **kw)


@pytest.mark.parametrize("profile", [AUTH, get_profile("hybrid_convex_v1"), get_profile(None)],
                         ids=lambda p: p.name)
def test_cached_payloads_give_the_same_results_as_payloads_read_in_the_query(profile, tmp_path, schema,
                                                                           hash_embedder):
    """Cold cache, warm cache and the client adapter (payloads read by the engine in the query)
    return the same hits, scores and explanations."""
    edge, client = make_index("edge", tmp_path, schema, hash_embedder), make_index("client", tmp_path, schema,
                                                                                   hash_embedder)
    for idx in (edge, client):
        load(idx, _payloads(), hash_embedder)
    assert isinstance(edge, EdgeIndex)
    cold = _search(edge, profile, hash_embedder)
    assert edge._payloads._points  # the candidates' payloads are kept
    warm = _search(edge, profile, hash_embedder)
    other = _search(client, profile, hash_embedder)
    assert _hits(cold) == _hits(warm)
    assert [(h.chunk_id, h.features) for h in cold.hits] == [(h.chunk_id, h.features) for h in other.hits]
    assert cold.candidates == warm.candidates == other.candidates
    edge.close()
    client.close()


def test_a_write_empties_the_payload_cache(tmp_path, schema, hash_embedder):
    """A payload changed through the index is what the next search's features read."""
    idx = make_index("edge", tmp_path, schema, hash_embedder)
    load(idx, _payloads(), hash_embedder)
    before = _search(idx, AUTH, hash_embedder)
    top = before.hits[0]
    idx.set_payload("t1", {"doc_type": "template"}, {"op": "eq", "field": "chunk_id", "value": top.chunk_id})
    after = _search(idx, AUTH, hash_embedder)
    seen = {h.chunk_id: h for h in after.hits}
    if top.chunk_id in seen:
        assert seen[top.chunk_id].payload["doc_type"] == "template"
        assert all(f.detail == "template" for f in seen[top.chunk_id].features if f.name == "doc_type")
    fresh = make_index("edge", tmp_path / "again", schema, hash_embedder)
    load(fresh, _payloads(), hash_embedder)
    fresh.set_payload("t1", {"doc_type": "template"}, {"op": "eq", "field": "chunk_id", "value": top.chunk_id})
    # the same store state from scratch ranks the same (scores equal within float rounding: the
    # filtered-IDF cache of a written index is re-derived, see test_idf_cache.py)
    expect = _search(fresh, AUTH, hash_embedder)
    assert [(h.chunk_id, h.payload.get("doc_type"), [f.detail for f in h.features]) for h in expect.hits] == \
        [(h.chunk_id, h.payload.get("doc_type"), [f.detail for f in h.features]) for h in after.hits]
    assert [h.score for h in expect.hits] == pytest.approx([h.score for h in after.hits], rel=1e-6)
    idx.close()
    fresh.close()


def test_payload_cache_reads_missing_fields_and_unknown_points(tmp_path, schema, hash_embedder):
    idx = make_index("edge", tmp_path, schema, hash_embedder)
    load(idx, _payloads(), hash_embedder)
    assert isinstance(idx, EdgeIndex)
    from hopweave.search.index_types import point_id

    cache = CandidatePayloads()
    import uuid

    ids = [uuid.UUID(point_id(c)).int for c in ("c0000", "c0001", "no-such-chunk")]
    got = cache.get(idx, idx._generation, ids, ("chunk_id", "tenant_id"))
    assert set(got) == set(ids[:2]) and set(got[ids[0]]) == {"chunk_id", "tenant_id"}
    calls = []
    real = idx._retrieve_fields
    idx._retrieve_fields = lambda p, f: calls.append((list(p), f)) or real(p, f)  # type: ignore[method-assign]
    assert cache.get(idx, idx._generation, ids[:2], ("tenant_id", "chunk_id"))[ids[1]]["chunk_id"] == "c0001"
    assert calls == []  # both kept
    assert set(cache.get(idx, idx._generation, ids, ("chunk_id", "tenant_id"))) == set(ids[:2])
    assert calls == [([ids[2]], ("chunk_id", "tenant_id"))]  # only the unknown point is read again
    wider = cache.get(idx, idx._generation, ids[:1], ("chunk_id", "tenant_id", "doc_type"))
    assert wider[ids[0]]["doc_type"] == "policy" and calls[-1][0] == [ids[0]]
    assert cache.get(idx, idx._generation + 1, ids[:1], ("chunk_id",)) and calls[-1][0] == [ids[0]]  # new generation
    idx.close()


def test_one_engine_batch_per_search(tmp_path, schema, hash_embedder, monkeypatch):
    """Both channels and the authority prefetches go to the engine together (after the IDF
    cache's first-use probes)."""
    idx = make_index("edge", tmp_path, schema, hash_embedder)
    load(idx, _payloads(), hash_embedder)
    _search(idx, AUTH, hash_embedder)  # IDF cache warm-up for this filter and these terms
    batches: list[int] = []
    real = EdgeIndex._query

    def counted(self, reqs):  # type: ignore[no-untyped-def]
        batches.append(len(reqs))
        return real(self, reqs)

    monkeypatch.setattr(EdgeIndex, "_query", counted)
    _search(idx, AUTH, hash_embedder)
    assert batches == [4]
    idx.close()


def test_compiled_filters_are_kept_per_tree(tmp_path, schema, hash_embedder, monkeypatch):
    idx = make_index("edge", tmp_path, schema, hash_embedder)
    load(idx, _payloads(), hash_embedder)
    first = _hits(_search(idx, AUTH, hash_embedder, where={"op": "eq", "field": "tier", "value": "Gold"}))
    compiled: list[int] = []
    real = EdgeIndex._compile
    monkeypatch.setattr(EdgeIndex, "_compile", lambda self, t: compiled.append(1) or real(self, t))
    again = _hits(_search(idx, AUTH, hash_embedder, where={"op": "eq", "field": "tier", "value": "Gold"}))
    assert again == first and compiled == []
    other = _search(idx, AUTH, hash_embedder, where={"op": "eq", "field": "tier", "value": "Silver"})
    assert compiled and all(h.payload["tier"] == "Silver" or "Silver" in h.payload["tier"] for h in other.hits)
    assert isinstance(idx, VectorIndex)
    idx.close()
