"""Cold start, split by phase: a fresh interpreter opens a store and answers one retrieval.

Each run is a new subprocess (a cold interpreter, like a CLI call or a restarted server). The
child times, wall and CPU (``time.process_time``, the whole process: every thread), each phase:

- ``import``: ``from hopweave.engine.engine import Engine`` (and what it imports);
- ``engine_open``: ``Engine.open``, of which ``graph_load`` is loading the graph store: the
  snapshot (read, sha256, JSON decode, schema checks) and the journal (parse, schema and gate
  checks of every record);
- ``warmup``: ``Engine.warmup`` (encoder session, spaCy and the classifier, the vector shard;
  its parts' own wall times are reported as ``warmup_ms``);
- ``first_answer``: the first ``retrieve`` (not recorded, so the store is not changed).

``--store`` is not written to (nothing is recorded and the engine is not closed). Prints one JSON object with every run
and the median of each phase, plus the
child's peak RSS (``peak_rss_mib``, ``ru_maxrss``).

    PYTHONPATH=src python benchmarks/bench_cold_start.py --store /tmp/tp/s50k --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import machine  # noqa: E402

UTTERANCE = "I want to dispute this $39 late fee on my Platinum card."
SESSION = {"tenant_id": "deltabank", "customer_id": "CUST_4421", "region": "US", "channel": "phone",
           "agent_id": "AGENT_17", "locale": "en-US"}
AS_OF = "2026-05-12"

_CHILD = r"""
import json, resource, sys, time
marks = []
def mark(name):
    marks.append((name, time.perf_counter(), time.process_time()))
mark("start")
from hopweave.engine.engine import Engine
from hopweave.graph.networkx_store import NetworkxGraphStore
mark("import")
graph_load = {}
_load = NetworkxGraphStore._load_locked
def _timed_load(self):
    t, c = time.perf_counter(), time.process_time()
    _load(self)
    graph_load.update(wall_s=round(time.perf_counter() - t, 3), cpu_s=round(time.process_time() - c, 3))
NetworkxGraphStore._load_locked = _timed_load
eng = Engine.open(sys.argv[1])
mark("engine_open")
warm = eng.warmup()
mark("warmup")
r = eng.retrieve(sys.argv[2], session=json.loads(sys.argv[3]), as_of=sys.argv[4], record=False)
mark("first_answer")
phases = {name: {"wall_s": round(t - marks[i][1], 3), "cpu_s": round(c - marks[i][2], 3)}
          for i, (name, t, c) in enumerate(marks[1:])}
phases["graph_load"] = graph_load
stats = eng.graph.stats()
print(json.dumps({"phases": phases, "to_first_answer": {"wall_s": round(marks[-1][1] - marks[0][1], 3),
                  "cpu_s": round(marks[-1][2], 3)},
                  "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                  "warmup_ms": warm, "goal": r.goal, "degraded": [d.stage for d in r.degraded],
                  "graph": {"nodes": stats["nodes"], "edges": stats["edges"], "journal_bytes": stats["journal_bytes"]}}))
# no close: the store is left exactly as it was (close may compact a long journal)
"""


def run_once(store: Path) -> dict[str, Any]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(store), UTTERANCE, json.dumps(SESSION), AS_OF],
                          capture_output=True, text=True, env=env, timeout=900)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        raise SystemExit(f"the cold-start child failed: {tail}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", required=True, type=Path, help="a hopweave store directory (not written)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    runs = [run_once(args.store) for _ in range(args.runs)]
    med: dict[str, Any] = {}
    for name in runs[0]["phases"]:
        med[name] = {k: round(statistics.median(r["phases"][name][k] for r in runs), 2) for k in ("wall_s", "cpu_s")}
    med["to_first_answer"] = {k: round(statistics.median(r["to_first_answer"][k] for r in runs), 2)
                              for k in ("wall_s", "cpu_s")}
    med["peak_rss_mib"] = round(statistics.median(r["peak_rss_mib"] for r in runs), 1)
    load = os.getloadavg()
    print(json.dumps({"machine": machine(), "load_average": [round(x, 2) for x in load], "store": str(args.store),
                      "graph": runs[0]["graph"], "median": med, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
