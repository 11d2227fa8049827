"""Ranking features (doc type, recency, scope, section heading / number), filled channels and
z-score fusion: values, explanations, determinism, published fingerprints untouched."""

from __future__ import annotations

import pytest
from search_fixtures import load, make_index, random_payloads

from hopweave.models.ranking import FeatureWeights, RankingProfile
from hopweave.search.features import FEATURES, context, query_sections, score
from hopweave.search.fusion import fuse
from hopweave.search.lexical import Tokenizer
from hopweave.search.profiles import get_profile

KINDS = ["edge", "client"]
Q = "late fee waiver for a platinum card payment dispute"
W = FeatureWeights(doc_type={"policy": 0.2, "faq": -0.1}, doc_type_default=0.05, recency=0.1,
                   recency_half_life_days=100, section_heading=0.3, section_number=0.4, scope=0.2)


def _profile(**kw) -> RankingProfile:
    base = dict(name="t_features", version=1, method="convex", alpha=0.5, normalisation="minmax")
    return RankingProfile(**{**base, **kw})


def test_feature_values_and_contributions():
    tok = Tokenizer()
    pays = [
        {"doc_type": "policy", "valid_from": "2026-01-01", "section": "3.2", "heading": "Courtesy waiver",
         "policy_type": "LateFeeWaiver"},
        {"doc_type": "faq", "valid_from": "2025-09-23", "section": "1", "policy_type": "FeeSchedule"},
        {"valid_from": "bad", "policy_type": "Other"},
    ]
    ctx = context("courtesy waiver per section 3.2", tok, {"policy_type": ["LateFeeWaiver", "FeeSchedule"]}, pays)
    assert ctx.query_sections == {"3.2"}
    total, s0 = score(W, ctx, pays[0], tok)
    got = {f.name: f for f in s0}
    assert [f.name for f in s0] == list(FEATURES)
    assert got["doc_type"].contribution == pytest.approx(0.2)
    assert got["recency"].value == 1.0 and got["section_number"].value == 1.0 and got["scope"].value == 1.0
    # query terms: courtesi, waiver, per, section, 3.2; the heading holds two of them
    assert got["section_heading"].value == pytest.approx(2 / 5)
    assert total == pytest.approx(sum(f.contribution for f in s0))
    _, s1 = score(W, ctx, pays[1], tok)
    g1 = {f.name: f for f in s1}
    assert g1["doc_type"].contribution == pytest.approx(-0.1)
    assert g1["recency"].value == pytest.approx(0.5)  # 100 days older than the newest
    assert g1["scope"].value == pytest.approx(0.5) and g1["section_number"].value == 0.0
    _, s2 = score(W, ctx, pays[2], tok)
    g2 = {f.name: f for f in s2}
    assert g2["doc_type"].contribution == pytest.approx(0.05) and g2["doc_type"].detail == "undeclared"
    assert g2["recency"].value == 0.0 and g2["scope"].value == 0.0


def test_query_sections():
    assert query_sections("see section 3.2 and 4.1.2, not $3.20 or 2026") == {"3.2", "4.1.2"}
    assert query_sections("per § 4.1") == {"4.1"}


def test_zscore_fusion_orders_like_its_definition():
    p = _profile(normalisation="zscore")
    out = fuse(p, [("a", 3.0), ("b", 1.0), ("c", 2.0)], [("a", 0.1), ("c", 0.9)])
    assert [f.chunk_id for f in out] == ["c", "a", "b"]
    assert out[-1].score == pytest.approx(0.0)  # lowest lexical, no semantic: 0


def test_published_fingerprints_ignore_later_fields():
    p = get_profile("hybrid_convex_v1")
    same = RankingProfile(**p.model_dump())
    assert same.fingerprint() == p.fingerprint()
    assert RankingProfile(**{**p.model_dump(), "fill_channels": True}).fingerprint() != p.fingerprint()


