"""Filters are respected by both channels on both adapters, on randomized data and filters."""

from __future__ import annotations

import random

import pytest
from search_fixtures import POLICY, PRODUCTS, REGIONS, TIERS, load, make_index, random_payloads

from hopweave.models.filters import And, Eq, In, Not, Or, Range, matches
from hopweave.models.ranking import RankingProfile

WIDE = RankingProfile(name="wide_rrf", version=1, method="rrf", rank_constant=60, candidates_per_channel=500)


def random_filter(rng: random.Random, depth: int = 0):
    leaves = [
        lambda: Eq(field="tier", value=rng.choice(TIERS)),
        lambda: In(field="product", values=tuple(rng.sample(PRODUCTS, 2))),
        lambda: Eq(field="policy_type", value=rng.choice(POLICY)),
        lambda: In(field="region", values=tuple(rng.sample(REGIONS, rng.randint(1, 2)))),
        lambda: Eq(field="status", value="active"),
        lambda: Range(field="valid_from", gte=f"202{rng.randint(0, 3)}-01-01"),
        lambda: Range(field="valid_from", lt=f"202{rng.randint(2, 6)}-06-30", gt="2020-02-01"),
        lambda: Eq(field="revision", value=rng.choice(["v1", "v2", "v3"])),
    ]
    if depth >= 2 or rng.random() < 0.4:
        return rng.choice(leaves)()
    kind = rng.choice(["and", "or", "not"])
    if kind == "not":
        return Not(clause=random_filter(rng, depth + 1))
    clauses = tuple(random_filter(rng, depth + 1) for _ in range(rng.randint(2, 3)))
    return And(clauses=clauses) if kind == "and" else Or(clauses=clauses)


@pytest.fixture(scope="module", params=["edge", "client"])
def loaded(request, tmp_path_factory, schema, hash_embedder):
    payloads = random_payloads(160, seed=7)
    idx = make_index(request.param, tmp_path_factory.mktemp(request.param), schema, hash_embedder)
    load(idx, payloads, hash_embedder)
    yield idx, payloads
    idx.close()


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("query", ["late fee waiver platinum", "zzzz qqqq"])
def test_no_hit_outside_the_filter(loaded, hash_embedder, seed, query):
    idx, payloads = loaded
    rng = random.Random(seed)
    flt = random_filter(rng)
    tenant = rng.choice(["t1", "t2"])
    scoped = And(clauses=(Eq(field="tenant_id", value=tenant), Eq(field="version", value="current"), flt))
    eligible = {p["chunk_id"] for p in payloads if matches(scoped, p)}
    res = idx.search(tenant, query, WIDE, where=flt, limit=500,
                     query_vector=hash_embedder.embed_one(query), query_space=hash_embedder.space)
    got = {h.chunk_id for h in res.hits}
    assert res.candidates["dropped_by_post_check"] == 0  # the engine itself applied the filter
    assert got <= eligible, f"returned outside the filter: {sorted(got - eligible)}"
    for h in res.hits:
        assert matches(scoped, h.payload | {"text": h.text})
    # the dense channel sees the whole filtered set (cap > eligible): the filter is applied before ranking
    assert {h.chunk_id for h in res.hits if h.semantic} == eligible
    lexical = {h.chunk_id for h in res.hits if h.lexical}
    if query.startswith("zzzz"):
        assert lexical == set() and res.coverage.lexical_skipped_reason is None
    assert res.coverage.eligible_records == len(eligible)
    assert idx.count(tenant, flt) == len(eligible)


def test_lexical_only_with_unmatched_query_returns_nothing(loaded):
    idx, _ = loaded
    from hopweave.search.profiles import get_profile

    res = idx.search("t1", "zzzz", get_profile("lexical_only"), where=Eq(field="tier", value="Gold"))
    assert res.hits == ()
