"""Several processes writing one embedded graph store at once (``hopweave serve --workers N``:
every worker records its decision traces into the same directory): no write is lost, every
one is readable afterwards, and each writer sees the others' records after ``refresh``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from domains import write_deltabank_settings

from hopweave.graph import open_graph_store

WRITES = 150

_WRITER = r"""
import sys
from hopweave.graph import open_graph_store
from hopweave.graph.base import Node, Edge
name, store_dir, n, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
s = open_graph_store(store_dir)
s.get_node("t1", "nothing")  # opened before the other writer starts writing
print("ready", flush=True)
sys.stdin.readline()  # both start together
for i in range(n):
    # one trace per write, like the trace writer's commits: a node and its edge to the customer
    s.write("t1", [Node(f"DT_{name}_{i}", "DecisionTrace", {"kind": "retrieval", "summary": f"{name} {i}"})],
            [Edge(f"DT_{name}_{i}", "CUST_1", "SAW_FACT")])
print("done", flush=True)
sys.stdin.readline()  # the other writer is done too
s.refresh()
seen = sum(1 for nd in s.find_nodes("t1", "DecisionTrace"))
print(seen, flush=True)
"""


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    write_deltabank_settings(tmp_path)
    from hopweave.graph.base import Node

    open_graph_store(tmp_path).write("t1", [Node("CUST_1", "Customer", {})])
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, name, str(tmp_path), str(WRITES), "go"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for name in ("A", "B")]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "done"
        outs = [p.communicate("refresh\n", timeout=240)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0, 0], outs
    # each writer, after refresh, sees both writers' traces
    assert [int(o.strip().splitlines()[-1]) for o in outs] == [2 * WRITES, 2 * WRITES]
    s = open_graph_store(tmp_path)
    ids = {n.id for n in s.find_nodes("t1", "DecisionTrace")}
    assert ids == {f"DT_{w}_{i}" for w in ("A", "B") for i in range(WRITES)}
    g = s.graph
    assert all(g.has_edge(t, "CUST_1", key="SAW_FACT") for t in ids)
