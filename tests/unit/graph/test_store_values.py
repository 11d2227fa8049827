"""What is written is what reads back: a date or datetime the replay would refuse is refused at
the write (a year below 1000 is zero-padded, a 13th month refused); a snapshot header whose
payload length disagrees with the file is a StoreCorruptError before anything is allocated; and
the deep value check finds a bad value wherever it lies (journal or snapshot)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from graph_helpers import small_graph

from hopweave.errors import SchemaError, StoreCorruptError
from hopweave.graph import _persist as P
from hopweave.graph.base import Node
from hopweave.graph.networkx_store import NetworkxGraphStore


def _store(tmp_path: Path, schema) -> NetworkxGraphStore:  # type: ignore[no-untyped-def]
    s = NetworkxGraphStore.open(tmp_path / "graph", schema)
    small_graph(s)
    return s


@pytest.mark.parametrize("value", ["999-12-31T23:59:59", "2026-13-01T00:00:00", "2026-02-30T00:00:00",
                                   "2026-05-12", "2026-05-12T10:00:00Z"])
def test_a_datetime_the_replay_would_refuse_is_refused_at_the_write(tmp_path, schema, value) -> None:  # type: ignore[no-untyped-def]
    s = _store(tmp_path, schema)
    with pytest.raises(SchemaError, match="timestamp"):
        s.write("t1", [Node("E9", "Event", {"type": "Transaction", "timestamp": value})])
    assert s.get_node("t1", "E9") is None


@pytest.mark.parametrize("year", [1, 999, 1000, 9999])
def test_datetime_objects_of_any_year_are_stored_zero_padded_and_reopen(tmp_path, schema, year) -> None:  # type: ignore[no-untyped-def]
    s = _store(tmp_path, schema)
    s.write("t1", [Node("E9", "Event", {"type": "Transaction", "timestamp": datetime(year, 12, 31, 23, 59, 59)})])
    again = NetworkxGraphStore.open(tmp_path / "graph", schema)
    node = again.get_node("t1", "E9")
    assert node is not None and node.props["timestamp"] == f"{year:04d}-12-31T23:59:59"
    assert again.quarantined == [] and again.value_problems()[2] == []


def _rewrite_header(path: Path, **changes: object) -> None:
    raw = path.read_bytes()
    nl = raw.index(b"\n")
    header = json.loads(raw[:nl])
    header.update(changes)
    path.write_bytes(json.dumps(header).encode() + raw[nl:])


@pytest.mark.parametrize("plen", [10**15, 2**62, 1])
def test_a_forged_payload_len_is_store_corrupt_not_memory_error(tmp_path, schema, plen) -> None:  # type: ignore[no-untyped-def]
    s = _store(tmp_path, schema)
    s.compact()
    _rewrite_header(tmp_path / "graph" / P.SNAPSHOT, payload_len=plen)
    with pytest.raises(StoreCorruptError, match="header says"):
        NetworkxGraphStore.open(tmp_path / "graph", schema)


def test_deep_check_finds_a_bad_value_compacted_into_the_snapshot(tmp_path, schema) -> None:  # type: ignore[no-untyped-def]
    s = _store(tmp_path, schema)
    # what an older hopweave wrote for a year below 1000: a str, so the snapshot's type check passes
    s._st.get("E1")["timestamp"] = "999-12-31T23:59:59"  # type: ignore[index]
    s._st.node["E1"] = s._st.get("E1")  # type: ignore[assignment]
    s.compact()
    again = NetworkxGraphStore.open(tmp_path / "graph", schema)
    nodes, _edges, problems = again.value_problems()
    assert nodes == again.stats()["nodes"] and len(problems) == 1
    assert "'E1'" in problems[0] and "timestamp" in problems[0] and "999-12-31" in problems[0]


@pytest.mark.parametrize("props, needle", [
    ({"summary": "x" * 1_000_001}, "at most 1,000,000"),
    ({"amount": float("nan")}, "finite"),
    ({"amount": float("inf")}, "finite"),
])
def test_strings_over_the_limit_and_nan_are_refused_at_the_write(tmp_path, schema, props, needle) -> None:  # type: ignore[no-untyped-def]
    s = _store(tmp_path, schema)
    with pytest.raises(SchemaError, match=needle):
        s.write("t1", [Node("E9", "Event", {"type": "Transaction", **props})])
    s.write("t1", [Node("E9", "Event", {"type": "Transaction", "summary": "y" * 100_000, "amount": 1e308})])
    again = NetworkxGraphStore.open(tmp_path / "graph", schema)
    assert again.get_node("t1", "E9").props["summary"] == "y" * 100_000  # type: ignore[union-attr]
    assert again.quarantined == [] and again.value_problems()[2] == []
