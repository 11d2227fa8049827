"""Search-stage cost work (issue 13/17): the embedded adapter's candidate payload cache, one
engine batch per search, cached compiled filters. Each must leave results untouched."""

from __future__ import annotations

import pytest
from search_fixtures import load, make_index, random_payloads

from hopweave.models.ranking import FeatureWeights, RankingProfile
from hopweave.search.edge_index import CandidatePayloads, EdgeIndex
from hopweave.search.index_base import VectorIndex
from hopweave.search.profiles import get_profile

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


def test_payload_cache_past_its_size_drops_the_oldest_half(tmp_path, schema, hash_embedder, monkeypatch):
    import uuid

    from hopweave.search.index_types import point_id

    idx = make_index("edge", tmp_path, schema, hash_embedder)
    load(idx, _payloads(), hash_embedder)
    assert isinstance(idx, EdgeIndex)
    monkeypatch.setattr(CandidatePayloads, "MAX_POINTS", 6)
    cache = CandidatePayloads()
    ids = [uuid.UUID(point_id(f"c{i:04d}")).int for i in range(8)]
    fields = ("chunk_id", "tenant_id")
    for pid in ids[:6]:
        cache.get(idx, idx._generation, [pid], fields)
    assert list(cache._points) == ids[:6]  # full
    cache.get(idx, idx._generation, ids[6:8], fields)  # two more: over by 2, down to half
    assert list(cache._points) == ids[5:8]  # the newest kept, not everything dropped
    got = cache.get(idx, idx._generation, ids, fields)
    assert [got[p]["chunk_id"] for p in ids] == [f"c{i:04d}" for i in range(8)]  # answers never change
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


@pytest.mark.parametrize("name", ["hybrid_convex_v1", "convex_a08_authority_v2", "lexical_only", "dense_only",
                                  "rrf_k60"])
def test_raw_fusion_builds_the_same_candidates(name):
    """fuse_raw + fused_of (the search's path, models built for kept hits only) equals fuse(),
    with and without features."""
    from hopweave.models.ranking import FeatureWeights
    from hopweave.search.features import with_features
    from hopweave.search.fusion import fuse, fuse_raw, fused_of
    from hopweave.search.lexical import Tokenizer

    try:
        profile = get_profile(name)
    except Exception:
        pytest.skip(f"no profile {name}")
    lex = [(f"c{i:03d}", float(50 - i) / 7) for i in range(0, 60, 2)] + [("t1", 1.0), ("t2", 1.0)]
    sem = [(f"c{i:03d}", 1.0 - i / 100) for i in range(0, 60, 3)]
    assert [fused_of(r) for r in fuse_raw(profile, lex, sem)] == fuse(profile, lex, sem)
    weights = FeatureWeights(doc_type={"policy": 0.3}, recency=0.1, section_heading=0.2, section_number=0.1)
    payloads = {cid: {"doc_type": "policy" if int(cid[1:] or 0) % 5 == 0 else "faq", "valid_from": "2025-01-01",
                      "heading": "late fee waiver", "section": "3.2"} for cid, _ in [*lex, *sem] if cid[1:].isdigit()}
    tok = Tokenizer()
    a = with_features(weights, fuse(profile, lex, sem), payloads, "late fee section 3.2", tok, None, 10)
    b = with_features(weights, fuse_raw(profile, lex, sem), payloads, "late fee section 3.2", tok, None, 10)
    assert a == b and len(a) == 10


def _tied_payloads() -> list[dict]:
    """Templated text: many chunks share one text, so BM25 scores tie at every cut."""
    out = _payloads()
    templates = [out[i]["text"] for i in range(4)]
    for i, p in enumerate(out):
        p["text"] = templates[i % 4] if i % 3 else p["text"]
    return out


