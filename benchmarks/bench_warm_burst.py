"""Issue 13: how a fresh engine warms up, and a 100-thread burst after N sequential requests.

    python benchmarks/bench_warm_burst.py --store S [--warm 80] [--burst 100] [--json out.json]

Opens the store as shipped (``EngineConfig()``, the search process on), runs ``--warm``
sequential DeltaBank requests (the scenarios without fault injection, wording varied, as in
``bench_concurrency.py``) and reports, per block of 10, the search process's CPU and minor /
major page faults per request (``/proc/<pid>/stat``) and the median search wall time. Then a
burst of ``--burst`` threads released together: latency, how many got a full answer (the search
ran: no ``search`` degradation) and the median slot hold before and after. Run it on a fresh copy
of the store: recorded traces grow it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_concurrency as bc  # noqa: E402
from machine import machine  # noqa: E402


def proc_stat(pid: int) -> tuple[int, int, float]:
    """(minor faults, major faults, CPU seconds) of process ``pid`` (the CPU as
    ``bench_concurrency`` reads it)."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(f[7]), int(f[9]), bc._cpu_s([pid])


def _expected_hold_ms(engine: Any) -> float:
    """The engine's expected slot hold (ms): ``HoldClock.expected_ms``, or the median of the
    last holds on an engine from before it (for A/B runs against an older tree)."""
    admission = getattr(engine, "admission", None)
    clock = admission.hold_clock if admission is not None else engine._hold_clock
    return float(clock.expected_ms() if hasattr(clock, "expected_ms") else clock.quantile_ms(0.5))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from hopweave.engine.engine import Engine

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", required=True, help="a DeltaBank store (bench_maria.py --build-only); a copy")
    ap.add_argument("--warm", type=int, default=80, help="sequential requests first")
    ap.add_argument("--burst", type=int, default=100, help="threads in the burst after them (0: none)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    engine = Engine.open(args.store)
    out: dict[str, Any] = {"command": "python benchmarks/bench_warm_burst.py " + " ".join(sys.argv[1:]),
                           "machine": machine(), "warm": args.warm, "blocks": []}
    try:
        out["warmup_ms"] = engine.warmup()
        pid = getattr(engine.index, "pid", None)
        db = bc.scenarios_of("deltabank")
        block: list[tuple[int, int, float, float]] = []
        for i, req in enumerate(bc.requests(db, args.warm, "w")):
            a = proc_stat(pid) if pid else (0, 0, 0.0)
            res = bc.call(engine, req)
            b = proc_stat(pid) if pid else (0, 0, 0.0)
            block.append((b[0] - a[0], b[1] - a[1], b[2] - a[2], res.timings_ms.get("search", 0.0)))
            if len(block) == 10:
                row = {"requests": f"{i - 8}-{i + 1}",
                       "search_process_cpu_ms": round(sum(x[2] for x in block) * 100, 1),
                       "minor_faults": round(sum(x[0] for x in block) / 10, 1),
                       "major_faults": round(sum(x[1] for x in block) / 10, 1),
                       "search_wall_p50_ms": round(statistics.median(x[3] for x in block), 1)}
                out["blocks"].append(row)
                print(json.dumps(row), file=sys.stderr)
                block = []
        if args.burst:
            hold_before = _expected_hold_ms(engine)
            res_burst, wall = bc.burst(lambda r: bc.call(engine, r), bc.requests(db, args.burst, "b"))
            stats = bc.engine_stats(res_burst, wall)
            stats["full"] = sum(1 for _, r in res_burst if not isinstance(r, BaseException)
                                and not any(d.stage == "search" for d in r.degraded))
            stats["hold_p50_ms_before"] = round(hold_before, 1)
            stats["hold_p50_ms_after"] = round(_expected_hold_ms(engine), 1)
            out["burst"] = stats
    finally:
        engine.close()
    text = json.dumps(out, indent=1)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    print(text)
    return out


if __name__ == "__main__":
    main()
