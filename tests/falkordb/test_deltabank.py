"""The DeltaBank example on FalkorDB: every shipped pattern returns the same rows as networkx,
Maria's traversals return the expected facts, and every saved Browser query runs."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip(
    "redislite.falkordb_client", reason="falkordblite needs Python >= 3.12: run .ci/falkordb.sh"
)

import deltabank_checks as checks  # noqa: E402
from congruence import load_networkx  # noqa: E402

from hopweave.graph.networkx_store import NetworkxGraphStore  # noqa: E402
from hopweave.pack.batches import pack_batches  # noqa: E402

pytestmark = pytest.mark.falkordb

PACK = Path(__file__).resolve().parents[2] / "examples" / "deltabank"


@pytest.fixture(scope="module")
def stores(falkordb_store, schema):
    batches = [(t, list(items)) for t, items in pack_batches(PACK)]
    ref = NetworkxGraphStore(None, schema)
    load_networkx(ref, batches)
    falkordb_store.bulk_load(batches, replace=True)
    yield ref, falkordb_store
    ref.close()


def test_metagraph_is_the_same(stores) -> None:
    ref, fk = stores
    checks.check_metagraph(ref, fk)
    assert len(ref.patterns()) >= 20


def test_every_shipped_pattern_agrees(stores, tally) -> None:
    checks.check_shipped_patterns(*stores, tally)


def test_maria_traversals_same_facts(stores) -> None:
    checks.check_maria(*stores)


def test_browser_queries_exist() -> None:
    names = {p.stem for p in checks.browser_queries()}
    assert {
        "goal_patterns",
        "trace_subgraph",
        "traces_using_pattern",
        "patterns_using_rel_type",
        "precedent_chains",
    } <= names


@pytest.mark.parametrize("path", checks.browser_queries(), ids=lambda p: p.stem)
def test_saved_browser_query_runs_on_falkordb(stores, path: Path, tally) -> None:
    _ref, fk = stores
    trace_id = checks.write_retrieval_trace(fk)
    checks.check_browser_query(fk, path, trace_id)
    tally.add("saved Browser queries run")


@pytest.mark.parametrize("utterance, as_of, with_rows", [
    ("the late fee from September 2024", "2026-05-12", True),
    ("the late fee from September 2024", "2024-09-07", True),   # cut at as_of
    ("my statement from last month", "2026-05-12", True),
    ("the fee on June 3, 2026", "2026-05-12", False),           # after as_of: nothing leaks
])
def test_dates_in_the_utterance_window_the_same_events(stores, utterance, as_of, with_rows) -> None:
    """Issue 14: entity.DateFrom / entity.DateUntil windows give the same rows on both stores."""
    from hopweave.models.common import to_datetime
    from hopweave.understand.temporal import time_windows, window_bounds

    ref, fk = stores
    when = to_datetime(as_of)
    lo, hi = window_bounds(time_windows(utterance, when), when)
    b = checks.bindings(ref, checks.TENANT, checks.CUSTOMER_ID, "LateFeeDispute")
    b = b.model_copy(update={"as_of": when, "entities": {**b.entities, "DateFrom": lo, "DateUntil": hi}})
    p = next(x for x in ref.patterns() if x.name == "events_in_window")
    want = checks.comparable(ref.run_pattern(checks.TENANT, p, b, deadline=checks.far()))
    got = checks.comparable(fk.run_pattern(checks.TENANT, p, b, deadline=checks.far()))
    assert want == got
    assert bool(want["rows"]) is with_rows
    assert all(str(props["timestamp"]) <= when.isoformat() for _id, _label, props, _path in want["rows"])
