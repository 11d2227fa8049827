"""Benchmark: months of DeltaBank operation simulated, then consolidated into heuristics.

    python benchmarks/bench_learning.py [--cases 5000] [--held 300] [--store DIR] [--out FILE]

Builds a DeltaBank store (3,000 generated nodes, the engine tests' size) in ``--store`` (kept for
``hopweave consolidate`` / ``pattern-report`` afterwards), writes ``--cases + --held`` simulated
customers (examples/deltabank/generator/simulate.py, seed 4421, noise 0.05), plays ``--cases``
cases through the engine (retrieve, rule decision, ``record_outcome``), then ``--held`` held-back
cases (retrieve only). Reports: cases per second; for the held-back cases, how often the top-3
precedent rows share the ground-truth outcome (any of the three, and their majority) against the
three shipped traces' majority outcome alone; consolidation at the default support (its
heuristics, precision and recall against the pack's rules, seconds). Writes a JSON report.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

from deltabank_pack import PACK_DIR  # noqa: F401  (puts the pack's generator on sys.path)
from machine import machine

from hopweave.engine import consolidate as C
from hopweave.engine.engine import Engine
from hopweave.engine.replay import REPLAY_CONFIG

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "shared"))
from domains import DELTABANK_REGISTRY  # noqa: E402

SHIPPED = ("TRACE_8514", "TRACE_8702", "TRACE_8108")


def main() -> None:
    from generator import simulate as S
    from generator.build import load_deltabank

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=5000)
    ap.add_argument("--held", type=int, default=300)
    ap.add_argument("--store", default="/tmp/hopweave-living-memory")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    store = Path(args.store)
    shutil.rmtree(store, ignore_errors=True)
    t0 = time.perf_counter()
    load_deltabank(store, nodes=3000)
    eng = Engine.open(store, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG)
    eng.warmup()
    all_cases = S.cases(args.cases + args.held)
    S.write_cases(eng.graph, all_cases, held_from=args.cases)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    sim = S.play(eng, all_cases[:args.cases],
                 progress=lambda k: print(f"{k} cases", flush=True) if k % 500 == 0 else None)
    play_s = time.perf_counter() - t0
    held = S.play(eng, all_cases[args.cases:], decide=False)
    shipped = [eng.graph.get_node("deltabank", t) for t in SHIPPED]
    shipped_major = Counter(str(n.props.get("outcome")) for n in shipped if n is not None).most_common(1)[0][0]
    any3 = sum(p.truth in p.precedent_outcomes for p in held.played)
    major3 = sum(bool(p.precedent_outcomes) and Counter(p.precedent_outcomes).most_common(1)[0][0] == p.truth
                 for p in held.played)
    base = sum(p.truth == shipped_major for p in held.played)
    goal = {g.name: g for g in eng.graph.goal_types()}[S.GOAL]
    assert goal.outcomes is not None
    t0 = time.perf_counter()
    decided = C.decided_cases(eng.graph, S.TENANT, goal)
    mined = C.mine(decided, goal.name, list(goal.outcomes.keep))
    mine_s = time.perf_counter() - t0
    rec = S.recovery(mined, sim.played)
    eng.close()
    n_held = max(len(held.played), 1)
    report = {
        "machine": machine(), "cases": args.cases, "decided": len(decided), "held": len(held.played),
        "noise": 0.05, "noisy": sum(p.noisy for p in sim.played), "fact_mismatches": sim.fact_mismatches,
        "build_s": round(build_s, 1), "play_s": round(play_s, 1), "cases_per_s": round(args.cases / play_s, 2),
        "precedent_top3_any": round(any3 / n_held, 4), "precedent_top3_majority": round(major3 / n_held, 4),
        "shipped_traces_majority": shipped_major, "shipped_baseline": round(base / n_held, 4),
        "consolidate_s": round(mine_s, 2), "heuristics": [
            {"text": h.text(), "support": h.support, "confidence": h.confidence} for h in mined],
        "recovery": rec,
    }
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
