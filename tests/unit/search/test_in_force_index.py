""""In force at as_of" (issue 14) gives the same documents in both channels on both Qdrant
adapters and in :func:`matches` (the post-check), whatever format the payload dates are in."""

from __future__ import annotations

import random

import pytest
from search_fixtures import load, make_index, random_payloads

from hopweave.models.filters import And, Eq, In, matches
from hopweave.models.ranking import RankingProfile
from hopweave.understand.filter_map import InForce, instant

WIDE = RankingProfile(name="wide_rrf", version=1, method="rrf", rank_constant=60, candidates_per_channel=500)
RULE = InForce.model_validate({"from": "valid_from", "until": "valid_until", "status": "status"})
#: instants around the edges of the generated intervals, with offsets and date-only forms
AT = ["2024-01-01", "2025-12-31T23:59:59Z", "2026-01-01", "2026-01-01T00:30:00+01:00",
      "2026-01-01T00:00:00-00:30", "2026-05-12T10:00:00", "2026-09-01", "2027-03-01"]


def _date(rng: random.Random, year: int) -> str:
    base = f"{year}-{rng.choice(['01', '06', '09'])}-01"
    return rng.choice([base, base + "T00:00:00Z", base + "T00:30:00+01:00", base + "T12:00:00"])


def _payloads() -> list[dict]:
    rng = random.Random(11)
    out = []
    for p in random_payloads(140, seed=11):
        p = dict(p)
        p.pop("valid_from", None)
        if rng.random() < 0.9:
            p["valid_from"] = _date(rng, rng.randint(2024, 2026))
        if rng.random() < 0.5:
            p["valid_until"] = _date(rng, rng.randint(2025, 2027))
        p["version"] = rng.choice(["current", "superseded", "superseded", "staging"])
        out.append(p)
    return out


@pytest.fixture(scope="module", params=["edge", "client"])
def loaded(request, tmp_path_factory, schema, hash_embedder):
    payloads = _payloads()
    idx = make_index(request.param, tmp_path_factory.mktemp(request.param), schema, hash_embedder)
    load(idx, payloads, hash_embedder)
    yield idx, payloads
    idx.close()


@pytest.mark.parametrize("at", AT)
def test_in_force_is_applied_before_ranking_in_both_channels(loaded, hash_embedder, at):
    idx, payloads = loaded
    flt = RULE.clause(instant(at))
    scoped = And(clauses=(Eq(field="tenant_id", value="t1"), In(field="version", values=("current", "superseded")),
                          flt))
    eligible = {p["chunk_id"] for p in payloads if matches(scoped, p)}
    query = "late fee waiver platinum"
    res = idx.search("t1", query, WIDE, where=flt, limit=500, query_vector=hash_embedder.embed_one(query),
                     query_space=hash_embedder.space, include_superseded=True)
    assert res.candidates["dropped_by_post_check"] == 0  # Qdrant and matches() agree
    assert {h.chunk_id for h in res.hits if h.semantic} == eligible
    assert {h.chunk_id for h in res.hits} <= eligible
    assert res.coverage.eligible_records == len(eligible)
    assert all(h.payload.get("version") != "staging" for h in res.hits)  # never a half-written revision


def test_instant_normalises_every_form() -> None:
    assert instant("2026-05-12") == "2026-05-12T23:59:59Z"  # as of a day: the end of it
    assert instant("2026-05-12T01:30:00+02:00") == "2026-05-11T23:30:00Z"
    assert instant("2026-05-12T10:00:00") == "2026-05-12T10:00:00Z"
