"""The filtered-IDF cache: same rankings and scores as IDF computed by the engine, dropped on a
write, off for a filter whose statistics it cannot reproduce."""

from __future__ import annotations

import math

import pytest
from search_fixtures import load, random_payloads

from hopweave.models.filters import And, Eq, In
from hopweave.search.edge_index import EdgeIndex
from hopweave.search.idf_cache import UNIT_IDF, IdfCache, exact_idf, snap_df
from hopweave.search.index_types import lexical_request
from hopweave.search.profiles import get_profile

QUERIES = ["late fee waiver platinum", "fraud claim refund dispute card", "overdraft courtesy hardship",
           "annual fee statement interest escalation", "gold card payment limit"]
FILTERS = [None, Eq(field="tier", value="Platinum"),
           And(clauses=(In(field="policy_type", values=("LateFeeWaiver", "FeeSchedule")), Eq(field="region", value="US")))]


def test_exact_idf_and_snap_roundtrip():
    assert exact_idf(0, 0) == pytest.approx(UNIT_IDF)
    for n_docs in (1, 7, 500, 80_000):
        for df in {1, n_docs // 3 or 1, n_docs}:
            idf = exact_idf(n_docs, df)
            assert idf == pytest.approx(math.log(1 + (n_docs - df + 0.5) / (df + 0.5)))
            assert snap_df(idf * (1 + 1e-7), n_docs) == df
    assert snap_df(exact_idf(100, 10) + 0.01, 100) is None  # not an idf of this population


def _runs(idx, emb, cache: bool):
    idx.idf_cache_enabled = cache
    out = []
    for flt in FILTERS:
        for q in QUERIES:
            for prof in ("hybrid_convex_v1", "lexical_only"):
                out.append(idx.search("t1", q, get_profile(prof), where=flt, limit=20,
                                      query_vector=emb.embed_one(q), query_space=emb.space))
    return out


def test_cached_idf_gives_the_engines_rankings(tmp_path, schema, hash_embedder):
    idx = EdgeIndex(tmp_path, schema)
    load(idx, random_payloads(400, seed=11), hash_embedder)
    plain = _runs(idx, hash_embedder, cache=False)
    assert idx._idf is None
    cached = _runs(idx, hash_embedder, cache=True)
    assert idx._idf is not None and len(idx._idf._filters) == len(FILTERS)
    assert all(st.usable and st.checked for st in idx._idf._filters.values())
    for a, b in zip(plain, cached):
        assert a.ids() == b.ids()
        for x, y in zip(a.hits, b.hits):
            assert y.score == pytest.approx(x.score, rel=1e-5, abs=1e-6)
            if x.lexical is not None:
                assert y.lexical is not None and y.lexical.score == pytest.approx(x.lexical.score, rel=1e-5)
    # a second pass is served from the cache and is byte-identical to the first cached pass
    again = _runs(idx, hash_embedder, cache=True)
    dump = lambda runs: [r.model_dump_json(exclude={"timings_ms"}) for r in runs]  # noqa: E731
    assert dump(again) == dump(cached)


def test_a_write_drops_the_cache_and_new_statistics_are_used(tmp_path, schema, hash_embedder):
    idx = EdgeIndex(tmp_path, schema)
    load(idx, random_payloads(200, seed=5), hash_embedder)
    prof, q = get_profile("lexical_only"), "platinum waiver"
    idx.search("t1", q, prof)
    assert idx._idf is not None and idx._idf._filters
    more = [dict(p, chunk_id=f"x{p['chunk_id']}", text=p["text"] + " platinum platinum")
            for p in random_payloads(150, seed=6)]
    load(idx, more, hash_embedder)
    assert not idx._idf._filters  # the upsert cleared it
    cached = idx.search("t1", q, prof, limit=30)
    idx.idf_cache_enabled = False
    plain = idx.search("t1", q, prof, limit=30)
    assert cached.ids() == plain.ids()
    assert [h.score for h in cached.hits] == pytest.approx([h.score for h in plain.hits], rel=1e-5)


def test_a_corpus_it_cannot_reproduce_turns_the_cache_off(tmp_path, schema, hash_embedder):
    """With the collection-wide IDF as the 'unit corpus' (not ln 2 per term), the probes do not
    give exact document frequencies: the request goes to the engine unchanged."""
    idx = EdgeIndex(tmp_path, schema)
    info = load(idx, random_payloads(300, seed=2), hash_embedder)
    scoped = idx.scoped_filter("t1", Eq(field="tier", value="Gold"), True)
    req, _ = lexical_request(info, get_profile("lexical_only"), "late fee waiver", idx._compile(scoped), 10)
    assert req is not None
    cache = IdfCache()
    out = cache.rewrite(req, 0, "k", lambda: idx._count_tree(scoped), None, idx._query)
    assert out is req
    assert not cache._filters["k"].usable
