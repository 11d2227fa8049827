"""A seeded boundary-value suite over every write path (slow suite).

Each case is one random request or write against a real DeltaBank store (networkx graph,
qdrant-edge index, the real embedder): a recorded retrieval at an as_of of year 1, 999, 1000,
2026 or 9999 in a random time zone (or a bare date), with NaN / infinite / huge budgets, 100 KB
utterances or session fields, NaN session attributes; or a fact write (an Event with a
timestamp of those years as a string or a datetime, NaN / infinite / 1e308 / 10**30 amounts,
100 KB and 1.1 MB summaries); or an outcome recorded on a trace (100 KB outcome, decider and
rationale, an as_of of those years). Every case must succeed or raise a typed HopweaveError (never a
raw exception), and after it the graph is reopened from disk and checked the way
``hopweave doctor --deep`` checks it: no journal record quarantined, every stored value passing
the write rules. At the end the whole engine is opened again and ``doctor(deep=True)`` passes.

``HOPWEAVE_BOUNDARY_CASES`` sets the number of cases (default 80: about 60-75 s with the store
build on the shared 2-core machine); ``HOPWEAVE_BOUNDARY_SEED`` the seed (default 34). Larger runs
and their figures are in docs/BENCHMARKS.md ("Boundary values").
"""

from __future__ import annotations

import math
import os
import random
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from domains import MARIA, UTTERANCE

from hopweave.engine.engine import Engine
from hopweave.errors import HopweaveError
from hopweave.graph import open_graph_store
from hopweave.graph.base import Node

CASES = int(os.environ.get("HOPWEAVE_BOUNDARY_CASES", "80"))
SEED = int(os.environ.get("HOPWEAVE_BOUNDARY_SEED", "34"))
TENANT = "deltabank"
YEARS = (1, 999, 1000, 2026, 9999)
ZONES = ("", "Z", "+14:00", "-12:00", "+05:30", "-00:30")
NUMBERS: tuple[Any, ...] = (math.nan, math.inf, -math.inf, 1e308, -1e308, 10**30, 0, -1, 5, 2.5, True)
TEXTS = ("", "x", "é" * 10, "y" * 4001, "z" * 100_000)


def _as_of(rng: random.Random) -> Any:
    year = rng.choice(YEARS)
    month, day = rng.choice(((1, 1), (12, 31), (2, 28), (6, 15)))
    kind = rng.randrange(4)
    if kind == 0:
        return f"{year:04d}-{month:02d}-{day:02d}"
    if kind == 1:
        return datetime(year, month, day, rng.choice((0, 12, 23)), 59, 59)
    return f"{year:04d}-{month:02d}-{day:02d}T{rng.choice(('00:00:00', '12:00:00', '23:59:59'))}{rng.choice(ZONES)}"


def _retrieve(rng: random.Random, engine: Engine) -> Callable[[], Any]:
    session: dict[str, Any] = dict(MARIA)
    args: dict[str, Any] = {"as_of": _as_of(rng), "record": True}
    roll = rng.random()
    if roll < 0.15:
        args["budget_ms"] = rng.choice(NUMBERS)
    elif roll < 0.25:
        args["token_budget"] = rng.choice(NUMBERS)
    elif roll < 0.35:
        session[rng.choice(("customer_id", "region", "channel", "agent_id"))] = rng.choice(TEXTS)
    elif roll < 0.42:
        session["attributes"] = {"score": rng.choice(NUMBERS)}
    utterance = rng.choice(TEXTS) if rng.random() < 0.15 else UTTERANCE
    return lambda: engine.retrieve(utterance, session=session, **args)


def _fact(rng: random.Random, engine: Engine, i: int) -> Callable[[], Any]:
    props: dict[str, Any] = {"type": "Transaction"}
    year = rng.choice(YEARS)
    stamp = datetime(year, 12, 31, 23, 59, 59)
    choice = rng.randrange(5)
    if choice == 0:
        props["timestamp"] = stamp
    elif choice == 1:
        props["timestamp"] = stamp.replace(tzinfo=timezone(timedelta(hours=rng.choice((-12, 5, 14)))))
    elif choice == 2:
        props["timestamp"] = rng.choice((f"{year:04d}-12-31T23:59:59", f"{year}-12-31T23:59:59", "2026-13-01T00:00:00"))
    if rng.random() < 0.5:
        props["amount"] = rng.choice(NUMBERS)
    if rng.random() < 0.4:
        props["summary"] = rng.choice(TEXTS + ("w" * 1_000_001,))
    node = Node(f"EVT_BOUNDARY_{i}", "Event", props)
    return lambda: engine.graph.write(TENANT, [node])


def _outcome(rng: random.Random, engine: Engine, traces: list[str]) -> Callable[[], Any]:
    trace = traces[-1] if traces and rng.random() < 0.8 else rng.choice(("RT_nope", "x" * 100_000))
    args: dict[str, Any] = {"outcome": rng.choice(("waived", "declined", "", "z" * 100_000)),
                            "decided_by": rng.choice((None, "agent_7", "a" * 100_000)),
                            "rationale": rng.choice((None, "ok", "r" * 100_000)),
                            "as_of": rng.choice((None, _as_of(rng)))}
    return lambda: engine.record_outcome(trace, session=MARIA, **args)


@pytest.fixture(scope="module")
def boundary_engine(cli_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engine, Path]]:
    d = tmp_path_factory.mktemp("boundary") / "store"
    shutil.copytree(cli_store, d)
    eng = Engine.open(d)
    yield eng, d
    eng.close()


@pytest.mark.slow  # CASES random requests and writes, each followed by a reopen and a deep value check
def test_no_boundary_value_leaves_a_store_that_does_not_open(boundary_engine: tuple[Engine, Path]) -> None:
    from hopweave.stores.doctor import doctor

    engine, d = boundary_engine
    rng = random.Random(SEED)
    outcomes = {"ok": 0, "refused": 0}
    traces: list[str] = []
    for i in range(CASES):
        roll = rng.random()
        case = (_retrieve(rng, engine) if roll < 0.55 else _fact(rng, engine, i) if roll < 0.85
                else _outcome(rng, engine, traces))
        try:
            got = case()
            outcomes["ok"] += 1
            if getattr(got, "recorded", False):
                traces.append(got.trace_id)
        except HopweaveError:
            outcomes["refused"] += 1  # typed: anything else fails the test with its traceback
        engine.trace_writer.drain(30)
        g = open_graph_store(d)  # from disk: the snapshot and the journal replayed through the write rules
        assert g.quarantined == [], (i, g.quarantined[:1])  # type: ignore[attr-defined]
        nodes, _edges, problems = g.value_problems()  # type: ignore[attr-defined]
        assert problems == [] and nodes > 0, (i, problems)
        g.close()
    assert outcomes["ok"] and outcomes["refused"], outcomes
    engine.close()
    again = Engine.open(d)
    try:
        assert again.retrieve(UTTERANCE, session=MARIA, as_of="2026-05-12", record=False).goal == "LateFeeDispute"
    finally:
        again.close()
    report = doctor(d, deep=True)
    assert report.ok, [f for f in report.findings if f.severity == "error"]
