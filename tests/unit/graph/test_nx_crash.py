"""A process killed (SIGKILL) mid-write never leaves a half-written store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from domains import write_deltabank_settings

from hopweave.graph import open_graph_store

_WRITER = r"""
import sys
from hopweave.graph import open_graph_store
from hopweave.graph.base import Node, Edge
mode, store_dir = sys.argv[1], sys.argv[2]
s = open_graph_store(store_dir)
if mode == "journal":
    s.write("_global", [Node("TIER_Gold", "Tier", {"name": "Gold"})])
    i = 0
    while True:
        # one write = a customer, its account and two edges: all or nothing
        s.write("t1", [Node(f"C{i}", "Customer", {"summary": "x" * 2000}), Node(f"A{i}", "Account", {})],
                [Edge(f"C{i}", f"A{i}", "HOLDS"), Edge(f"C{i}", "TIER_Gold", "HAS_TIER")])
        if i == 20:
            print("ready", flush=True)
        i += 1
else:
    def items(gen):
        for i in range(30000):
            yield Node(f"G{gen}_{i}", "Customer", {"summary": "y" * 50})
    gen = 0
    while True:
        with s.bulk(replace=True) as b:
            b.write("t1", items(gen))
        print("ready", flush=True)
        gen += 1
"""


def _run_and_kill(tmp_path: Path, mode: str, delay: float) -> None:
    write_deltabank_settings(tmp_path)  # the store's schema, read by every open_graph_store below
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, mode, str(tmp_path)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == b"ready", line
        time.sleep(delay)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


@pytest.mark.parametrize("delay", [0.05, 0.3])
def test_sigkill_during_journal_writes_leaves_a_consistent_store(tmp_path, delay):
    _run_and_kill(tmp_path, "journal", delay)
    s = open_graph_store(tmp_path)
    customers = {n.id for n in s.find_nodes("t1", "Customer")}
    accounts = {n.id for n in s.find_nodes("t1", "Account")}
    assert len(customers) > 20
    # every committed write is complete: a customer always comes with its account and edges
    assert {c[1:] for c in customers} == {a[1:] for a in accounts}
    g = s.graph
    for c in customers:
        assert g.has_edge(c, "A" + c[1:], key="HOLDS") and g.has_edge(c, "TIER_Gold", key="HAS_TIER")
    # and the store stays writable after the crash
    from hopweave.graph.base import Node

    s.write("t1", [Node("AFTER", "Customer", {})])
    assert open_graph_store(tmp_path).get_node("t1", "AFTER") is not None


def test_sigkill_during_snapshot_rewrite_leaves_the_previous_snapshot(tmp_path):
    _run_and_kill(tmp_path, "bulk", 0.15)
    s = open_graph_store(tmp_path)
    ids = [n.id for n in s.find_nodes("t1", "Customer")]
    # exactly one complete generation: the last committed bulk load, never a mix or a prefix
    assert len(ids) == 30000
    assert len({i.split("_")[0] for i in ids}) == 1
    # the next commit removes the killed writer's temporary file
    s.compact()
    assert not list((tmp_path / "graph").glob(".*.tmp"))
