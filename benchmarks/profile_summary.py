"""Summarise a py-spy ``--format raw`` profile: inclusive share of the request work per function.

    py-spy record -r 300 --format raw -o maria.raw --nonblocking -- \\
        python benchmarks/bench_maria.py --chunks 50000 --nodes 1000000 --runs 0 ...
    python benchmarks/profile_summary.py maria.raw [--top 40] [--require Engine.retrieve,_WorkItem.run]

Only samples whose stack contains one of ``--require`` (default: the engine's request and stage
threads) and none of ``--exclude`` (default: warm-up) are counted, so imports, model loading and
store building do not drown the request path.
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path


def summarise(path: Path, require: list[str], exclude: list[str], top: int) -> tuple[int, list[tuple[str, float]],
                                                                                    list[tuple[str, float]]]:
    """(samples counted, [(function, inclusive %)], [(function, self %)])."""
    incl: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, cnt = line.rstrip().rpartition(" ")
        if not stack or not cnt.isdigit():
            continue
        if require and not any(r in stack for r in require):
            continue
        if any(x in stack for x in exclude):
            continue
        n = int(cnt)
        total += n
        frames = [f.split(" (")[0] + " " + (f.split("/")[-1].split(":")[0] if "/" in f else "") for f in
                  stack.split(";")]
        for f in set(frames):
            incl[f] += n
        own[frames[-1]] += n
    pct = (lambda c: [(k, round(100 * v / total, 1)) for k, v in c.most_common(top)]) if total else (lambda c: [])
    return total, pct(incl), pct(own)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("raw", type=Path)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--require", default="Engine.retrieve,_WorkItem.run")
    ap.add_argument("--exclude", default="warmup")
    args = ap.parse_args()
    total, incl, own = summarise(args.raw, [r for r in args.require.split(",") if r],
                                 [x for x in args.exclude.split(",") if x], args.top)
    print(f"samples: {total}\n\n| inclusive % | function |\n|---|---|")
    for k, v in incl:
        print(f"| {v} | `{k.strip()}` |")
    print("\n| self % | function |\n|---|---|")
    for k, v in own[:15]:
        print(f"| {v} | `{k.strip()}` |")


if __name__ == "__main__":
    main()