@pytest.mark.parametrize("kind", KINDS)
def test_features_explain_every_hit(kind, tmp_path, schema, hash_embedder):
    idx = make_index(kind, tmp_path, schema, hash_embedder)
    payloads = random_payloads(120, seed=5)
    for i, p in enumerate(payloads):
        p["doc_type"] = ("policy", "faq", "note")[i % 3]
    load(idx, payloads, hash_embedder)
    plain = _profile()
    feat = _profile(name="t_feat2", features=W)
    vec = hash_embedder.embed_one(Q)
    a = idx.search("t1", Q, plain, limit=20, query_vector=vec, query_space=hash_embedder.space)
    b = idx.search("t1", Q, feat, limit=20, query_vector=vec, query_space=hash_embedder.space,
                   scope={"policy_type": ["LateFeeWaiver"]})
    base = {h.chunk_id: h.score for h in
            idx.search("t1", Q, plain, limit=200, query_vector=vec, query_space=hash_embedder.space).hits}
    assert all(h.features == () for h in a.hits)
    for h in b.hits:
        assert {f.name for f in h.features} == set(FEATURES)
        assert h.score == pytest.approx(base[h.chunk_id] + sum(f.contribution for f in h.features))
        assert {f.name: f.detail for f in h.features}["doc_type"] == h.payload["doc_type"]
    assert [h.score for h in b.hits] == sorted((h.score for h in b.hits), reverse=True)
    policy_share = sum(h.payload["doc_type"] == "policy" for h in b.hits)
    assert policy_share > sum(h.payload["doc_type"] == "policy" for h in a.hits)
    again = idx.search("t1", Q, feat, limit=20, query_vector=vec, query_space=hash_embedder.space,
                       scope={"policy_type": ["LateFeeWaiver"]})
    assert again.hits == b.hits
    idx.close()


@pytest.mark.parametrize("kind", KINDS)
def test_fill_channels_scores_both_channels_exactly(kind, tmp_path, schema, hash_embedder):
    idx = make_index(kind, tmp_path, schema, hash_embedder)
    load(idx, random_payloads(200, seed=7), hash_embedder)
    vec = hash_embedder.embed_one(Q)
    kw = dict(limit=200, query_vector=vec, query_space=hash_embedder.space)
    filled = idx.search("t1", Q, _profile(candidates_per_channel=5, fill_channels=True), **kw)
    wide = RankingProfile(**{**get_profile("lexical_only").model_dump(), "candidates_per_channel": 500})
    lex_hits = idx.search("t1", Q, wide, **kw).hits
    lex = {h.chunk_id: h.score for h in lex_hits}
    depth = {h.chunk_id for h in lex_hits[: 5 * 4 + 1]}  # the lexical channel's deeper fetch
    sem = {h.chunk_id: h.score for h in idx.search("t1", Q, get_profile("dense_only"), **kw).hits}
    assert 5 < len(filled.hits) <= 10
    for h in filled.hits:  # both channels score every candidate
        assert h.semantic is not None and h.semantic.score == pytest.approx(sem[h.chunk_id], abs=1e-5)
        assert h.lexical is not None
        if h.chunk_id in depth:
            assert h.lexical.score == pytest.approx(lex[h.chunk_id], rel=1e-5)
        else:  # below the fetched depth BM25 counts as 0
            assert h.lexical.score == 0.0
    idx.close()


@pytest.mark.parametrize("kind", KINDS)
def test_authority_prefetch_brings_crowded_out_policies(kind, tmp_path, schema, hash_embedder):
    """Restatements fill both channels' top 3; the prefetch adds the best policy points."""
    idx = make_index(kind, tmp_path, schema, hash_embedder)
    payloads = random_payloads(150, seed=11)
    for i, p in enumerate(payloads):
        p["doc_type"] = "policy" if i % 25 == 0 else "faq"
    load(idx, payloads, hash_embedder)
    vec = hash_embedder.embed_one(Q)
    kw = dict(limit=50, query_vector=vec, query_space=hash_embedder.space)
    plain = _profile(candidates_per_channel=3, features=FeatureWeights(doc_type={"policy": 0.5}))
    auth = _profile(name="t_auth", candidates_per_channel=3,
                    features=FeatureWeights(doc_type={"policy": 0.5}, authority_types=("policy",),
                                            authority_candidates=4))
    a = idx.search("t1", Q, plain, **kw)
    b = idx.search("t1", Q, auth, **kw)
    policies = {p["chunk_id"] for p in payloads if p["doc_type"] == "policy" and p["tenant_id"] == "t1"
                and p["version"] == "current"}
    got_a = {h.chunk_id for h in a.hits} & policies
    got_b = {h.chunk_id for h in b.hits} & policies
    assert len(b.hits) <= 6 + 8 and got_b > got_a and len(got_b) >= min(4, len(policies))
    assert b.hits[0].payload["doc_type"] == "policy"  # the document-type weight puts one first
    assert idx.search("t1", Q, auth, **kw).hits == b.hits
    idx.close()
