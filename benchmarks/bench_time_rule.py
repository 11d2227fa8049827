"""Benchmark: what the time rule costs the networkx walker (issue 14).

    python benchmarks/bench_time_rule.py --store DIR [--rounds 6] [--runs 100]

Runs every LateFeeDispute pattern for Maria (CUST_4421) at as_of 2026-05-12 on a loaded DeltaBank
store (``hopweave load examples/deltabank --store DIR``), with the time rule (every node known and
in force at as_of, every edge known: docs/engine.md, "Time") and timeless (``Bindings.timeless``,
the inspection views' walk, which returns more rows: later events, other revisions). Prints the
best of ``--rounds`` rounds of ``--runs`` goal runs, in CPU milliseconds per goal run (CPU time
is steadier than wall time on a shared machine), and the machine line.
"""

from __future__ import annotations

import argparse
import time

import deltabank_pack  # noqa: F401  (puts the DeltaBank pack's generator on sys.path)
from generator.maria import AS_OF, CUSTOMER_ID, TENANT
from machine import machine_line

from hopweave.graph import open_graph_store
from hopweave.graph.traverse import seed_entities
from hopweave.models.common import Bindings, Session, to_datetime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", required=True, help="a store loaded with examples/deltabank")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--runs", type=int, default=100)
    args = ap.parse_args()
    store = open_graph_store(args.store, read_only=True)
    patterns = [p.model_copy(update={"budget_ms": 5_000}) for p in store.patterns("LateFeeDispute")]
    entities = seed_entities(store, TENANT, "Customer", CUSTOMER_ID)
    best = {False: float("inf"), True: float("inf")}
    rows = {False: 0, True: 0}
    for _ in range(args.rounds):
        for timeless in (False, True):
            b = Bindings(session=Session(tenant_id=TENANT, customer_id=CUSTOMER_ID), as_of=to_datetime(AS_OF),
                         goal="LateFeeDispute", entities=entities, timeless=timeless)
            t = time.process_time()
            for _ in range(args.runs):
                rows[timeless] = sum(len(store.run_pattern(TENANT, p, b).rows) for p in patterns)
            best[timeless] = min(best[timeless], (time.process_time() - t) * 1000 / args.runs)
    store.close()
    print(f"{len(patterns)} LateFeeDispute patterns, Maria at {AS_OF}, best of {args.rounds} x {args.runs} "
          f"(CPU ms per goal run): time rule {best[False]:.2f} ms ({rows[False]} rows), "
          f"timeless {best[True]:.2f} ms ({rows[True]} rows)")
    print(machine_line())


if __name__ == "__main__":
    main()
