"""Benchmark: what pinning the texts a trace showed costs (``PinnedText`` nodes).

    hopweave load examples/deltabank --store DIR
    python benchmarks/bench_pins.py --store DIR [--rounds 5] [--runs 40]

On a loaded DeltaBank store, Maria's late-fee dispute at as_of 2026-05-12, recorded: per round,
``--runs`` retrievals with pinning and ``--runs`` without, interleaved (the benchmark switches it off by
renaming the label the trace builder looks for, as on a store whose schema predates pinned
texts), each at its own as_of second (a new trace every time, the same context, so the texts
are pinned once and then only linked). Prints the median wall time of ``retrieve(record=True)``
(the request waits for its trace to be durable; the replay budgets, so that every one is), the CPU of building one trace, and the journal
bytes per trace, with and without pinning, and the machine line.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import datetime, timedelta
from pathlib import Path

from deltabank_pack import PACK_DIR
from machine import machine_line

from hopweave.engine import pins as pins_mod, record as trace_record
from hopweave.engine.engine import Engine
from hopweave.engine.replay import REPLAY_CONFIG
from hopweave.models.common import read_session_file

QUESTION = "I want to dispute this $39 late fee, can you waive it?"
TENANT = "deltabank"


def _journal_bytes(store: Path) -> int:
    return sum(p.stat().st_size for p in (store / "graph").rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", required=True, help="a store loaded with examples/deltabank (it gets traces)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    store = Path(args.store)
    session = read_session_file(PACK_DIR / "sessions" / "maria.json")
    eng = Engine.open(store, config=REPLAY_CONFIG)  # a budget long enough that every trace is durable
    eng.warmup()
    label = pins_mod.PIN_LABEL
    wall: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    grow: dict[bool, list[float]] = {True: [], False: []}
    at = datetime(2026, 5, 12, 10, 0, 0)
    try:
        for _ in range(args.rounds):
            for _ in range(args.runs):
                for on in (True, False):  # interleaved: the machine's load drifts alike for both
                    pins_mod.PIN_LABEL = label if on else "NoPinnedTextLabel"
                    at += timedelta(seconds=1)
                    before = _journal_bytes(store)
                    t0 = time.perf_counter()
                    r = eng.retrieve(QUESTION, session=session, as_of=at.isoformat())
                    wall[on].append((time.perf_counter() - t0) * 1000)
                    grow[on].append(_journal_bytes(store) - before)
                    assert r.recorded
                    c0 = time.process_time()
                    trace_record.build(r, session, eng.graph, eng.settings_for(TENANT).subject)
                    cpu[on].append((time.process_time() - c0) * 1000)
    finally:
        pins_mod.PIN_LABEL = label
        eng.close()
    first = grow[True][0] - grow[False][0]
    print(machine_line())
    for on in (True, False):
        print(f"pinning {'on ' if on else 'off'}: retrieve(record=True) median {statistics.median(wall[on]):.1f} ms, "
              f"trace build CPU median {statistics.median(cpu[on]):.2f} ms, "
              f"graph files +{statistics.median(grow[on]):,.0f} bytes per trace "
              f"({args.rounds} x {args.runs} runs)")
    print(f"the first trace wrote {first:,} more bytes with pinning (its texts, new to the store)")


if __name__ == "__main__":
    main()
