"""Benchmark: months of DeltaBank (or telecom) operation simulated, then consolidated into heuristics.

    python benchmarks/bench_learning.py [--pack deltabank|telecom] [--cases 5000] [--held 300]
                                        [--max-depth 4] [--pattern-report] [--store DIR] [--out FILE]

``--pack deltabank`` (the default) builds a DeltaBank store (3,000 generated nodes, the engine
tests' size) in ``--store`` (kept for ``hopweave consolidate`` / ``pattern-report`` afterwards)
and simulates with examples/deltabank/generator/simulate.py; ``--pack telecom`` loads
examples/telecom (``hopweave load``'s loader) and simulates with examples/telecom/simulate.py.
Either writes ``--cases + --held`` simulated customers (the simulator's default seed, noise 0.05),
plays ``--cases`` cases through the engine (retrieve, rule decision, ``record_outcome``), then
``--held`` held-back cases (retrieve only). Reports: cases per second; for the held-back cases,
how often the top-3 precedent rows share the ground-truth outcome (any of the three, and their
majority) against the pack's shipped precedent traces' majority outcome alone; consolidation at
the default support and ``--max-depth`` (its heuristics, precision and recall against the pack's
rules, seconds); with ``--pattern-report``, the pattern report's never-cited patterns and
proposed paths (dry run: nothing written). Writes a JSON report.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from deltabank_pack import PACK_DIR  # noqa: F401  (puts the pack's generator on sys.path)
from machine import machine

from hopweave.engine import consolidate as C
from hopweave.engine.engine import Engine
from hopweave.engine.replay import REPLAY_CONFIG

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "shared"))
from domains import DELTABANK_REGISTRY  # noqa: E402

#: Each pack's shipped precedent traces of the simulated goal.
SHIPPED = {"deltabank": ("TRACE_8514", "TRACE_8702", "TRACE_8108"),
           "telecom": ("TRACE_3101", "TRACE_3102", "TRACE_3103")}
TELECOM = Path(__file__).resolve().parents[1] / "examples" / "telecom"


def _open(pack: str, store: Path) -> tuple[Any, Engine]:
    """The pack's simulator module and an engine on a freshly built store of the pack."""
    if pack == "telecom":
        from hopweave.pack.loader import load_pack

        spec = importlib.util.spec_from_file_location("telecom_simulate", TELECOM / "simulate.py")
        assert spec is not None and spec.loader is not None
        S = importlib.util.module_from_spec(spec)
        sys.modules["telecom_simulate"] = S
        spec.loader.exec_module(S)
        load_pack(TELECOM, store)
        return S, Engine.open(store, config=REPLAY_CONFIG)
    from generator import simulate as S
    from generator.build import load_deltabank

    load_deltabank(store, nodes=3000)
    return S, Engine.open(store, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pack", choices=sorted(SHIPPED), default="deltabank")
    ap.add_argument("--cases", type=int, default=5000)
    ap.add_argument("--held", type=int, default=300)
    ap.add_argument("--store", default="/tmp/hopweave-living-memory")
    ap.add_argument("--max-depth", type=int, default=C.DEFAULT_MAX_DEPTH, help="the miner's tree depth")
    ap.add_argument("--pattern-report", action="store_true", help="add the pattern report (a dry run)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    store = Path(args.store)
    shutil.rmtree(store, ignore_errors=True)
    t0 = time.perf_counter()
    S, eng = _open(args.pack, store)
    eng.warmup()
    all_cases = S.cases(args.cases + args.held)
    S.write_cases(eng.graph, all_cases, held_from=args.cases)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    sim = S.play(eng, all_cases[:args.cases],
                 progress=lambda k: print(f"{k} cases", flush=True) if k % 500 == 0 else None)
    play_s = time.perf_counter() - t0
    held = S.play(eng, all_cases[args.cases:], decide=False)
    shipped = [eng.graph.get_node(S.TENANT, t) for t in SHIPPED[args.pack]]
    shipped_major = Counter(str(n.props.get("outcome")) for n in shipped if n is not None).most_common(1)[0][0]
    any3 = sum(p.truth in p.precedent_outcomes for p in held.played)
    major3 = sum(bool(p.precedent_outcomes) and Counter(p.precedent_outcomes).most_common(1)[0][0] == p.truth
                 for p in held.played)
    base = sum(p.truth == shipped_major for p in held.played)
    goal = {g.name: g for g in eng.graph.goal_types()}[S.GOAL]
    assert goal.outcomes is not None
    t0 = time.perf_counter()
    decided = C.decided_cases(eng.graph, S.TENANT, goal)
    mined = C.mine(decided, goal.name, list(goal.outcomes.keep), max_depth=args.max_depth)
    mine_s = time.perf_counter() - t0
    rec = S.recovery(mined, sim.played)
    patterns: dict[str, Any] | None = None
    if args.pattern_report:
        from hopweave.engine import pattern_learning as PL

        t0 = time.perf_counter()
        domain = eng.settings_for(S.TENANT).name
        latest = max(c.decided_at for c in decided if c.decided_at is not None)
        out = PL.propose_patterns(eng.graph, eng.graph.write, S.TENANT, goal, eng.graph.domain_patterns(domain, S.GOAL),
                                  at=latest, domain=domain, dry_run=True)
        patterns = {"never_cited": [p["name"] for p in out["report"]["patterns"] if p["never_cited"]],
                    "unretrieved_cases": out["report"]["unretrieved"]["cases"],
                    "proposals": [{"kind": p["kind"], "pattern": p["pattern"], "reason": p["reason"]}
                                  for p in out["proposals"]],
                    "seconds": round(time.perf_counter() - t0, 2)}
    eng.close()
    n_held = max(len(held.played), 1)
    report = {
        "machine": machine(), "pack": args.pack, "cases": args.cases, "decided": len(decided), "held": len(held.played),
        "noise": 0.05, "noisy": sum(p.noisy for p in sim.played), "fact_mismatches": sim.fact_mismatches,
        "build_s": round(build_s, 1), "play_s": round(play_s, 1), "cases_per_s": round(args.cases / play_s, 2),
        "precedent_top3_any": round(any3 / n_held, 4), "precedent_top3_majority": round(major3 / n_held, 4),
        "shipped_traces_majority": shipped_major, "shipped_baseline": round(base / n_held, 4),
        "consolidate_s": round(mine_s, 2), "max_depth": args.max_depth, "heuristics": [
            {"text": h.text(), "support": h.support, "confidence": h.confidence} for h in mined],
        "recovery": rec,
    }
    if patterns is not None:
        report["pattern_report"] = patterns
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
