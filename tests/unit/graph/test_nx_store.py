"""NetworkxGraphStore: writes, validation, tenant rules, reads, persistence across reopen."""

from __future__ import annotations

import pytest
from graph_helpers import bindings, pattern, small_graph

from hopweave.errors import (
    InputError,
    SchemaError,
    StoreCorruptError,
    StoreError,
    TenantError,
    UnsafeIdentifierError,
)
from hopweave.graph import open_graph_store
from hopweave.graph.base import Edge, Node
from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.models.filters import Eq, Range, and_


def test_get_node_is_tenant_scoped(mem_store):
    assert mem_store.get_node("t1", "C1").props["name"] == "Ann"
    assert mem_store.get_node("t2", "C1") is None  # another tenant's node is invisible
    assert mem_store.get_node("t2", "TIER_Platinum").label == "Tier"  # shared vocabulary is visible
    with pytest.raises(TenantError):
        mem_store.get_node("", "C1")


def test_find_nodes_filters_and_orders_by_id(mem_store):
    ids = [n.id for n in mem_store.find_nodes("t1", "Event")]
    assert ids == ["E1", "E2", "E3"]
    got = mem_store.find_nodes("t1", "Event", and_(Eq(field="type", value="Transaction"),
                                                     Range(field="timestamp", gte="2024-01-01")))
    assert [n.id for n in got] == ["E1"]
    assert mem_store.find_nodes("t2", "Event") == []
    assert [n.id for n in mem_store.find_nodes("t1", "Customer", Eq(field="id", value="C1"))] == ["C1"]


def test_upsert_merges_properties_and_none_removes(mem_store):
    mem_store.write("t1", [Node("C1", "Customer", {"region": "US", "name": None})])
    props = mem_store.get_node("t1", "C1").props
    assert props["region"] == "US" and props["tier"] == "Platinum" and "name" not in props
    # the lazily built property index follows the update
    assert [n.id for n in mem_store.find_nodes("t1", "Customer", Eq(field="region", value="US"))] == ["C1"]
    mem_store.write("t1", [Node("C1", "Customer", {"region": "EU"})])
    assert mem_store.find_nodes("t1", "Customer", Eq(field="region", value="US")) == []


@pytest.mark.parametrize(
    "node, err",
    [
        (Node("X", "NoSuchLabel", {}), SchemaError),
        (Node("X", "Customer", {"shoe_size": 3}), SchemaError),
        (Node("X", "Account", {"balance": "lots"}), SchemaError),
        (Node("X", "Event", {"timestamp": "2026-05-12 10:00"}), SchemaError),
        (Node("X", "Event", {"year": True}), SchemaError),
        (Node("X", "Customer) DETACH DELETE (n", {}), UnsafeIdentifierError),
        (Node("X", "Customer", {"name`: 1}) //": 1}), SchemaError),
        (Node("", "Customer", {}), InputError),
        (Node("X", "Customer", {"tenant_id": "t2"}), TenantError),
        (Node("X", "Tier", {"name": "Diamond"}), TenantError),  # shared label written by a tenant
        (Node("C2", "Customer", {"name": "steal"}), TenantError),  # another tenant's id
        (Node("A1", "Customer", {}), InputError),  # label change of an existing node
    ],
)
def test_invalid_node_writes_are_rejected_and_change_nothing(mem_store, node, err):
    before = mem_store.stats()
    with pytest.raises(err):
        mem_store.write("t1", [Node("OK", "Customer", {}), node])
    assert mem_store.stats() == before  # one write is all or nothing


@pytest.mark.parametrize(
    "edge, err",
    [
        (Edge("C1", "A1", "NO_SUCH_REL"), SchemaError),
        (Edge("C1", "A1", "HOLDS]->(x) DELETE x //"), UnsafeIdentifierError),
        (Edge("A1", "C1", "HOLDS"), SchemaError),  # wrong direction for the schema's endpoints
        (Edge("C1", "E1", "HAS_TIER"), SchemaError),
        (Edge("C1", "NOPE", "HOLDS"), InputError),
        (Edge("C1", "C2", "HOLDS"), TenantError),  # endpoint of another tenant
    ],
)
def test_invalid_edge_writes_are_rejected(mem_store, edge, err):
    with pytest.raises(err):
        mem_store.write("t1", [], [edge])


