"""Ranking profiles: registry, immutability, fusion arithmetic, equivalence with Qdrant's RRF."""

from __future__ import annotations

import numpy as np
import pytest

from hopweave.errors import ConfigError, InputError, UnknownProfileError
from hopweave.models.ranking import RankingProfile
from hopweave.search.fusion import fuse, rank_channel
from hopweave.search.profiles import default_profile, get_profile, list_profiles, registry

#: Published profiles are immutable: a change here means a profile was edited (publish a new
#: name instead). Regenerate only when ADDING a profile.
PINNED = {
    "convex_a08": "5b8c5f4b5183732ef3dbfc62c111b0af808f2abc7bfd1478ddd2aba49cefeb62",
    "dense_only": "a4328c570d465e1ce81b9d41b0c7c717f1def77e78f7237f930703d96106a226",
    "hybrid_convex_v1": "257d3a8708ba90660b53003f6699bb7c8499a29d01796f2d7d8a4d4abf13380d",
    "hybrid_features_v2": "ecc3e178849266e89f8c3f464c36d7cbba7baa278cf3c166b9cca53fc5b120ac",
    "convex_a08_features_v1": "7716c33bd1b458423d2fb37a25ae77c74d4bbb6dd66a6b3bb40d275dd6f24737",
    "convex_a08_authority_v1": "57ea63db32a514d5f86468ea9c6d02f6e00e069568f5eaacffdaffb49fde05a5",
    "convex_a08_authority_v2": "959c292e3bc5ca6b5767da740b850196dbc7c64706c91d881364ddac6fb3409d",
    "lexical_only": "92176a75cc558f99cc12556124f280a7d93604d9f4030965b96381ee857df046",
    "rrf_k60": "f4d0ced6416d9e7c435744d90f5f876a50600c96fb889e100709f591bd15e026",
    "weighted_rrf_v2": "f27697f4a0d2a3b57a3d53036fb879e7bd8ae00c90254a848e2acd73830f45ef",
}


def test_published_profiles_never_change():
    got = {p.name: p.fingerprint() for p in list_profiles()}
    for name, fp in PINNED.items():
        assert got.get(name) == fp, f"published profile {name} changed: publish a new name instead"


def test_required_profiles_and_default():
    names = set(registry().names())
    assert {"rrf_k60", "weighted_rrf_v2", "convex_a08", "dense_only", "lexical_only"} <= names
    p = default_profile()
    assert p.uses_lexical and p.uses_semantic
    assert get_profile(None) == p


def test_unknown_profile_is_an_error():
    with pytest.raises(UnknownProfileError, match="rrf_k60"):
        get_profile("rrf_k61")


def test_bad_profiles_file(tmp_path):
    from hopweave.search.profiles import ProfileRegistry

    f = tmp_path / "p.yaml"
    f.write_text("default: nope\nprofiles:\n  - {name: a, version: 1, method: dense}\n")
    with pytest.raises(ConfigError, match="nope"):
        ProfileRegistry.load(f)
    with pytest.raises(InputError, match="ranking profiles file"):
        ProfileRegistry.load(tmp_path / "missing.yaml")
    f.write_text("profiles: [\n")
    with pytest.raises(InputError, match="not valid YAML"):
        ProfileRegistry.load(f)


LEX = [("a", 9.0), ("b", 7.0), ("c", 7.0), ("d", 1.0)]
SEM = [("c", 0.9), ("e", 0.8), ("a", 0.5)]


def test_weighted_rrf_arithmetic_seed_002():
    p = get_profile("weighted_rrf_v2")  # lexical 0.25, semantic 0.75, k = 2
    out = {f.chunk_id: f for f in fuse(p, LEX, SEM)}
    assert out["a"].lexical.contribution == pytest.approx(0.25 / 3)
    assert out["a"].semantic.contribution == pytest.approx(0.75 / 5)
    assert out["a"].score == pytest.approx(0.25 / 3 + 0.75 / 5)
    assert out["c"].lexical.rank == 3  # tie with b broken by id
    assert out["d"].semantic is None and out["d"].score == pytest.approx(0.25 / 6)


