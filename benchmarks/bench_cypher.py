"""Maria's eight patterns in parallel: FalkorDB (compiled Cypher) vs networkx (native walker).

Run in the Python 3.12 environment that has falkordblite (see .ci/falkordb.sh):

    .venv312/bin/python benchmarks/bench_cypher.py --nodes 1000000 --runs 200 \\
        --out benchmarks/results/cypher_DATE.md

Both stores hold the same DeltaBank graph (same generator and seed). For each store the goal's
eight seed-004 patterns run through ``graph.traverse.run_goal_patterns`` (a thread per pattern,
each with its shipped budget) ``--runs`` times after a warm-up; the wall time of each parallel
run is recorded, and p50/p95 reported, with per-pattern p50s, truncations, and whether the two
stores returned the same facts. Results are written as markdown to ``--out``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import deltabank_pack  # noqa: E402,F401  (puts the DeltaBank pack's generator on sys.path)
from generator.build import PACK_DIR, deltabank_batches  # noqa: E402
from generator.maria import AS_OF, CUSTOMER_ID, TENANT  # noqa: E402

import hopweave  # noqa: E402
from hopweave.graph.traverse import run_goal_patterns, seed_entities  # noqa: E402
from hopweave.models.common import Bindings, Session, to_datetime  # noqa: E402
from hopweave.models.schema import GraphSchema  # noqa: E402

NOTE = (
    "Reading: *alone*, a FalkorDB pattern costs one Unix-socket round trip to an index-anchored "
    "query (`MATCH (s:Label {key: $seed}) WITH s MATCH ...`), 1-2.5 ms here; *in parallel* the eight "
    "client threads, the GIL and FalkorDB's query threads share 2 cores, so each pattern waits for the "
    "others and the parallel wall time is close to the sum. networkx walks in-process and needs no "
    "round trip. Budget cuts are counted above."
)
EIGHT = (
    "customer_tier",
    "customer_account",
    "recent_transactions",
    "waiver_events_this_year",
    "last_conversation_outcome",
    "comparable_precedent",
    "applicable_workflow",
    "applicable_rules",
)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def measure(store: Any, patterns: list[Any], bindings: Bindings, runs: int, warmup: int) -> dict[str, Any]:
    per: dict[str, list[float]] = {p.name: [] for p in patterns}
    walls: list[float] = []
    truncated: dict[str, int] = {p.name: 0 for p in patterns}
    last = None
    for i in range(warmup + runs):
        t0 = time.perf_counter()
        res = run_goal_patterns(store, TENANT, patterns, bindings)
        wall = (time.perf_counter() - t0) * 1000
        if i >= warmup:
            walls.append(wall)
            for r in res:
                per[r.pattern].append(r.elapsed_ms)
                truncated[r.pattern] += int(r.truncated and r.truncated_reason != "limit")
        last = res
    seq: dict[str, list[float]] = {p.name: [] for p in patterns}
    for _ in range(max(runs // 4, 10)):  # one pattern at a time: no thread contention
        for p in patterns:
            t1 = time.perf_counter()
            store.run_pattern(TENANT, p, bindings, deadline=time.perf_counter() + 5.0)
            seq[p.name].append((time.perf_counter() - t1) * 1000)
    return {
        "walls": walls,
        "per": per,
        "seq": seq,
        "truncated": truncated,
        "facts": {r.pattern: [x.node_id for x in r.rows] for r in last or []},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    schema = GraphSchema.load(PACK_DIR / "schema.yaml")  # the pack's schema merged onto the base
    t0 = time.perf_counter()
    nx = hopweave.open(graph=":memory:", schema=schema, graph_only=True).graph
    with nx.bulk(replace=True) as bulk:
        for tenant, items in deltabank_batches(nodes=args.nodes):
            bulk.write(tenant, items)
    nx_load = time.perf_counter() - t0
    stats = nx.stats()
    print(
        f"networkx: {stats['nodes']:,} nodes, {stats['edges']:,} edges loaded in {nx_load:.0f} s", flush=True
    )

    tmp = Path(tempfile.mkdtemp(prefix="hopweave-bench-falkordb-"))
    fk = hopweave.open(graph=f"falkordblite://{tmp}", schema=schema, create=True, graph_only=True).graph
    try:
        t0 = time.perf_counter()
        n_nodes, n_edges = fk.bulk_load(deltabank_batches(nodes=args.nodes), replace=True)
        fk_load = time.perf_counter() - t0
        print(f"falkordb: {n_nodes:,} nodes, {n_edges:,} edges loaded in {fk_load:.0f} s", flush=True)
        gc.collect()

        patterns = [p for p in nx.patterns("LateFeeDispute") if p.name in EIGHT]
        assert sorted(p.name for p in patterns) == sorted(EIGHT), "the shipped goal lost a seed-004 pattern"
        bindings = Bindings(
            session=Session(tenant_id=TENANT, customer_id=CUSTOMER_ID, region="US"),
            as_of=to_datetime(AS_OF),
            goal="LateFeeDispute",
            entities=seed_entities(nx, TENANT, "Customer", CUSTOMER_ID),
        )
        results = {}
        for name, store in (("networkx", nx), ("FalkorDB", fk)):
            results[name] = measure(store, patterns, bindings, args.runs, args.warmup)
            results[name]["load"] = os.getloadavg()[0]
            w = results[name]["walls"]
            print(
                f"{name}: p50 {statistics.median(w):.2f} ms, p95 {pct(w, 0.95):.2f} ms over {len(w)} runs",
                flush=True,
            )
        same = results["networkx"]["facts"] == results["FalkorDB"]["facts"]
        raw = Path(tempfile.gettempdir()) / "bench_cypher_raw.json"
        raw.write_text(json.dumps({"stats": stats, "loads": [nx_load, fk_load], "results": results}, default=str))
        print(f"raw results: {raw}")
        print(f"same facts on both stores: {same}")
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(
                report(args, stats, n_nodes, n_edges, nx_load, fk_load, results, same), encoding="utf-8"
            )
            print(f"wrote {args.out}")
    finally:
        fk.close()


def results_load(results: dict[str, Any]) -> str:
    return ", ".join(f"{name} {r['load']:.1f}" for name, r in results.items())


def report(
    args: Any,
    stats: dict[str, Any],
    n_nodes: int,
    n_edges: int,
    nx_load: float,
    fk_load: float,
    results: dict[str, Any],
    same: bool,
) -> str:
    from importlib.metadata import version

    import falkordb  # noqa: F401  (version below)

    lines = [
        "# Cypher backend benchmark: Maria's eight patterns in parallel",
        "",
        f"Graph: DeltaBank example, `--nodes {args.nodes}` → {stats['nodes']:,} nodes, {stats['edges']:,} edges "
        f"(FalkorDB loaded {n_nodes:,} nodes / {n_edges:,} edges).",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, falkordblite "
        f"{version('falkordblite')}, falkordb client {version('falkordb')}, networkx {version('networkx')}; "
        f"peak RSS of the benchmark process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB "
        "(FalkorDB's server is a separate process).",
        f"Load time: networkx bulk {nx_load:.0f} s; FalkorDB `bulk_load` (UNWIND batches of 5,000) {fk_load:.0f} s.",
        "",
        f"Each run = `run_goal_patterns` over the eight seed-004 patterns (one thread each, shipped budgets "
        f"50-80 ms), {args.runs} runs after {args.warmup} warm-up runs, same process. Load average while "
        f"measuring: {results_load(results)} (the machine is shared: other processes compete for the 2 cores).",
        "",
        "| store | p50 (ms) | p95 (ms) | max (ms) | budget cuts |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, r in results.items():
        w = r["walls"]
        lines.append(
            f"| {name} | {statistics.median(w):.2f} | {pct(w, 0.95):.2f} | {max(w):.2f} | "
            f"{sum(r['truncated'].values())} |"
        )
    lines += [
        "",
        "Per pattern, p50 in ms: *in parallel* = the pattern's own elapsed time inside the parallel runs; "
        "*alone* = the same pattern run by itself (one thread, no contention).",
        "",
        "| pattern | rows | networkx in parallel | FalkorDB in parallel | networkx alone | FalkorDB alone |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in EIGHT:
        rows = len(results["networkx"]["facts"].get(name, []))
        nx_r, fk_r = results["networkx"], results["FalkorDB"]
        lines.append(
            f"| {name} | {rows} | {statistics.median(nx_r['per'][name]):.2f} | "
            f"{statistics.median(fk_r['per'][name]):.2f} | {statistics.median(nx_r['seq'][name]):.2f} | "
            f"{statistics.median(fk_r['seq'][name]):.2f} |"
        )
    lines += [
        "",
        f"Same facts (node ids, in order) on both stores: **{'yes' if same else 'NO'}**.",
        "",
        NOTE,
        "",
        "Reproduce: `.venv312/bin/python benchmarks/bench_cypher.py --nodes 1000000 --runs 200 "
        "--out benchmarks/results/cypher_DATE.md` (the 3.12 environment of `.ci/falkordb.sh`).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