@pytest.mark.parametrize("headroom", [1, 2])
def test_a_shallower_bm25_fetch_cuts_ties_like_the_deep_one(headroom, tmp_path, schema, hash_embedder):
    """A fetch of ``headroom`` x the cap + 1 gives each request the same list, cut by chunk id
    at the tie, as the deep fetch (the tie reaching the fetch's end is refetched)."""
    from dataclasses import replace

    from hopweave.search.index_base import LEXICAL_TIE_HEADROOM
    from hopweave.search.index_types import lexical_request

    idx = make_index("edge", tmp_path, schema, hash_embedder)
    load(idx, _tied_payloads(), hash_embedder)
    scoped = idx.scoped_filter("t1", None, True)
    req, _ = lexical_request(idx.require_info(), AUTH, Q, idx._compile(scoped), 5)
    assert req is not None
    reqs = [replace(req, limit=n) for n in (3, 5, 7, 11)]
    calls: list[int] = []
    real = idx._query
    idx._query = lambda rs: calls.append(len(rs)) or real(rs)  # type: ignore[method-assign]
    deep, _ = idx._query_exact(reqs, [LEXICAL_TIE_HEADROOM] * len(reqs))
    n_deep = len(calls)
    shallow, _ = idx._query_exact(reqs, [headroom] * len(reqs))
    assert [[(c.chunk_id, c.score) for c in lst] for lst in shallow] == \
        [[(c.chunk_id, c.score) for c in lst] for lst in deep]
    if headroom == 1:  # the shallow fetch met a tie at its end and refetched
        assert len(calls) - n_deep > 1
    assert all(len(lst) == r.limit for lst, r in zip(deep, reqs))
    idx.close()


def test_search_results_do_not_depend_on_the_cut_headroom(tmp_path, schema, hash_embedder, monkeypatch):
    """A profile without fill_channels (feature profile with authority prefetch) ranks the same
    with the cut headroom as with the deep headroom, on tied BM25 scores."""
    import hopweave.search.index_base as ib

    nofill = AUTH.model_copy(update={"fill_channels": False})
    idx = make_index("edge", tmp_path, schema, hash_embedder)
    load(idx, _tied_payloads(), hash_embedder)
    cut = _search(idx, nofill, hash_embedder)
    monkeypatch.setattr(ib, "LEXICAL_CUT_HEADROOM", ib.LEXICAL_TIE_HEADROOM)
    deep = _search(idx, nofill, hash_embedder)
    monkeypatch.setattr(ib, "LEXICAL_CUT_HEADROOM", 1)
    tight = _search(idx, nofill, hash_embedder)
    assert _hits(cut) == _hits(deep) == _hits(tight)
    assert cut.candidates == deep.candidates == tight.candidates
    idx.close()


def test_features_rank_by_the_scores_they_explain():
    """with_features scores every candidate from the numbers alone and explains the kept ones:
    each kept score is the base plus score()'s total, its explanation score()'s, and the order
    is the one of those totals."""
    from hopweave.search.features import context, score, with_features
    from hopweave.search.fusion import fuse
    from hopweave.search.lexical import Tokenizer

    w = FeatureWeights(doc_type={"policy": 0.3, "faq": -0.05}, doc_type_default=0.01, recency=0.07,
                       recency_half_life_days=200, section_heading=0.11, section_number=0.13, scope=0.05)
    lex = [(f"c{i:03d}", float(60 - i) / 9) for i in range(40)]
    sem = [(f"c{i:03d}", 1.0 - i / 70) for i in range(0, 60, 2)]
    pays = {f"c{i:03d}": {"doc_type": ["policy", "faq", None, "note"][i % 4],
                          "valid_from": [f"202{i % 7}-0{1 + i % 9}-1{i % 10}", "bad", None][i % 3] or "",
                          "heading": ["Late fee waiver", "", "Courtesy credit"][i % 3],
                          "section": f"{1 + i % 4}.{1 + i % 3}", "product": ["Gold", "Silver"][i % 2]}
            for i in range(60)}
    pays.pop("c007")  # a candidate without a payload: every feature 0
    profile = get_profile("hybrid_convex_v1")
    q, scope, tok = "late fee waiver section 2.2", {"product": ["Gold", "Silver"]}, Tokenizer()
    fused = fuse(profile, lex, sem)
    out = with_features(w, fused, pays, q, tok, scope, 15)
    ctx = context(q, tok, scope, [pays.get(f.chunk_id, {}) for f in fused])
    want = sorted(((f.score + score(w, ctx, pays.get(f.chunk_id, {}), tok)[0], f.chunk_id,
                    score(w, ctx, pays.get(f.chunk_id, {}), tok)[1]) for f in fused),
                  key=lambda t: (-t[0], t[1]))[:15]
    assert [(f.score.hex(), f.chunk_id, f.features) for f in out] == [(s.hex(), c, e) for s, c, e in want]
    assert len(out) == 15 and all(len(f.features) == 5 for f in out)


