"""Benchmark: Maria's LateFeeDispute traversals on the DeltaBank graph scaled to N nodes.

    python benchmarks/bench_traverse.py [--nodes 1000000] [--runs 500] [--store DIR] [--reuse] [--out benchmarks/results/traverse_DATE.md]

Measures: load time (generate + validate + insert + snapshot), reopen time (snapshot + journal
replay), p50/p95/max of seed 004's eight patterns run in parallel (``run_goal_patterns``, 8 workers)
and of all the goal's patterns, and peak memory (max RSS of this process). Writes a Markdown
report (machine, command, date, figures). Target: the eight in parallel, p50 <= 10 ms at 1M nodes.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import deltabank_pack  # noqa: F401  (puts the DeltaBank pack's generator on sys.path)
from generator.build import load_deltabank
from generator.maria import AS_OF, CUSTOMER_ID, TENANT
from machine import machine_line

from hopweave.graph import open_graph_store
from hopweave.graph.traverse import run_goal_patterns, seed_entities
from hopweave.models.common import Bindings, Session, to_datetime

EIGHT = ("customer_tier", "customer_account", "recent_transactions", "waiver_events_this_year",
         "last_conversation_outcome", "comparable_precedent", "applicable_workflow", "applicable_rules")


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]




def _time_runs(store, patterns, bindings, runs: int, workers: int) -> dict[str, float]:
    for _ in range(20):  # warm-up (lazy indexes, thread pool)
        run_goal_patterns(store, TENANT, patterns, bindings, max_workers=workers)
    ts = []
    truncated = set()
    for _ in range(runs):
        t = time.perf_counter()
        res = run_goal_patterns(store, TENANT, patterns, bindings, max_workers=workers)
        ts.append((time.perf_counter() - t) * 1000)
        truncated |= {r.pattern for r in res if r.truncated and r.truncated_reason != "limit"}
    return {"p50": _pct(ts, 0.5), "p95": _pct(ts, 0.95), "max": max(ts), "truncated": len(truncated),
            "rows": sum(len(r.rows) for r in res)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--store", default=None, help="store directory (default: a temporary one, removed after)")
    ap.add_argument("--reuse", action="store_true", help="reuse an existing store (skip the load)")
    ap.add_argument("--out", default=None, help="write the Markdown report here")
    args = ap.parse_args()
    tmp = None
    store_dir = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="hopweave-bench-"))
    if not args.store:
        tmp = store_dir
    try:
        load_s = None
        if not args.reuse:
            t, c = time.perf_counter(), time.process_time()
            summary = load_deltabank(store_dir, nodes=args.nodes, with_vectors=False)
            load_s = (time.perf_counter() - t, time.process_time() - c)
            print(f"load: {summary['nodes']:,} nodes, {summary['edges']:,} edges in {load_s[0]:.1f} s "
                  f"({load_s[1]:.1f} s CPU)", flush=True)
        t, c = time.perf_counter(), time.process_time()
        store = open_graph_store(store_dir)
        reopen_s = (time.perf_counter() - t, time.process_time() - c)
        stats = store.stats()
        snap_mb = (store_dir / "graph" / "graph.snapshot").stat().st_size / 2**20
        print(f"reopen: {reopen_s[0]:.1f} s ({reopen_s[1]:.1f} s CPU, {stats['nodes']:,} nodes)", flush=True)
        patterns = store.patterns("LateFeeDispute")
        eight = [p for p in patterns if p.name in EIGHT]
        if len(eight) != 8:
            raise SystemExit(f"expected seed 004's eight patterns, found {[p.name for p in eight]}")
        bindings = Bindings(session=Session(tenant_id=TENANT, customer_id=CUSTOMER_ID), as_of=to_datetime(AS_OF),
                            goal="LateFeeDispute", entities=seed_entities(store, TENANT, "Customer", CUSTOMER_ID))
        results = {
            "eight, 8 workers": _time_runs(store, eight, bindings, args.runs, 8),
            "eight, sequential": _time_runs(store, eight, bindings, args.runs, 1),
            f"all {len(patterns)}, 8 workers": _time_runs(store, patterns, bindings, args.runs, 8),
        }
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        for k, v in results.items():
            print(f"{k}: p50 {v['p50']:.2f} ms, p95 {v['p95']:.2f} ms, max {v['max']:.2f} ms, rows {v['rows']}")
        print(f"peak RSS {peak_mb:,.0f} MiB", flush=True)
        if args.out:
            _report(Path(args.out), args, stats, load_s, reopen_s, snap_mb, results, peak_mb)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _report(out: Path, args, stats, load_s, reopen_s, snap_mb, results, peak_mb) -> None:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    load1 = os.getloadavg()[0]
    lines = [
        "# Benchmark: traversal patterns on the embedded networkx store",
        "",
        f"- Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} (commit {commit or '?'})",
        f"- Machine: {machine_line()}; 1-min load average at the end: {load1:.1f} (shared machine)",
        f"- Command: `python benchmarks/bench_traverse.py {' '.join(sys.argv[1:])}`",
        f"- Graph: DeltaBank example, {stats['nodes']:,} nodes, {stats['edges']:,} edges (seed 4421); "
        f"snapshot {snap_mb:,.0f} MiB",
        "",
        "| Measure | Value |",
        "|---|---|",
        f"| Load (generate + validate + insert + snapshot): wall / CPU | {load_s[0]:.1f} s / {load_s[1]:.1f} s |"
        if load_s is not None else "| Load | (reused store) |",
        f"| Reopen (snapshot + journal): wall / CPU | {reopen_s[0]:.1f} s / {reopen_s[1]:.1f} s |",
    ]
    for k, v in results.items():
        lines.append(f"| {k}: p50 / p95 / max | {v['p50']:.2f} / {v['p95']:.2f} / {v['max']:.2f} ms |")
    lines += [
        f"| Peak memory (max RSS, load + reopen + runs) | {peak_mb:,.0f} MiB |",
        "",
        f"{args.runs} timed runs after 20 warm-up runs; Maria (CUST_4421) at as_of {AS_OF}. Target: the eight "
        "patterns of seed 004 in parallel, p50 <= 10 ms. Wall times on a shared, loaded machine are pessimistic; "
        "CPU seconds show the work itself.",
        "",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
