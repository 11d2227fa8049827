"""The whole-engine congruence on Neo4j + a Qdrant server (markers ``neo4j``, ``qdrant_server``):
every scenario of every example pack through ``Engine.retrieve`` on the embedded default and on
the docker-compose servers, compared as on FalkorDB (tests/parity, tests/shared/engine_congruence.py).
Runs after test_neo4j.py (it replaces the graph). ``make test-neo4j``: docs/parity.md.

The statements this sends are the Neo4j dialect of the same store calls; that dialect is
what tests/unit/graph/test_neo4j_parser.py checks with Neo4j's own parser, including every
statement shape these scenarios produce (``collect_engine``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from engine_congruence import assert_congruent, describe, run_pack
from stores import PACKS, engine_pair

pytestmark = [pytest.mark.neo4j, pytest.mark.qdrant_server]


@pytest.mark.parametrize("pack", PACKS, ids=[p.name for p in PACKS])
def test_every_scenario_is_identical_on_neo4j_and_qdrant_server(
    pack: Path, neo4j_store, qdrant_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t0 = time.perf_counter()
    vectors = f"{qdrant_url.rstrip('/')}?collection=hopweave_parity_{pack.name}"
    with engine_pair(pack, os.environ["HOPWEAVE_NEO4J_URI"], vectors, tmp_path) as (ref, other):
        out = run_pack(pack, ref, other)
    with capsys.disabled():
        print(f"\ncongruence (networkx+qdrant-edge vs Neo4j+Qdrant server): {describe(out)}; "
              f"{time.perf_counter() - t0:.0f} s")
    assert_congruent(out)
