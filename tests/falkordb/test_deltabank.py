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
from generator.build import deltabank_batches  # noqa: E402  (deltabank_checks put the pack's generator on sys.path)

pytestmark = pytest.mark.falkordb

NODES = 3000


@pytest.fixture(scope="module")
def stores(falkordb_store, schema):
    batches = [(t, list(items)) for t, items in deltabank_batches(nodes=NODES)]
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