def test_a_full_scan_dense_fetch_is_deeper_and_ranks_the_same(tmp_path, schema, hash_embedder, monkeypatch):
    """Below the engine's full-scan bound the dense request is marked ``full_scan`` and fetched
    deeper at once: identical chunks (identical vectors, cosines tied at the cut) need no
    refetch, and the hits, scores and counts are those of the cap + 1 fetch with refetches."""
    from hopweave.search.index_types import DENSE

    pays = _tied_payloads()
    for p in [p for p in pays if p["tenant_id"] == "t1"][:10]:  # ten chunks, one text: one vector
        p["title"], p["text"] = "Waiver policy", Q
    idx = make_index("edge", tmp_path, schema, hash_embedder)
    load(idx, pays, hash_embedder)
    assert isinstance(idx, EdgeIndex)
    assert idx._plain_search_bound(hash_embedder.space.dimensions) > 1000  # the shard's threshold, in points
    profile = get_profile("hybrid_convex_v1").model_copy(update={"candidates_per_channel": 5})
    dense_fetches: list[tuple[int, bool]] = []
    real = EdgeIndex._query

    def counted(self, reqs):  # type: ignore[no-untyped-def]
        dense_fetches.extend((r.limit, r.full_scan) for r in reqs if r.channel == DENSE)
        return real(self, reqs)

    monkeypatch.setattr(EdgeIndex, "_query", counted)
    deep = _search(idx, profile, hash_embedder)
    deep_fetches, dense_fetches[:] = list(dense_fetches), []
    monkeypatch.setattr(EdgeIndex, "_plain_search_bound", lambda self, d: 0)
    plain = _search(idx, profile, hash_embedder)
    assert _hits(deep) == _hits(plain) and deep.candidates == plain.candidates and deep.coverage == plain.coverage
    assert deep_fetches == [(21, True)]  # 4 x the cap + 1, once
    assert dense_fetches[0] == (6, False) and len(dense_fetches) > 1  # the cap + 1 met the tie and refetched
    idx.close()


def test_returned_hits_are_read_and_checked_once_per_write(tmp_path, schema, hash_embedder, monkeypatch):
    """A hit returned again under the same filter is neither read from the engine nor post-checked
    again until a write; the results are the same, and a write reads and checks afresh."""
    idx = make_index("edge", tmp_path, schema, hash_embedder)
    load(idx, _payloads(), hash_embedder)
    assert isinstance(idx, EdgeIndex)
    where = {"op": "eq", "field": "tier", "value": "Gold"}
    first = _search(idx, AUTH, hash_embedder, where=where)
    reads: list[int] = []
    checked: list[int] = []
    real_retrieve, real_check = EdgeIndex._retrieve, VectorIndex._post_check

    def retrieve(self, ids, with_vector=True):  # type: ignore[no-untyped-def]
        if not with_vector:  # payload reads (the vector reads are fill_channels')
            reads.append(len(ids))
        return real_retrieve(self, ids, with_vector)

    monkeypatch.setattr(EdgeIndex, "_retrieve", retrieve)
    monkeypatch.setattr(VectorIndex, "_post_check", lambda self, t, s, ps, k=None: checked.append(len(list(ps)))
                        or real_check(self, t, s, ps, k))
    again = _search(idx, AUTH, hash_embedder, where=where)
    assert _hits(again) == _hits(first) and again.candidates == first.candidates
    assert reads == [] and checked == [0]
    other = _search(idx, AUTH, hash_embedder, where={"op": "eq", "field": "tier", "value": "Silver"})
    assert checked[-1] == len(other.hits)  # another filter: every hit checked against it
    idx.set_payload("t1", {"doc_type": "template"}, {"op": "eq", "field": "chunk_id", "value": first.hits[0].chunk_id})
    reads.clear()
    after = _search(idx, AUTH, hash_embedder, where=where)
    assert reads and checked[-1] == len(after.hits)
    assert all(h.payload["doc_type"] == "template" for h in after.hits if h.chunk_id == first.hits[0].chunk_id)
    idx.close()
