"""Build the DeltaBank example store and run Maria's LateFeeDispute traversals.

    python examples/deltabank/generate.py [--store .hopweave/store] [--nodes 20000] [--seed 4421] [--no-vectors]

The same as ``hopweave load examples/deltabank`` followed by
``hopweave traverse --goal LateFeeDispute --seed CUST_4421 --as-of 2026-05-12``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hopweave.deltabank import AS_OF, CUSTOMER_ID, TENANT
from hopweave.deltabank.load import load_deltabank
from hopweave.graph import open_graph_store
from hopweave.graph.traverse import run_goal_patterns, seed_entities
from hopweave.models.common import Bindings, Session, to_datetime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", default=".hopweave/store")
    ap.add_argument("--nodes", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=4421)
    ap.add_argument("--no-vectors", action="store_true", help="graph only (skip embedding the corpus)")
    args = ap.parse_args()
    summary = load_deltabank(args.store, nodes=args.nodes, seed=args.seed,
                             example_dir=Path(__file__).resolve().parent, with_vectors=not args.no_vectors)
    print(json.dumps({k: summary[k] for k in ("nodes", "edges", "goals", "patterns", "seconds")}))
    store = open_graph_store(args.store)
    bindings = Bindings(session=Session(tenant_id=TENANT, customer_id=CUSTOMER_ID), as_of=to_datetime(AS_OF),
                        goal="LateFeeDispute", entities=seed_entities(store, TENANT, "Customer", CUSTOMER_ID))
    for r in run_goal_patterns(store, TENANT, store.patterns("LateFeeDispute"), bindings):
        print(f"{r.pattern} v{r.version}: {r.sub_question} ({r.elapsed_ms:.2f} ms)")
        for row in r.rows[:5]:
            print(f"    {row.node_id}: {row.properties.get('summary', '')}")


if __name__ == "__main__":
    main()
