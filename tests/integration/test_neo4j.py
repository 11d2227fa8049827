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
    from hopweave.pack.batches import pack_batches

    pack = Path(__file__).resolve().parents[2] / "examples" / "deltabank"
    batches = [(t, list(items)) for t, items in pack_batches(pack)]
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
    from factories import make_pattern

    from hopweave.errors import QueryTimeoutError, StoreError
    from hopweave.models.common import Bindings, Session

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


def test_hub_budgets_agree(neo4j_store, schema) -> None:
    """max_visited on Neo4j: the same rows and visit counts as the walker within the budget, the
    same cut past it (tests/shared/budget_checks.py)."""
    import budget_checks as checks

    ref = checks.load_hub(schema, neo4j_store)
    try:
        cuts, full_runs = checks.check_hub(ref, neo4j_store)
    finally:
        ref.close()
    runs = checks.check_random_cuts(schema, neo4j_store, graphs=2, patterns=20)
    print(f"\nneo4j budgets: {cuts} hub cuts, {full_runs} full hub runs, {runs} random max_visited runs")


def test_load_open_and_doctor_through_the_store_front(neo4j_store, monkeypatch: pytest.MonkeyPatch) -> None:
    """``hopweave load PACK --graph neo4j://...`` keeps the store settings in the database: the
    front opens it with the pack's schema and domains, the engine opens on it, doctor finds every
    constraint and index. Runs last: it empties the database before and after."""
    import os

    import hopweave
    from hopweave.pack.loader import load_pack
    from hopweave.stores.doctor import doctor

    uri = os.environ["HOPWEAVE_NEO4J_URI"]
    for var in ("HOPWEAVE_VECTORS", "HOPWEAVE_QDRANT_URL"):
        monkeypatch.delenv(var, raising=False)
    neo4j_store.clear()
    try:
        pack = Path(__file__).resolve().parents[2] / "examples" / "telecom"
        first = load_pack(pack, uri, with_vectors=False)
        again = load_pack(pack, uri, with_vectors=False)  # incremental: MERGE, the same store
        assert (again["nodes"], again["metagraph_revision"]) == (first["nodes"], first["metagraph_revision"])
        with hopweave.open(graph=uri) as stores:
            assert stores.settings is not None and sorted(stores.settings.domains) == ["telecom"]
            assert "Subscriber" in {lab.name for lab in stores.schema().labels}
            assert stores.graph.tenant_domains == {"acme": "telecom", "zephyr": "telecom"}
        engine = hopweave.Engine.open(graph=uri)
        try:
            assert engine.domains is not None and engine.domains.for_tenant("acme").name == "telecom"
        finally:
            engine.close()
        report = doctor(uri)
        checks = {f"{f.store}.{f.check}": f for f in report.findings}
        assert report.ok, report.findings
        assert checks["graph.indexes"].severity == "ok"
    finally:
        neo4j_store.clear()
