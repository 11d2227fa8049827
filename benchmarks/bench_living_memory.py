"""Living memory: recorded outcomes and run-time facts per second (group commit), and Maria's warm
retrieval with a precedent hub of N decided traces on one similar profile.

    python benchmarks/bench_living_memory.py [--nodes 3000] [--threads 32] [--writes 2000] [--hub 100000] [--json]

Steps on a fresh DeltaBank store (its generator, ``--nodes``):

1. ``--traces`` retrievals of Maria at distinct as_of (the traces to decide), then ``--writes``
   ``record_outcome`` calls from ``--threads`` threads (alternating outcomes: each call after the
   first on a trace is an amendment, a real write), and the same count sequentially from one thread;
2. ``--writes`` ``write_facts`` calls (one new Event node and its HAS_EVENT edge each) from
   ``--threads`` threads;
3. Maria's warm retrieval p50 (``--reps`` runs, traces recorded) before and after ``--hub``
   decided traces (``kind: precedent``, Platinum, LateFeeDispute, a year of timestamps) are linked
   ``RESULTED_IN`` from PROFILE_CUST_5104, which Maria's profile is ``SIMILAR_TO``; and the
   ``comparable_precedent`` pattern's elapsed ms and visited count on that hub.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "deltabank"))
sys.path.insert(0, str(ROOT / "tests" / "shared"))

from domains import DELTABANK_REGISTRY, MARIA, UTTERANCE  # noqa: E402
from generator.build import load_deltabank  # noqa: E402

from hopweave.engine.engine import Engine  # noqa: E402
from hopweave.graph.base import Edge, Node  # noqa: E402

AS_OF = "2026-11-30T12:00:00"


def _rate(n: int, work, threads: int) -> float:
    t = time.perf_counter()
    if threads == 1:
        for i in range(n):
            work(i)
    else:
        with ThreadPoolExecutor(threads) as ex:
            list(ex.map(work, range(n)))
    return n / (time.perf_counter() - t)


def _p50(engine: Engine, reps: int) -> tuple[float, dict]:
    times, last = [], None
    for i in range(reps):
        t = time.perf_counter()
        last = engine.retrieve(UTTERANCE, session=MARIA, as_of=f"2026-11-30T12:{i // 60:02d}:{i % 60:02d}")
        times.append((time.perf_counter() - t) * 1000)
    prec = next((f for f in last.facts if f.pattern == "comparable_precedent"), None) if last else None
    info = {"precedent_ms": prec.elapsed_ms if prec else None, "precedent_visited": prec.visited if prec else None,
            "precedent_truncated": prec.truncated_reason if prec else None,
            "precedent_items": [p.trace_id for p in last.precedent if p.in_context] if last else []}
    return statistics.median(times), info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=3000)
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--traces", type=int, default=200)
    ap.add_argument("--writes", type=int, default=2000)
    ap.add_argument("--hub", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out: dict = {"args": vars(a)}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "store"
        load_deltabank(d, nodes=a.nodes)
        eng = Engine.open(d, domains=DELTABANK_REGISTRY)
        eng.warmup()
        base = datetime(2026, 6, 1)
        ids = [eng.retrieve(UTTERANCE, session=MARIA, as_of=(base + timedelta(hours=3 * i)).isoformat(),
                            budget_ms=5000).trace_id for i in range(a.traces)]
        outcomes = ("fee_waived", "declined", "escalated")

        def decide(i: int) -> None:
            eng.record_outcome(ids[i % len(ids)], session=MARIA, outcome=outcomes[(i // len(ids)) % 3],
                               decided_by="bench", rationale=f"case {i}", as_of="2026-11-01T00:00:00")

        rounds0 = eng.trace_writer.writes
        out["record_outcome_per_s"] = round(_rate(a.writes, decide, a.threads), 1)
        out["record_outcome_rounds"] = eng.trace_writer.writes - rounds0
        out["record_outcome_sequential_per_s"] = round(
            _rate(min(a.writes, 300), lambda i: decide(a.writes + i), 1), 1)

        def fact(i: int) -> None:
            nid = f"EVT_BENCH_{i:06d}"
            eng.write_facts("deltabank", [Node(nid, "Event", {"type": "Transaction", "amount": 1.0 + i % 7,
                                                               "timestamp": "2026-11-20T10:00:00", "on_time": True})],
                            [Edge("ACCT_99812", nid, "HAS_EVENT")], source="bench")

        out["write_facts_per_s"] = round(_rate(a.writes, fact, a.threads), 1)

        before, info_before = _p50(eng, a.reps)
        t = time.perf_counter()
        step = timedelta(seconds=max(1, int(365 * 86400 / max(1, a.hub))))
        for lo in range(0, a.hub, 5000):
            nodes, edges = [], []
            for i in range(lo, min(a.hub, lo + 5000)):
                at = (datetime(2025, 11, 1) + step * i).isoformat(timespec="seconds")
                nid = f"DEC_BENCH_{i:06d}"
                nodes.append(Node(nid, "DecisionTrace", {
                    "kind": "precedent", "case_type": "LateFeeDispute", "goal": "LateFeeDispute", "tier": "Platinum",
                    "outcome": outcomes[i % 3], "amount": float(20 + i % 40), "waivers_this_year": i % 2,
                    "on_time_percent": float(70 + i % 30), "timestamp": at, "recorded_at": at,
                    "text": f"LateFeeDispute case: Platinum, {i % 2}/year, ${20 + i % 40} fee → {outcomes[i % 3]}.",
                    "summary": f"Platinum, {i % 2}/year, ${20 + i % 40} fee → {outcomes[i % 3]}"}))
                edges.append(Edge("PROFILE_CUST_5104", nid, "RESULTED_IN", {"recorded_at": at}))
            eng.graph.write("deltabank", nodes, edges)
        out["hub_write_s"] = round(time.perf_counter() - t, 1)
        eng.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF)  # the first walk builds the hub's order index
        after, info_after = _p50(eng, a.reps)
        out.update(warm_p50_ms_before=round(before, 1), warm_p50_ms_with_hub=round(after, 1),
                   ratio=round(after / before, 3), before=info_before, with_hub=info_after)
        eng.close()
    print(json.dumps(out, indent=2) if a.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
