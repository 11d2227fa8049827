"""The search process's work per search, without the engine around it: the document searches of
``--requests`` warm retrievals (the pack's scenarios, ``bench_concurrency.requests``) are recorded
on an engine whose shard is in process, then replayed ``--rounds`` times on its index. Reports
the thread CPU per search (median over the rounds) and, of it, qdrant-edge's calls (``query_batch``,
single ``query`` refetches, ``retrieve``) with their counts; ``--dump FILE`` writes every replayed
result (timings removed, exact float reprs) one per line, to compare two code versions (``cmp``).

Usage: ``python benchmarks/bench_search_replay.py --store S [--requests 100] [--rounds 5] [--dump F]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_concurrency as bc  # noqa: E402
from machine import machine  # noqa: E402

_TIMED = ("query", "query_batch", "retrieve")


class _Timed:
    """The shard with the thread CPU and the count of its calls kept in ``acc``."""

    def __init__(self, shard: Any, acc: dict[str, float]) -> None:
        self._shard, self._acc = shard, acc

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._shard, name)
        if name not in _TIMED:
            return fn

        def timed(*a: Any, **k: Any) -> Any:
            c = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                self._acc[name] = self._acc.get(name, 0.0) + time.thread_time() - c
                self._acc[name + " calls"] = self._acc.get(name + " calls", 0) + 1
        return timed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dump", type=Path, default=None)
    args = ap.parse_args()
    from hopweave.engine.config import EngineConfig
    from hopweave.engine.engine import Engine
    from hopweave.search.index_base import VectorIndex

    host = machine()
    calls: list[tuple[Any, Any]] = []
    real = VectorIndex.search

    def recorded(self: Any, *a: Any, **k: Any) -> Any:
        calls.append((a, k))
        return real(self, *a, **k)

    VectorIndex.search = recorded  # type: ignore[method-assign]
    eng = Engine.open(args.store, config=EngineConfig(search_process=False))
    try:
        eng.warmup()
        for r in bc.requests(bc.scenarios_of("deltabank"), args.requests + 20, "P"):
            bc.call(eng, r)
        VectorIndex.search = real  # type: ignore[method-assign]
        calls = calls[-args.requests:]
        index: Any = eng.index
        for a, k in calls:  # warm: the filters' counts and IDF, the payload caches
            index.search(*a, **k)
        acc: dict[str, float] = {}
        index._shard = _Timed(index._open(), acc)
        rounds = []
        for _ in range(args.rounds):
            acc.clear()
            c = time.thread_time()
            for a, k in calls:
                index.search(*a, **k)
            n = len(calls)
            rounds.append({"cpu_ms_per_search": (time.thread_time() - c) * 1000 / n,
                           **{f"{name} ms": acc.get(name, 0.0) * 1000 / n for name in _TIMED},
                           **{f"{name} calls": acc.get(name + " calls", 0) / n for name in _TIMED}})
        if args.dump is not None:
            lines = [json.dumps(index.search(*a, **k).model_dump(mode="json", exclude={"timings_ms"}), sort_keys=True)
                     for a, k in calls]
            args.dump.write_text("\n".join(lines) + "\n")
    finally:
        eng.close()
    out = {"machine": host, "command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "searches": len(calls), "rounds": args.rounds,
           **{k: round(statistics.median(r[k] for r in rounds), 3) for k in rounds[0]},
           "cpu_ms_per_search_rounds": [round(r["cpu_ms_per_search"], 2) for r in rounds]}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
