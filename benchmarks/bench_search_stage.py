"""The search stage's cost per retrieval (issues 13 and 17): sequential warm retrievals of the
DeltaBank scenarios' utterances (``bench_concurrency.requests``) on a store, with

* process CPU per retrieval and the retrieval's stage medians,
* the search stage (``VectorIndex.search``): wall p50 and CPU of the calling thread,
* the CPU of qdrant-edge's own search threads (``edge-search-*``, from ``/proc/self/task``),
* optionally every search result (hits, exact score bits, explanations, coverage) written one per
  line, so two code versions can be compared for identical rankings (``cmp``).

Usage: ``python benchmarks/bench_search_stage.py --store S --requests 200 [--dump FILE] [--pack telecom]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_concurrency as bc  # noqa: E402
from machine import machine  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")


def _threads_cpu_ms(prefix: str) -> float:
    """CPU ms so far of this process's threads whose name starts with ``prefix``."""
    tot = 0
    for t in os.listdir("/proc/self/task"):
        try:
            if not Path(f"/proc/self/task/{t}/comm").read_text().startswith(prefix):
                continue
            stat = Path(f"/proc/self/task/{t}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        tot += int(stat[11]) + int(stat[12])
    return tot / _TICK * 1000


def _line(res: Any) -> str:
    hits = [[h.chunk_id, h.score.hex(), repr(h.lexical), repr(h.semantic), repr(h.features)] for h in res.hits]
    return json.dumps(hits + [res.coverage.model_dump(), res.candidates, res.candidates_truncated], sort_keys=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--dump", type=Path, default=None, help="write every search result here, one per line")
    ap.add_argument("--pack", default="deltabank", help="example pack whose scenario utterances are sent")
    args = ap.parse_args()
    from hopweave.engine.engine import Engine
    from hopweave.search.index_base import VectorIndex

    rec: dict[str, list[Any]] = {"cpu": [], "wall": [], "dump": []}
    orig = VectorIndex.search

    def timed(self: Any, *a: Any, **k: Any) -> Any:
        c, w = time.thread_time(), time.perf_counter()
        res = orig(self, *a, **k)
        rec["cpu"].append((time.thread_time() - c) * 1000)
        rec["wall"].append((time.perf_counter() - w) * 1000)
        rec["dump"].append(_line(res))
        return res

    VectorIndex.search = timed  # type: ignore[method-assign]
    t = time.perf_counter()
    eng = Engine.open(args.store)
    eng.warmup()
    opened = time.perf_counter() - t
    reqs = bc.requests(bc.scenarios_of(args.pack), args.requests + 20, "P")
    for r in reqs[:20]:
        bc.call(eng, r)
    for v in rec.values():
        v.clear()
    lat, stages = [], {}  # type: ignore[var-annotated]
    load0 = os.getloadavg()
    c0, e0, s0 = bc.engine_cpu_s(eng), _threads_cpu_ms("edge-search"), bc.search_process_cpu_s(eng)
    for r in reqs[20:]:
        w = time.perf_counter()
        res = bc.call(eng, r)
        lat.append((time.perf_counter() - w) * 1000)
        for k, v in res.timings_ms.items():
            stages.setdefault(k, []).append(v)
    n = len(reqs) - 20
    out = {
        "machine": machine(),
        "command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "loadavg": [load0, os.getloadavg()], "open_warm_s": round(opened, 2), "requests": n,
        "latency_p50_ms": round(statistics.median(lat), 2),
        "process_cpu_ms_per_retrieval": round((bc.engine_cpu_s(eng) - c0) * 1000 / n, 2),
        "search_process_cpu_ms_per_retrieval": round((bc.search_process_cpu_s(eng) - s0) * 1000 / n, 2),
        "search_calls_per_retrieval": round(len(rec["wall"]) / n, 2),
        "search_wall_p50_ms": round(statistics.median(rec["wall"]), 2),
        "search_thread_cpu_ms_per_retrieval": round(sum(rec["cpu"]) / n, 2),
        "edge_search_threads_cpu_ms_per_retrieval": round((_threads_cpu_ms("edge-search") - e0) / n, 2),
        "stages_p50_ms": {k: round(statistics.median(v), 2) for k, v in stages.items()},
        "results_sha256": hashlib.sha256("\n".join(rec["dump"]).encode()).hexdigest(),
    }
    if args.dump is not None:
        args.dump.write_text("\n".join(rec["dump"]) + "\n")
    print(json.dumps(out, indent=1))
    eng.close()


if __name__ == "__main__":
    main()
