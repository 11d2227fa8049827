"""Issue 13: the thread CPU of chosen functions per retrieval, sequential warm requests.

    python benchmarks/bench_function_cpu.py --store S [--n 200] hopweave.engine.pipeline:case_for ...

Each ``module:attribute.path`` is wrapped (``time.thread_time`` around the call, on the thread
that runs it, nested calls included) where the caller looks it up, e.g.
``hopweave.engine.pipeline:assemble`` for the pipeline's call of ``assemble``. Prints ms of CPU and
calls per retrieval for each, and the process CPU per retrieval. Requests: the DeltaBank
scenarios, wording varied per repetition (as ``bench_hotpath.py``), after 30 warm-up ones. Compare
two trees by running it with each one's ``PYTHONPATH``, back to back, on fresh copies of the store.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_concurrency as bc  # noqa: E402


def wrap(spec: str, cpu: dict[str, float], calls: dict[str, int]) -> None:
    module, path = spec.split(":")
    owner: Any = importlib.import_module(module)
    *parents, name = path.split(".")
    for part in parents:
        owner = getattr(owner, part)
    real = getattr(owner, name)

    def timed(*a: Any, _real: Any = real, **k: Any) -> Any:
        c = time.thread_time()
        try:
            return _real(*a, **k)
        finally:
            cpu[spec] = cpu.get(spec, 0.0) + (time.thread_time() - c) * 1000
            calls[spec] = calls.get(spec, 0) + 1

    setattr(owner, name, functools.wraps(real)(timed))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--store", required=True, type=Path)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("functions", nargs="+", help="module:attribute.path, e.g. hopweave.engine.pipeline:case_for")
    args = ap.parse_args(argv)
    cpu: dict[str, float] = {}
    calls: dict[str, int] = {}
    for spec in args.functions:
        wrap(spec, cpu, calls)
    from hopweave.engine.engine import Engine

    eng = Engine.open(args.store)
    try:
        eng.warmup()
        reqs = bc.requests(bc.scenarios_of("deltabank"), args.n + 30, "F")
        for r in reqs[:30]:
            bc.call(eng, r)
        cpu.clear()
        calls.clear()
        c0 = time.process_time()
        for r in reqs[30:]:
            bc.call(eng, r)
        total = (time.process_time() - c0) * 1000 / args.n
    finally:
        eng.close()
    print(json.dumps({"process_cpu_ms_per_retrieval": round(total, 2), "load_avg_end": round(os.getloadavg()[0], 2),
                      "functions": {s: {"cpu_ms_per_retrieval": round(cpu.get(s, 0.0) / args.n, 3),
                                        "calls_per_retrieval": round(calls.get(s, 0) / args.n, 2)}
                                    for s in args.functions}}, indent=2))


if __name__ == "__main__":
    main()
