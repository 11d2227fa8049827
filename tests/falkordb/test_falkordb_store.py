"""FalkorDBStore behaviour: tenant walls, atomic validated writes, budgets, error translation,
values as parameters end to end, schema idempotence, and the detached server's lifecycle."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import datetime

import pytest

pytest.importorskip(
    "redislite.falkordb_client", reason="falkordblite needs Python >= 3.12: run .ci/falkordb.sh"
)

from domains import GOALS_DIR  # noqa: E402
from factories import make_pattern  # noqa: E402

from hopweave.errors import (  # noqa: E402
    InputError,
    QueryTimeoutError,
    SchemaError,
    StoreError,
    StoreUnavailableError,
    TenantError,
)
from hopweave.graph.base import Edge, Node  # noqa: E402
from hopweave.graph.falkordb_store import FalkorDBStore, stop_server  # noqa: E402
from hopweave.models.common import Bindings, Session  # noqa: E402
from hopweave.models.filters import Eq  # noqa: E402
from hopweave.models.metagraph import EdgeStep, Literal_, Predicate, TraversalPattern  # noqa: E402

pytestmark = pytest.mark.falkordb

EVIL = "x'}) MATCH (n) DETACH DELETE n // \" ` \\ {$tenants} \n ✓"


def _pattern(**kw) -> TraversalPattern:
    return make_pattern(**{"budget_ms": 5000, **kw})


def _b(tenant: str = "t1", customer: str = "C1") -> Bindings:
    return Bindings(session=Session(tenant_id=tenant, customer_id=customer), as_of=datetime(2026, 5, 12))


@pytest.fixture
def store(falkordb_store):
    falkordb_store.clear()
    falkordb_store.write("_global", [Node("TIER_P", "Tier", {"name": "Platinum"})])
    falkordb_store.write(
        "t1",
        [
            Node("C1", "Customer", {"name": "Ann", "tier": "Platinum"}),
            Node("A1", "Account", {"balance": 10.0, "status": EVIL}),
        ],
        [Edge("C1", "A1", "HOLDS"), Edge("C1", "TIER_P", "HAS_TIER")],
    )
    falkordb_store.write(
        "t2",
        [Node("C2", "Customer", {"name": "Bob"}), Node("A2", "Account", {"balance": 5.0})],
        [Edge("C2", "A2", "HOLDS"), Edge("C2", "TIER_P", "HAS_TIER")],
    )
    return falkordb_store


def test_reads_are_tenant_scoped(store) -> None:
    assert store.get_node("t1", "C1").props == {"name": "Ann", "tier": "Platinum", "tenant_id": "t1"}
    assert store.get_node("t2", "C1") is None
    assert store.get_node("t2", "TIER_P").props["tenant_id"] == "_global"
    assert [n.id for n in store.find_nodes("t1", "Customer")] == ["C1"]
    # through the shared tier, t1 must not reach t2's customer
    p = _pattern(
        edge_sequence=(EdgeStep(type="HAS_TIER"), EdgeStep(type="HAS_TIER", direction="in")),
        target_type="Customer",
        depth=2,
    )
    assert [r.node_id for r in store.run_pattern("t1", p, _b()).rows] == ["C1"]
    assert [r.node_id for r in store.run_pattern("t2", p, _b("t2", "C2")).rows] == ["C2"]
    with pytest.raises(TenantError):
        store.run_pattern("t2", p, _b("t1"))


def test_writes_are_validated_and_atomic(store) -> None:
    before = store.count()
    with pytest.raises(TenantError):  # another tenant's id
        store.write("t2", [Node("C1", "Customer", {"name": "Mallory"})])
    with pytest.raises(TenantError):  # edge to a node the tenant cannot see
        store.write("t2", [Node("A9", "Account", {})], [Edge("A9", "C1", "HOLDS")])
    with pytest.raises(SchemaError):  # undeclared property, after a valid node in the same write
        store.write("t1", [Node("A3", "Account", {"balance": 1.0}), Node("A4", "Account", {"colour": "red"})])
    with pytest.raises(SchemaError):  # wrong endpoint labels
        store.write("t1", [], [Edge("A1", "C1", "HOLDS")])
    with pytest.raises(InputError):  # an id cannot change label
        store.write("t1", [Node("A1", "Customer", {})])
    with pytest.raises(TenantError):  # shared labels belong to _global
        store.write("t1", [Node("TIER_X", "Tier", {"name": "X"})])
    assert store.count() == before
    assert store.get_node("t1", "A3") is None and store.get_node("t2", "A9") is None


def test_upsert_merges_and_removes_properties(store) -> None:
    store.write("t1", [Node("A1", "Account", {"balance": 11.5, "status": None, "currency": "USD"})])
    assert store.get_node("t1", "A1").props == {"balance": 11.5, "currency": "USD", "tenant_id": "t1"}
    store.write("t1", [], [Edge("C1", "A1", "HOLDS")])  # an existing edge is merged, not duplicated
    assert len(store.run_pattern("t1", _pattern(), _b()).rows) == 1
    assert store.count() == (5, 4)


def test_values_are_parameters_end_to_end(store) -> None:
    nodes_before = store.count()
    found = store.find_nodes("t1", "Account", Eq(field="status", value=EVIL))
    assert [n.id for n in found] == ["A1"] and found[0].props["status"] == EVIL
    p = _pattern(predicates=(Predicate(property="status", value=Literal_(value=EVIL)),), returns=("status",))
    rows = store.run_pattern("t1", p, _b()).rows
    assert [(r.node_id, r.properties["status"]) for r in rows] == [("A1", EVIL)]
    assert store.run_pattern("t1", _pattern(), _b(customer=EVIL)).rows == ()
    assert store.count() == nodes_before


def test_budget_gives_truncated_result_not_an_error(store) -> None:
    res = store.run_pattern("t1", _pattern(), _b(), deadline=time.perf_counter() - 1)
    assert res.truncated and res.truncated_reason == "budget_ms" and res.rows == ()
    with pytest.raises(QueryTimeoutError):  # the server-side bound
        store._execute(
            "UNWIND range(1, 20000000) AS x WITH x WHERE x % 7 = 3 RETURN count(x) AS c", {}, timeout_ms=5
        )


def test_errors_are_translated(store, tmp_path) -> None:
    with pytest.raises(StoreError):
        store._execute("MATCH (n RETURN n", {})
    with pytest.raises(StoreError):
        store._execute("CREATE (:Customer {id: 'x'})", {}, read_only=True)
    assert store.ensure_schema() == 0  # idempotent: everything exists already
    other = FalkorDBStore(tmp_path / "closed")
    other.close()
    with pytest.raises(StoreUnavailableError):
        other.get_node("t1", "C1")


def test_close_and_stop_server_by_pid(tmp_path) -> None:
    s = FalkorDBStore(tmp_path / "a")
    pid = s.pid
    assert pid and _alive(pid)
    s.close()
    s.close()  # idempotent
    assert not _alive(pid)


def test_killed_process_leaves_a_server_that_stop_server_removes(tmp_path) -> None:
    """falkordblite's redis-server is detached: it survives a SIGKILLed Python. stop_server
    (what the session fixture does for stale pids) removes it."""
    code = (
        "import sys, time; from hopweave.graph.falkordb_store import FalkorDBStore; "
        f"s = FalkorDBStore({str(tmp_path / 'b')!r}); print(s.pid, flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(proc.stdout.readline())
        proc.kill()
        proc.wait(10)
        assert _alive(pid), "the embedded server should outlive its killed Python process"
        assert stop_server(pid)
        assert not _alive(pid)
    finally:
        proc.kill()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return (
        b"redis-server" in open(f"/proc/{pid}/cmdline", "rb").read()
        if os.path.exists(f"/proc/{pid}")
        else False
    )


def test_metagraph_seeding_through_the_gates(falkordb_store) -> None:
    from hopweave.graph.metagraph_io import load_metagraph
    from hopweave.graph.networkx_store import NetworkxGraphStore

    falkordb_store.clear()
    first = load_metagraph(falkordb_store, GOALS_DIR)
    assert first["patterns"] >= 20 and first["unchanged"] == 0
    again = load_metagraph(falkordb_store, GOALS_DIR)
    assert again["unchanged"] == first["patterns"] and again["revision"] == first["revision"]
    ref = NetworkxGraphStore(None, falkordb_store.schema)
    load_metagraph(ref, GOALS_DIR)
    assert [p.name for p in falkordb_store.patterns("LateFeeDispute")] == [
        p.name for p in ref.patterns("LateFeeDispute")
    ]
    assert falkordb_store.metagraph_revision() == ref.metagraph_revision()
    assert falkordb_store.count()[1] == first["patterns"]  # one HAS_PATTERN edge per pattern


def test_a_server_store_by_url_sees_the_same_server(store, schema) -> None:
    """``FalkorDBStore(url=...)`` (the pure-Python client on a server someone else runs): here the
    embedded server's own socket, another graph name; closing it leaves the server running."""
    import hopweave

    url = f"unix://{store.socket_path}"
    other = FalkorDBStore(schema=schema, url=url, graph="hopweave_url_test")
    try:
        assert other.pid is None and other.socket_path is None
        other.clear()
        other.write("t1", [Node("C1", "Customer", {"name": "Url"})])
        assert other.get_node("t1", "C1").props["name"] == "Url"
        assert store.get_node("t1", "C1").props["name"] == "Ann"  # its own graph
    finally:
        other.clear()
        other.close()
    assert store.get_node("t1", "C1") is not None  # the server still runs
    with hopweave.open(graph=url, schema=schema, graph_only=True) as via:  # the server's graph "hopweave"
        assert via.graph.url == url and via.graph.get_node("t1", "C1") is not None  # type: ignore[attr-defined]
