"""Reopen time of the networkx store: the retired pickle snapshot vs the JSON + sha256 format.

Builds one synthetic graph in memory (``--nodes`` total: customers, accounts, events with
HAS_TIER / HOLDS / HAS_EVENT edges, the DeltaBank shape), writes it in both formats and times
reading each back into the store's in-memory structures (the pickle path as the store did before
format 2: ``pickle.load`` with the GC off; the JSON path is ``_persist.read_snapshot``, which also
checks the checksum and validates every node and edge against the schema), plus a full
``NetworkxGraphStore.open``. Each read runs in a fresh subprocess (a cold interpreter, like a CLI
call). Prints one JSON object.

    PYTHONPATH=src python benchmarks/bench_store_format.py --nodes 1000000 --dir /tmp/fmt
"""

from __future__ import annotations

import argparse
import gc
import json
import pickle
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import machine  # noqa: E402

from hopweave.graph import _persist as P  # noqa: E402
from hopweave.graph._nx_state import State  # noqa: E402

_TIERS = ("Platinum", "Gold", "Silver", "Standard")


def build(nodes: int) -> State:
    """A graph of ``nodes`` nodes: 10% customers, 20% accounts, 70% events (tenant t1)."""
    st = State()
    for t in _TIERS:
        st.upsert_node(f"TIER_{t}", "Tier", {"name": t, "tenant_id": "_global"}, ())
    n_c, n_a = nodes // 10, nodes // 5
    n_e = nodes - n_c - n_a - len(_TIERS)
    for i in range(n_c):
        st.upsert_node(f"C{i}", "Customer", {"name": f"Customer {i}", "tier": _TIERS[i % 4],
                                            "summary": f"customer {i} since 2019", "tenant_id": "t1"}, ())
        st.upsert_edge(f"C{i}", "HAS_TIER", f"TIER_{_TIERS[i % 4]}", {})
    for i in range(n_a):
        st.upsert_node(f"A{i}", "Account", {"type": "credit", "balance": float(i % 5000), "tenant_id": "t1"}, ())
        st.upsert_edge(f"C{i % n_c}", "HOLDS", f"A{i}", {})
    for i in range(n_e):
        st.upsert_node(f"E{i}", "Event", {"type": "Transaction", "timestamp": f"2026-0{1 + i % 9}-01T10:00:00",
                                          "year": 2026, "amount": float(i % 997), "tenant_id": "t1"}, ())
        st.upsert_edge(f"A{i % n_a}", "HAS_EVENT", f"E{i}", {})
    return st


def write_pickle(path: Path, st: State) -> None:
    """The pre-format-2 snapshot: 512-byte JSON header + pickle of the store's dicts."""
    payload = {"node": st.node, "succ": st.succ, "pred": st.pred, "by_label": st.by_label}
    with open(path, "wb") as f:
        f.write(b" " * 512)
        pickle.dump(payload, f, protocol=pickle.HIGHEST_PROTOCOL)
        head = json.dumps({"magic": "hopweave-networkx-snapshot", "format": 1,
                           "payload_len": f.tell() - 512}).encode()
        f.seek(0)
        f.write(head + b"\n")


_READ = r"""
import gc, json, pickle, sys, time
from pathlib import Path
kind, path = sys.argv[1], Path(sys.argv[2])
t = time.perf_counter(); c = time.process_time()
if kind == "pickle":
    with open(path, "rb") as f:
        f.seek(512)
        gc.disable()
        payload = pickle.load(f)
        gc.enable()
    n = len(payload["node"])
elif kind == "json":
    from hopweave.graph import _persist as P
    from hopweave.graph._nx_state import State
    from hopweave.models.schema import GraphSchema
    schema = GraphSchema.load(Path(sys.argv[3]) / "schema.yaml")  # the DeltaBank pack's (Tier, Customer, ...)
    t = time.perf_counter(); c = time.process_time()
    st = State(P.read_snapshot(path.parent, schema))
    n = len(st.node)
else:
    from hopweave.graph.networkx_store import NetworkxGraphStore
    from hopweave.models.schema import GraphSchema
    schema = GraphSchema.load(Path(sys.argv[3]) / "schema.yaml")
    t = time.perf_counter(); c = time.process_time()
    n = NetworkxGraphStore.open(path.parent, schema=schema).stats()["nodes"]
print(json.dumps({"wall_s": round(time.perf_counter() - t, 2), "cpu_s": round(time.process_time() - c, 2), "nodes": n}))
"""


def read(kind: str, path: Path) -> dict[str, Any]:
    pack = Path(__file__).resolve().parents[1] / "examples" / "deltabank"
    out = subprocess.run([sys.executable, "-c", _READ, kind, str(path), str(pack)], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--dir", type=Path, required=True, help="scratch directory (two snapshot files)")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    gc.disable()
    t = time.perf_counter()
    st = build(args.nodes)
    build_s = time.perf_counter() - t
    pkl, new_dir = args.dir / "snapshot.pkl", args.dir / "graph"
    t = time.perf_counter()
    write_pickle(pkl, st)
    pkl_write = time.perf_counter() - t
    t = time.perf_counter()
    # format 2 (one JSON object), the format this comparison chose; format 3 (columns) is timed
    # by bench_cold_start.py (docs/BENCHMARKS.md, issue 13)
    P.write_snapshot(new_dir, st.node, st.succ, {"last_seq": 1, "nodes": len(st.node), "edges": st.edge_count},
                     fmt=P.JSON_FORMAT)
    json_write = time.perf_counter() - t
    del st
    gc.enable()
    result = {
        "machine": machine(), "nodes": args.nodes, "build_s": round(build_s, 1),
        "pickle": {"bytes": pkl.stat().st_size, "write_s": round(pkl_write, 2), "read": read("pickle", pkl)},
        "json": {"bytes": (new_dir / P.SNAPSHOT).stat().st_size, "write_s": round(json_write, 2),
                 "read": read("json", new_dir / P.SNAPSHOT), "store_open": read("open", new_dir / P.SNAPSHOT)},
        "date": time.strftime("%Y-%m-%d"),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
