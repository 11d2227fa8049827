"""`hopweave validate` on large pack files: a copy of examples/telecom whose graph file is grown
to ``--mb`` MB of valid, distinct records (streamed, checked record by record), and a copy whose
goal file is padded past its size limit (refused before it is parsed). Prints the median wall
and CPU seconds of ``--runs`` in-process runs of each and writes
``results/pack_validate_DATE.json``.

    python benchmarks/bench_pack_validate.py [--mb 50] [--runs 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from hopweave.pack.validate import validate_pack  # noqa: E402

TELECOM = ROOT / "examples" / "telecom"


def _grow_graph(pack: Path, mb: int) -> int:
    f = pack / "graph" / "acme.jsonl"
    nodes = [json.loads(ln) for ln in f.read_text(encoding="utf-8").splitlines() if ln.startswith('{"node"')]
    n = 0
    with open(f, "a", encoding="utf-8") as fh:
        while fh.tell() < mb << 20:
            for rec in nodes:
                fh.write(json.dumps({**rec, "node": f"{rec['node']}_X{n}"}) + "\n")
                n += 1
    return n


def _pad_goal(pack: Path, mb: int) -> None:
    with open(pack / "goals" / "plan_change.yaml", "a", encoding="utf-8") as fh:
        while fh.tell() < mb << 20:
            fh.write("# padding " + "y" * 200 + "\n")


def _time(pack: Path, runs: int) -> dict[str, object]:
    walls, cpus, problems = [], [], []
    for _ in range(runs):
        w0, c0 = time.perf_counter(), time.process_time()
        problems = validate_pack(pack)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return {"wall_s_median": round(statistics.median(walls), 2), "cpu_s_median": round(statistics.median(cpus), 2),
            "walls": [round(w, 2) for w in walls], "problems": [str(p) for p in problems][:3]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    out: dict[str, object] = {"date": dt.date.today().isoformat(), "mb": args.mb, "runs": args.runs}
    with tempfile.TemporaryDirectory() as tmp:
        graph_pack = Path(tmp) / "graph_pack"
        shutil.copytree(TELECOM, graph_pack)
        out["extra_nodes"] = _grow_graph(graph_pack, args.mb)
        out["graph_file_bytes"] = (graph_pack / "graph" / "acme.jsonl").stat().st_size
        out["graph_file"] = _time(graph_pack, args.runs)
        goal_pack = Path(tmp) / "goal_pack"
        shutil.copytree(TELECOM, goal_pack)
        _pad_goal(goal_pack, args.mb + 5)
        out["goal_file"] = _time(goal_pack, args.runs)
        out["baseline"] = _time(TELECOM, args.runs)
    print(json.dumps(out, indent=2))
    dest = ROOT / "benchmarks" / "results" / f"pack_validate_{out['date']}.json"
    dest.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