def test_convex_minmax_and_ties_by_id():
    p = get_profile("convex_a08")
    out = fuse(p, LEX, SEM)
    by = {f.chunk_id: f for f in out}
    assert by["a"].score == pytest.approx(0.2 * 1.0 + 0.8 * 0.0)
    assert by["c"].score == pytest.approx(0.2 * 0.75 + 0.8 * 1.0)
    assert [f.chunk_id for f in out][0] == "c"
    tied = fuse(get_profile("lexical_only"), [("z", 1.0), ("y", 1.0), ("x", 1.0)], [])
    assert [f.chunk_id for f in tied] == ["x", "y", "z"]


def test_single_channel_profiles_report_other_channel_without_contribution():
    out = fuse(get_profile("dense_only"), LEX, SEM)
    assert [f.chunk_id for f in out] == ["c", "e", "a"]
    assert out[0].lexical.contribution is None and out[0].semantic.contribution == 0.9


def test_candidate_cap():
    p = RankingProfile(name="x", version=1, method="rrf", candidates_per_channel=2)
    assert {f.chunk_id for f in fuse(p, LEX, SEM)} == {"a", "b", "c", "e"}
    assert rank_channel(LEX, 2) == [("a", 9.0), ("b", 7.0)]


def test_rrf_k60_equals_qdrant_fusion_rrf_k61(tmp_path, schema, hash_embedder):
    """Qdrant's RRF is 1/(k - 1 + rank): our rrf_k60 == its Fusion.Rrf(k=61) (no ties here)."""
    import qdrant_edge as q

    from hopweave.models.filters import Eq, and_
    from hopweave.search.edge_index import EdgeIndex
    from hopweave.search.index_base import SPACE_FIELD, CollectionInfo, IndexPoint

    rng = np.random.default_rng(0)
    idx = EdgeIndex(tmp_path, schema)
    info = idx.ensure_collection(CollectionInfo(space=hash_embedder.space, avg_len=12.0))
    enc = info.encoder()
    pts = []
    for i in range(80):
        text = " ".join(["alpha"] * (1 + i % 5) + [f"w{i}x{j}" for j in range(i)] + (["beta"] if i % 3 == 0 else []))
        v = rng.normal(size=16).astype(np.float32)
        v /= np.linalg.norm(v)
        pl = {"tenant_id": "t1", "chunk_id": f"c{i:03d}", "version": "current", "text": text, SPACE_FIELD: hash_embedder.space.key}
        pts.append(IndexPoint(f"c{i:03d}", pl, enc.encode_document(text), v))
    idx.upsert("t1", pts)
    qv = rng.normal(size=16).astype(np.float32)
    qv /= np.linalg.norm(qv)
    ours = idx.search("t1", "alpha beta", get_profile("rrf_k60"), limit=20, query_vector=qv, query_space=hash_embedder.space)
    scoped = idx.scoped_filter("t1", None, True)
    base, dense_f = idx._compile(scoped), idx._compile(and_(scoped, Eq(field=SPACE_FIELD, value=hash_embedder.space.key)))
    sp = enc.encode_query("alpha beta")
    theirs = idx._open().query(q.QueryRequest(
        limit=20, with_payload=True, query=q.Fusion.Rrf(k=61),
        prefetches=[
            q.Prefetch(limit=50, filter=base, params=q.SearchParams(idf=q.IdfParams(corpus=base)),
                       query=q.Query.Nearest(q.SparseVector(list(sp.indices), list(sp.values)), using="lexical")),
            q.Prefetch(limit=50, filter=dense_f, query=q.Query.Nearest(qv.tolist(), using="dense")),
        ]))
    assert ours.ids() == [p.payload["chunk_id"] for p in theirs]
    assert [h.score for h in ours.hits] == pytest.approx([p.score for p in theirs], rel=1e-5)
    idx.close()


def test_every_fusion_method_has_a_channel_scorer():
    from typing import get_args

    from hopweave.models.fusion_methods import FUSION_METHODS
    from hopweave.models.ranking import Method

    assert set(FUSION_METHODS) == set(get_args(Method))
    assert all(name == row.name for name, row in FUSION_METHODS.items())
    assert sorted(m for m, row in FUSION_METHODS.items() if row.single_channel) == ["dense", "lexical"]
    assert [m for m, row in FUSION_METHODS.items() if row.normalised] == ["convex"]
    assert [m for m, row in FUSION_METHODS.items() if row.takes_alpha] == ["convex"]
    assert {m: row.lexical_only for m, row in FUSION_METHODS.items() if row.lexical_only} == {"convex": {"alpha": 0.0}}
