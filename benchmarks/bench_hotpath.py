"""Issue 13: the CPU of one warm retrieval, sequential, split by stage and by thread.

    python benchmarks/bench_hotpath.py --store S [--n 200] [--pack deltabank] [--json out.json]

Warm requests one at a time (the example pack's scenarios without fault injection, wording
varied per repetition as in ``bench_concurrency.py``), traces recorded, shipped
``EngineConfig()``. Reports wall p50, CPU per retrieval (this process's ``time.process_time``
plus the engine's search process, also reported alone), the
per-stage wall medians of ``result.timings_ms``, and the CPU per retrieval of each group of
threads (``/proc/self/task/*/stat``, grouped by the Python thread name without its number, or
the native thread name for threads Python did not start, e.g. qdrant-edge's search pool).

``--stage-cpu`` also times the CPU of each stage on the thread that runs it
(``time.thread_time`` around the engine's stage functions, summed per request: the part of
``search`` that runs in qdrant-edge's own threads is not in it, see the thread table).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_concurrency as bc  # noqa: E402
from machine import machine  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")


def thread_cpu() -> dict[int, tuple[str, float]]:
    """CPU seconds (user + system) of every thread of this process, with its native name."""
    out: dict[int, tuple[str, float]] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            stat = Path(f"/proc/self/task/{tid}/stat").read_text()
            comm = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
        except OSError:  # the thread ended
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(tid)] = (comm, (int(fields[11]) + int(fields[12])) / _TICK)
    return out


def group_of(tid: int, comm: str, names: dict[int, str]) -> str:
    name = names.get(tid, comm)
    return re.sub(r"[-_]?\d+(_\d+)?$", "", name) or name


#: (label, module, attribute path) of the stage functions timed by --stage-cpu.
STAGES = [
    ("intent split", "hopweave.engine.multi_intent", "split_intents"),
    ("understand", "hopweave.understand.understander", "Understander.understand"),
    ("search (Python thread)", "hopweave.engine.pipeline", "search_documents"),
    ("graph branch (patterns + precedent)", "hopweave.engine.pipeline", "graph_branch"),
    ("case rules", "hopweave.engine.pipeline", "case_for"),
    ("assemble", "hopweave.engine.pipeline", "assemble"),
    ("make result", "hopweave.engine.pipeline", "make_result"),
    ("trace build (writer thread)", "hopweave.engine.record", "build"),
    ("trace write + fsync (writer thread)", "hopweave.engine.trace_writer", "GroupCommitter._write"),
]


def time_stages(cpu: dict[str, float]) -> None:
    """Wrap each stage function of :data:`STAGES` to add its thread CPU (ms) into ``cpu``."""
    import functools
    import importlib

    for label, module, path in STAGES:
        owner: Any = importlib.import_module(module)
        *parents, name = path.split(".")
        for part in parents:
            owner = getattr(owner, part)
        real = getattr(owner, name)

        def timed(*a: Any, _real: Any = real, _label: str = label, **k: Any) -> Any:
            c = time.thread_time()
            try:
                return _real(*a, **k)
            finally:
                cpu[_label] = cpu.get(_label, 0.0) + (time.thread_time() - c) * 1000

        setattr(owner, name, functools.wraps(real)(timed))


def run(args: argparse.Namespace) -> dict[str, Any]:
    from hopweave.engine.engine import Engine

    host = machine()  # (the load average before the run)
    stage_cpu: dict[str, float] = {}
    if args.stage_cpu:
        time_stages(stage_cpu)
    eng = Engine.open(args.store)
    try:
        eng.warmup()
        reqs = bc.requests(bc.scenarios_of(args.pack), args.n + args.warm, "H")
        for r in reqs[:args.warm]:
            bc.call(eng, r)
        reqs = reqs[args.warm:]
        before = thread_cpu()
        lat: list[float] = []
        stages: dict[str, list[float]] = {}
        stage_cpu.clear()
        c0, child0 = bc.engine_cpu_s(eng), bc.search_process_cpu_s(eng)
        for r in reqs:
            t = time.perf_counter()
            res = bc.call(eng, r)
            lat.append((time.perf_counter() - t) * 1000)
            for k, v in res.timings_ms.items():
                stages.setdefault(k, []).append(v)
        cpu = (bc.engine_cpu_s(eng) - c0) * 1000 / len(reqs)
        child = (bc.search_process_cpu_s(eng) - child0) * 1000 / len(reqs)
        after = thread_cpu()
        names = {t.native_id: t.name for t in threading.enumerate() if t.native_id is not None}
        groups: dict[str, float] = {}
        for tid, (comm, s) in after.items():
            g = group_of(tid, comm, names)
            groups[g] = groups.get(g, 0.0) + (s - before.get(tid, (comm, 0.0))[1]) * 1000 / len(reqs)
    finally:
        eng.close()
    return {"machine": host, "store": str(args.store), "n": len(reqs),
            "wall_p50_ms": round(statistics.median(lat), 2),
            "cpu_ms_per_retrieval": round(cpu, 2),
            "search_process_cpu_ms_per_retrieval": round(child, 2),
            "stage_p50_ms": {k: round(statistics.median(v), 2) for k, v in sorted(stages.items())},
            "thread_cpu_ms_per_retrieval": {k: round(v, 2) for k, v in sorted(groups.items(), key=lambda x: -x[1])
                                            if v >= 0.05},
            **({"stage_cpu_ms_per_retrieval": {k: round(v / len(reqs), 2) for k, v in stage_cpu.items()}}
               if args.stage_cpu else {}),
            "load_avg_end": round(os.getloadavg()[0], 2)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True, type=Path)
    ap.add_argument("--pack", default="deltabank")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--warm", type=int, default=30)
    ap.add_argument("--stage-cpu", action="store_true", help="also the thread CPU of each stage")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    out = run(args)
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
