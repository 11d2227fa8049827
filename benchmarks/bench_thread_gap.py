"""Issue 13: does CPU per retrieval grow when 100 requests run at once (GIL hand-offs, the
switch interval, lock contention), or is it the same work?

    python benchmarks/bench_thread_gap.py --store S [--bursts 3] [--switch-ms 1]

One process: 200 warm sequential retrievals, then ``--bursts`` bursts of 100 threads released
together, every request with a 20 s budget so that none sheds work (the shipped 800 ms budget
would answer most of a burst degraded, i.e. with less CPU, and hide the overhead). Reports process
CPU per retrieval for both, CPU by thread group (the burst threads' own CPU is the process total
minus the groups: they have ended when /proc is read), and voluntary / involuntary context
switches per retrieval (``getrusage``). ``--switch-ms`` sets ``sys.setswitchinterval`` (Python's
default is 5 ms; ``hopweave serve`` and the engine pool's workers use 1 ms). Requests are the
DeltaBank scenarios with wording varied per repetition, as in ``bench_concurrency.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_concurrency as bc  # noqa: E402
from bench_hotpath import group_of, thread_cpu  # noqa: E402


def measure(label: str, work: Callable[[], None], n: int) -> dict[str, Any]:
    b = thread_cpu()
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    c0, t0 = time.process_time(), time.perf_counter()
    work()
    wall, cpu = time.perf_counter() - t0, (time.process_time() - c0) * 1000 / n
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    a = thread_cpu()
    names = {t.native_id: t.name for t in threading.enumerate() if t.native_id is not None}
    groups: dict[str, float] = {}
    for tid, (comm, s) in a.items():
        g = group_of(tid, comm, names)
        groups[g] = groups.get(g, 0.0) + (s - b.get(tid, (comm, 0.0))[1]) * 1000 / n
    return {"run": label, "cpu_ms_per_retrieval": round(cpu, 2), "wall_s": round(wall, 2),
            "voluntary_switches_per_retrieval": round((ru1.ru_nvcsw - ru0.ru_nvcsw) / n, 1),
            "involuntary_switches_per_retrieval": round((ru1.ru_nivcsw - ru0.ru_nivcsw) / n, 1),
            "thread_cpu_ms_per_retrieval": {k: round(v, 2) for k, v in sorted(groups.items(), key=lambda x: -x[1])
                                            if v >= 0.05}}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from machine import machine

    from hopweave.engine.engine import Engine

    host = machine()
    if args.switch_ms:
        sys.setswitchinterval(args.switch_ms / 1000.0)
    eng = Engine.open(args.store)
    try:
        eng.warmup()
        reqs = bc.requests(bc.scenarios_of("deltabank"), 30 + 200 + 100 * args.bursts, "T")
        for r in reqs[:30]:
            bc.call(eng, r)
        seq, rest = reqs[30:230], reqs[230:]
        def sequential() -> None:
            for r in seq:
                bc.call(eng, r)

        out = [measure("sequential", sequential, len(seq))]
        shed: list[int] = [0]

        def bursts() -> None:
            for k in range(args.bursts):
                start = threading.Event()
                results: list[Any] = []

                def one(r: dict[str, Any], start: threading.Event = start, results: list[Any] = results) -> None:
                    start.wait()
                    results.append(bc.call(eng, {**r, "budget_ms": 20000}))

                ts = [threading.Thread(target=one, args=(r,)) for r in rest[k * 100:(k + 1) * 100]]
                for t in ts:
                    t.start()
                start.set()
                for t in ts:
                    t.join()
                shed[0] += sum(1 for x in results if any(
                    d.stage != "understand" and "truncated" not in d.reason for d in x.degraded))

        out.append(measure(f"{args.bursts} x 100 threads at once", bursts, 100 * args.bursts))
        out[-1]["degraded_beyond_understanding_or_truncation"] = shed[0]
    finally:
        eng.close()
    return {"machine": host, "store": str(args.store), "switch_interval_ms": sys.getswitchinterval() * 1000,
            "runs": out, "load_avg_end": round(os.getloadavg()[0], 2)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--store", required=True, type=Path)
    ap.add_argument("--bursts", type=int, default=3)
    ap.add_argument("--switch-ms", type=float, default=0.0, help="sys.setswitchinterval in ms (0: keep 5 ms)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    text = json.dumps(run(args), indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