def test_global_tenant_writes_only_shared_labels(mem_store):
    with pytest.raises(TenantError):
        mem_store.write("_global", [Node("CX", "Customer", {})])
    with pytest.raises(TenantError):
        mem_store.write("t1", [Node("TIER_X", "Tier", {"name": "X"})])


def test_values_are_normalised(schema):
    from datetime import date, datetime

    s = NetworkxGraphStore(None, schema)
    s.write("t1", [Node("E", "Event", {"timestamp": datetime(2026, 5, 1, 8, 30), "amount": 39, "year": 2026}),
                   Node("C", "Customer", {"tier_since": date(2023, 8, 12)})])
    e = s.get_node("t1", "E").props
    assert e["timestamp"] == "2026-05-01T08:30:00" and e["amount"] == 39.0 and isinstance(e["amount"], float)
    assert s.get_node("t1", "C").props["tier_since"] == "2023-08-12"


def test_persistence_across_reopen_and_compact(tmp_path, schema):
    s = open_graph_store(tmp_path, schema)
    small_graph(s)
    assert (tmp_path / "graph" / "journal.jsonl").stat().st_size > 0
    before = s.stats()
    s.close()
    s2 = open_graph_store(tmp_path, schema)  # replays the journal: no re-ingest
    assert s2.stats()["nodes"] == before["nodes"] and s2.stats()["edges"] == before["edges"]
    r = s2.run_pattern("t1", pattern(), bindings())
    assert [row.node_id for row in r.rows] == ["TIER_Platinum"]
    s2.compact()
    assert (tmp_path / "graph" / "journal.jsonl").stat().st_size == 0
    s2.write("t1", [Node("C9", "Customer", {"tier": "Gold"})])
    s3 = open_graph_store(tmp_path, schema)  # snapshot + journal
    assert s3.get_node("t1", "C9") is not None and s3.get_node("t1", "C1") is not None
    assert s3.stats()["nodes"] == before["nodes"] + 1


def test_two_instances_see_each_others_writes(tmp_path, schema):
    a = open_graph_store(tmp_path, schema)
    small_graph(a)
    b = open_graph_store(tmp_path, schema)
    a.write("t1", [Node("C7", "Customer", {})])
    assert b.get_node("t1", "C7") is None
    b.refresh()
    assert b.get_node("t1", "C7") is not None
    # b's write first catches up with a's records, so nothing is lost
    b.write("t1", [Node("C8", "Customer", {})], [Edge("C8", "TIER_Gold", "HAS_TIER")])
    a.compact()
    c = open_graph_store(tmp_path, schema)
    assert c.get_node("t1", "C7") and c.get_node("t1", "C8")


def test_torn_journal_tail_is_ignored_and_truncated(tmp_path, schema):
    s = open_graph_store(tmp_path, schema)
    small_graph(s)
    journal = tmp_path / "graph" / "journal.jsonl"
    with open(journal, "ab") as f:
        f.write(b'{"seq": 99, "t": "t1", "n": [["C5", "Cust')  # a killed writer's half line
    s2 = open_graph_store(tmp_path, schema)
    assert s2.get_node("t1", "C5") is None and s2.get_node("t1", "C1") is not None
    s2.write("t1", [Node("C6", "Customer", {})])
    s3 = open_graph_store(tmp_path, schema)
    assert s3.get_node("t1", "C6") is not None


def test_corrupt_journal_line_is_quarantined_and_the_store_opens(tmp_path, schema):
    s = open_graph_store(tmp_path, schema)
    small_graph(s)
    with open(tmp_path / "graph" / "journal.jsonl", "ab") as f:
        f.write(b"this is not json\n")
    s2 = open_graph_store(tmp_path, schema)
    assert s2.get_node("t1", "C1") is not None
    [q] = s2.quarantined
    assert q.seq == -1 and "not JSON" in q.reason


