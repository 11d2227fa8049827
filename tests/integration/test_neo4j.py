"""The congruence suite against Neo4j (marker ``neo4j``): the same random patterns and filters,
the shipped DeltaBank patterns, Maria's facts and the saved Browser queries as on FalkorDB.
Runs whenever HOPWEAVE_NEO4J_URI points at a reachable server; skipped with the reason otherwise."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest

pytestmark = pytest.mark.neo4j


@pytest.fixture(scope="module")
def deltabank(neo4j_store, schema):
    from congruence import load_networkx

    from hopweave.graph.networkx_store import NetworkxGraphStore
    import deltabank_checks  # noqa: F401  (puts the DeltaBank pack's generator on sys.path)
    from generator.build import deltabank_batches

    batches = [(t, list(items)) for t, items in deltabank_batches(nodes=3000)]
    ref = NetworkxGraphStore(None, schema)
    load_networkx(ref, batches)
    neo4j_store.bulk_load(batches, replace=True)
    yield ref, neo4j_store
    ref.close()


def test_random_patterns_and_filters_agree(neo4j_store, schema) -> None:
    from congruence import Tally, run_random_suite

    from hopweave.graph.networkx_store import NetworkxGraphStore

    tally = Tally()
    problems = run_random_suite(
        schema,
        lambda: NetworkxGraphStore(None, schema),
        neo4j_store,
        lambda batches: neo4j_store.bulk_load(batches, replace=True),
        graphs=8,
        patterns_per_graph=30,
        filters_per_graph=30,
        seed=6,
        tally=tally,
    )
    print(f"\nneo4j random congruence: {tally.counts}")
    assert not problems, f"{len(problems)} mismatches; first ones:\n" + "\n".join(problems[:5])


def test_metagraph_is_the_same(deltabank) -> None:
    import deltabank_checks as checks

    checks.check_metagraph(*deltabank)


def test_every_shipped_pattern_agrees(deltabank) -> None:
    import deltabank_checks as checks
    from congruence import Tally

    checks.check_shipped_patterns(*deltabank, Tally(), customers_per_tenant=6)


def test_maria_traversals_same_facts(deltabank) -> None:
    import deltabank_checks as checks

    checks.check_maria(*deltabank)


def _browser_queries() -> list[Path]:
    return sorted((Path(__file__).resolve().parents[2] / "cypher" / "browser").glob("*.cypher"))


@pytest.mark.parametrize("path", _browser_queries(), ids=lambda p: p.stem)
def test_saved_browser_query_runs_on_neo4j(deltabank, path: Path) -> None:
    import deltabank_checks as checks

    _ref, store = deltabank
    checks.check_browser_query(store, path, checks.write_retrieval_trace(store))


def test_budget_and_errors(deltabank) -> None:
    from hopweave.errors import QueryTimeoutError, StoreError
    from hopweave.models.common import Bindings, Session
    from factories import make_pattern

    _ref, store = deltabank
    p = make_pattern()
    b = Bindings(session=Session(tenant_id="deltabank", customer_id="CUST_4421"), as_of=datetime(2026, 5, 12))
    res = store.run_pattern("deltabank", p, b, deadline=time.perf_counter() - 1)
    assert res.truncated and res.truncated_reason == "budget_ms"
    with pytest.raises(QueryTimeoutError):
        store._execute(
            "UNWIND range(1, 100000000) AS x WITH x WHERE x % 7 = 3 RETURN count(x) AS c", {}, timeout_ms=5
        )
    with pytest.raises(StoreError):
        store._execute("MATCH (n RETURN n", {})
