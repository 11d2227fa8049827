"""The ``is_empty`` filter clause (an anonymous session's "no segment-specific policy") means the
same on both Qdrant adapters as in :func:`hopweave.models.filters.matches`: the field is absent,
null or an empty list."""

from __future__ import annotations

import pytest
from search_fixtures import load, make_index, random_payloads

from hopweave.models.filters import And, Eq, IsEmpty, Not, matches, parse_filter, to_display
from hopweave.models.ranking import RankingProfile
from hopweave.search.qdrant_filter import to_edge, to_qdrant

WIDE = RankingProfile(name="wide_rrf", version=1, method="rrf", rank_constant=60, candidates_per_channel=500)


def _payloads() -> list[dict]:
    out = []
    for i, p in enumerate(random_payloads(80, seed=11, tenants=("t1",))):
        p = dict(p, version="current")
        if i % 4 == 0:
            del p["tier"]
        elif i % 4 == 1:
            p["tier"] = None
        elif i % 4 == 2:
            p["tier"] = []
        out.append(p)
    return out


def test_matches_semantics() -> None:
    f = IsEmpty(field="tier")
    assert matches(f, {}) and matches(f, {"tier": None}) and matches(f, {"tier": []})
    assert not matches(f, {"tier": "Gold"}) and not matches(f, {"tier": ["Gold"]})
    assert parse_filter({"op": "is_empty", "field": "tier"}) == f
    assert to_display(And(clauses=(f, Eq(field="status", value="active")))) == {"tier": None, "status": "active"}


def test_compiles_for_both_adapters() -> None:
    q = to_qdrant(IsEmpty(field="tier")).model_dump(mode="json", exclude_none=True)
    assert q == {"must": [{"is_empty": {"key": "tier"}}]}
    assert "IsEmptyCondition" in repr(to_edge(IsEmpty(field="tier")))


@pytest.mark.parametrize("kind", ["edge", "client"])
@pytest.mark.parametrize("negate", [False, True])
def test_search_keeps_exactly_the_empty_ones(kind, negate, tmp_path, schema, hash_embedder) -> None:
    payloads = _payloads()
    idx = make_index(kind, tmp_path, schema, hash_embedder)
    try:
        load(idx, payloads, hash_embedder)
        flt = Not(clause=IsEmpty(field="tier")) if negate else IsEmpty(field="tier")
        expected = {p["chunk_id"] for p in payloads if matches(flt, p)}
        query = "late fee waiver platinum"
        res = idx.search("t1", query, WIDE, where=flt, limit=500, query_vector=hash_embedder.embed_one(query),
                         query_space=hash_embedder.space)
        got = {h.chunk_id for h in res.hits}
        assert got and got <= expected
        assert res.candidates["dropped_by_post_check"] == 0  # Qdrant itself applied the clause
        assert len(expected) == (20 if negate else 60)
    finally:
        idx.close()