def test_truncated_snapshot_raises(tmp_path, schema):
    s = open_graph_store(tmp_path, schema)
    small_graph(s)
    s.compact()
    snap = tmp_path / "graph" / "graph.snapshot"
    data = snap.read_bytes()
    snap.write_bytes(data[: len(data) // 2])
    with pytest.raises(StoreCorruptError):
        open_graph_store(tmp_path, schema)


def test_bulk_is_all_or_nothing(tmp_path, schema):
    s = open_graph_store(tmp_path, schema)
    small_graph(s)
    s.compact()
    before = s.stats()
    with pytest.raises(SchemaError):
        with s.bulk() as b:
            b.write("t1", [Node("B1", "Customer", {}), Node("B2", "Customer", {"bogus": 1})])
    assert s.stats()["nodes"] == before["nodes"] and s.get_node("t1", "B1") is None
    assert open_graph_store(tmp_path, schema).get_node("t1", "B1") is None
    with s.bulk(replace=True) as b:
        b.write("_global", [Node("TIER_Gold", "Tier", {"name": "Gold"})])
        b.write("t1", [Node("B1", "Customer", {}), Edge("B1", "TIER_Gold", "HAS_TIER")])
    reopened = open_graph_store(tmp_path, schema)
    assert reopened.stats()["nodes"] == 2 and reopened.get_node("t1", "C1") is None


def test_read_only_store_refuses_writes(tmp_path, schema):
    small_graph(open_graph_store(tmp_path, schema))
    ro = open_graph_store(tmp_path, schema, read_only=True)
    assert ro.get_node("t1", "C1") is not None
    with pytest.raises(StoreError):
        ro.write("t1", [Node("C3", "Customer", {})])


def test_closed_store_refuses_use(mem_store):
    mem_store.close()
    with pytest.raises(StoreError):
        mem_store.get_node("t1", "C1")


def test_graph_property_is_a_networkx_graph(mem_store):
    import networkx as nx

    g = mem_store.graph
    assert isinstance(g, nx.MultiDiGraph)
    assert g.nodes["C1"]["label"] == "Customer"
    assert g.has_edge("C1", "A1", key="HOLDS")


def test_concurrent_walks_and_writes(schema):
    """Walks iterate adjacency dicts that writes grow: the read/write lock keeps them apart."""
    import threading

    from hopweave.models.metagraph import EdgeStep, Literal_, Seed

    s = NetworkxGraphStore(None, schema)
    small_graph(s)
    p = pattern(seed=Seed(type="Tier", key="id", value=Literal_(value="TIER_Platinum")),
                edge_sequence=(EdgeStep(type="HAS_TIER", direction="in"),), target_type="Customer",
                limit=10_000, max_visited=1_000_000, budget_ms=10_000)
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader():
        try:
            while not stop.is_set():
                s.run_pattern("t1", p, bindings())
        except BaseException as exc:  # pragma: no cover - the failure being tested for
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(300):
        s.write("t1", [Node(f"CC{i}", "Customer", {})], [Edge(f"CC{i}", "TIER_Platinum", "HAS_TIER")])
    stop.set()
    for t in threads:
        t.join()
    assert errors == []
    assert len(s.run_pattern("t1", p, bindings()).rows) == 301


def test_reading_another_process_compaction_does_not_block_readers(tmp_path, schema):
    """After another process compacts, catching up reads the new snapshot while the old state
    keeps answering readers (at a million nodes the read takes seconds); the swap comes after."""
    import threading

    a = open_graph_store(tmp_path, schema)
    small_graph(a)
    b = open_graph_store(tmp_path, schema)
    a.write("t1", [Node("C7", "Customer", {})])
    a.compact()  # b's snapshot signature is now stale: its catch-up re-reads the directory
    seen: dict[str, object] = {}
    scan = b._scan_directory

    def scanning():  # a reader on another thread, while b reads the directory
        done = threading.Event()

        def read():
            seen["during"] = b.get_node("t1", "C7")
            done.set()

        threading.Thread(target=read, daemon=True).start()
        seen["reader_finished"] = done.wait(timeout=5)
        return scan()

    b._scan_directory = scanning
    b.refresh()
    assert seen["reader_finished"] is True  # not blocked behind the reload
    assert seen["during"] is None  # it read the old state, consistently
    assert b.get_node("t1", "C7") is not None  # the new state once swapped in
