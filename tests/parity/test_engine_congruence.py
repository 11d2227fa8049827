"""Whole-engine congruence (issue 16 item 2, marker ``slow``): every scenario of every example
pack through ``Engine.retrieve`` on the embedded default (networkx + qdrant-edge) and on server
stores (a FalkorDB server + qdrant-client in its local mode as the Qdrant server stand-in).
Contexts, facts, chunk ids, traces: identical (tests/shared/engine_congruence.py says exactly
what is compared), or the difference is a documented capability row (docs/parity.md)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from engine_congruence import assert_congruent, describe, run_pack
from stores import PACKS, engine_pair

pytestmark = pytest.mark.slow


def test_both_example_packs_are_covered() -> None:
    assert {p.name for p in PACKS} >= {"deltabank", "telecom"}


@pytest.mark.parametrize("pack", PACKS, ids=[p.name for p in PACKS])
def test_every_scenario_is_identical_on_falkordb_and_qdrant_client(
    pack: Path, falkordb_url: str, tmp_path: Path, summary
) -> None:
    t0 = time.perf_counter()
    with engine_pair(pack, falkordb_url, ":memory:", tmp_path) as (ref, other):
        load_s = time.perf_counter() - t0
        out = run_pack(pack, ref, other)
    line = describe(out)
    summary.setdefault("networkx+qdrant-edge vs FalkorDB server+qdrant-client local", []).append(line)
    print(f"\n{pack.name}: {line}; load {load_s:.0f} s, total {time.perf_counter() - t0:.0f} s")
    assert_congruent(out)
