"""The deterministic DeltaBank generator: (tenant, items) batches in dependency order, written
as the pack's graph files (the pack's documented generator step)::

    python examples/deltabank/generator/generate.py --out examples/deltabank/graph [--nodes N] [--seed S]

writes ``vocabulary.jsonl`` (the shared vocabulary), ``deltabank.jsonl`` and
``northbank.jsonl`` in the JSONL graph format of docs/packs.md (``hopweave load`` reads them).

Same ``nodes`` and ``seed`` => the same items in the same order (no wall clock, no hash order).
Batches:

1. ``_global``: the shared vocabulary (tiers, products, event/policy types, regions, concepts);
2. ``deltabank``: procedural memory, Maria's case, its precedent and traps, then the population
   up to ``nodes`` nodes in total;
3. ``northbank``: a small second tenant (with its own "Maria Lopez", NB_CUST_4421, and its own
   LateFeeDispute case type and rules) for isolation tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:  # run as a script: import the package by its folder
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = "generator"  # noqa: A001

import json
import random
from typing import Iterable, Iterator

from hopweave.graph.base import Edge, Node
from hopweave.models.schema import GLOBAL_TENANT

from .maria import maria, precedent
from .population import population
from .vocabulary import procedural, vocabulary

Item = Node | Edge

OTHER_TENANT = "northbank"
DEFAULT_NODES = 20_000
DEFAULT_SEED = 4421
#: Customers of the second tenant (small on purpose).
NORTHBANK_CUSTOMERS = 40


def northbank_case() -> Iterator[Item]:
    """Northbank's own Maria Lopez (same name and tier, another bank) with a late fee and a trace."""
    yield Node("NB_CUST_4421", "Customer", {"name": "Maria Lopez", "tier": "Platinum", "tier_since": "2021-01-05",
                                            "region": "US", "segment": "retail",
                                            "summary": "NB_CUST_4421, Platinum tier since 2021-01-05, region US"})
    yield Edge("NB_CUST_4421", "TIER_Platinum", "HAS_TIER")
    yield Node("NB_ACCT_4421", "Account", {"type": "credit", "product": "Platinum_Card", "balance": 999.0,
                                           "currency": "USD", "opened": "2021-01-05", "status": "active",
                                           "summary": "Account NB_ACCT_4421, credit, balance $999"})
    yield Edge("NB_CUST_4421", "NB_ACCT_4421", "HOLDS")
    yield Node("NB_EVT_4421_LATEFEE", "Event", {"type": "LateFeeCharged", "amount": 39.0,
                                                "timestamp": "2026-05-10T08:00:00", "year": 2026, "status": "charged",
                                                "summary": "LateFeeCharged $39 on 2026-05-10 (northbank)"})
    yield Edge("NB_ACCT_4421", "NB_EVT_4421_LATEFEE", "HAS_EVENT")
    yield Node("NB_PROFILE_4421", "CustomerProfile", {"tier": "Platinum", "on_time_ratio": 0.99, "waivers_this_year": 0,
                                                      "summary": "Platinum, 0 waivers this year, 99% on-time"})
    yield Node("NB_PROFILE_77", "CustomerProfile", {"tier": "Platinum", "on_time_ratio": 0.97, "waivers_this_year": 0,
                                                    "summary": "Platinum, 0 waivers this year, 97% on-time"})
    yield Edge("NB_CUST_4421", "NB_PROFILE_4421", "HAS_PROFILE")
    yield Edge("NB_PROFILE_4421", "NB_PROFILE_77", "SIMILAR_TO")
    yield Node("NB_TRACE_77", "DecisionTrace", {
        "kind": "precedent", "case_type": "LateFeeDispute", "goal": "LateFeeDispute", "tier": "Platinum",
        "event_type": "LateFeeCharged", "outcome": "fee_waived", "amount": 39.0, "waivers_this_year": 0,
        "on_time_ratio": 0.97, "timestamp": "2026-03-01T10:00:00", "customer_id": "NB_CUST_77",
        "text": "Northbank: Platinum customer disputed a $39 late fee; waived.",
        "summary": "Northbank precedent: Platinum, 0/year, 97% on-time, $39 fee → waived"})
    yield Edge("NB_PROFILE_77", "NB_TRACE_77", "RESULTED_IN")


def _chain(*its: Iterator[Item]) -> Iterator[Item]:
    for it in its:
        yield from it


def generate(nodes: int = DEFAULT_NODES, seed: int = DEFAULT_SEED) -> Iterator[tuple[str, Iterator[Item]]]:
    """Yield ``(tenant_id, items)`` batches; the deltabank population is sized so the batches
    hold about ``nodes`` nodes in total (never fewer than the fixed cases, ~1,500 nodes).
    Consume each batch before the next (the population is a generator)."""
    vocab = list(vocabulary())
    fixed = list(_chain(procedural(""), maria(), precedent()))
    nb = list(_chain(procedural("NB_"), northbank_case(), population("NB_", NORTHBANK_CUSTOMERS, random.Random(seed + 1))))
    budget = nodes - sum(isinstance(x, Node) for x in (*vocab, *fixed, *nb))
    yield GLOBAL_TENANT, iter(vocab)
    rng = random.Random(seed)
    yield "deltabank", _chain(iter(fixed), population("", None, rng, node_budget=max(budget, 0)))
    yield OTHER_TENANT, iter(nb)


#: Graph file of each batch's tenant (the pack manifest's `graph:` entries name the same files).
GRAPH_FILES = {GLOBAL_TENANT: "vocabulary.jsonl", "deltabank": "deltabank.jsonl", OTHER_TENANT: "northbank.jsonl"}


def record(item: Item) -> str:
    """One JSONL line (no newline) of the pack graph format."""
    if isinstance(item, Node):
        rec: dict = {"node": item.id, "label": item.label, "properties": item.props}
    else:
        rec = {"edge": item.type, "from": item.src, "to": item.dst}
        if item.props:
            rec["properties"] = item.props
    return json.dumps(rec, ensure_ascii=False, separators=(",", ":"))


def write_graph_files(out_dir: str | Path, nodes: int = DEFAULT_NODES, seed: int = DEFAULT_SEED,
                      batches: Iterable[tuple[str, Iterator[Item]]] | None = None) -> dict[str, int]:
    """Write the generated graph into ``out_dir`` (created) as the pack's graph files.
    Returns the number of records per file name. Same nodes + seed => byte-identical files."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    header = f"# DeltaBank graph, generated by generator/generate.py --nodes {nodes} --seed {seed}; do not edit\n"
    for tenant, items in (batches if batches is not None else generate(nodes=nodes, seed=seed)):
        name = GRAPH_FILES[tenant]
        n = 0
        with open(out / name, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(header)
            for it in items:
                fh.write(record(it) + "\n")
                n += 1
        counts[name] = n
    return counts


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description="Write the DeltaBank pack's graph files.")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "graph"),
                    help="output folder (default: the pack's graph/)")
    ap.add_argument("--nodes", type=int, default=DEFAULT_NODES, help="about this many nodes in total")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    a = ap.parse_args(argv)
    counts = write_graph_files(a.out, a.nodes, a.seed)
    print(json.dumps({"out": a.out, "records": counts}))


if __name__ == "__main__":
    main()
