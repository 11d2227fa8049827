"""EnginePool (hopweave.adapters.pool): real worker processes, each a real Engine on one small
DeltaBank store. The tests run in file order on one pool of two workers; the last ones stop and
kill workers (hung and crashed workers), then close the pool and check nothing is left behind.
Every wait is bounded (budgets, the pool's own timeouts, pytest-timeout)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "deltabank"))  # the pack's generator

from domains import AS_OF, MARIA, UTTERANCE  # noqa: E402 (seed 004)

from hopweave.adapters.pool import EnginePool  # noqa: E402
from hopweave.adapters.serve_workers import PREFIX  # noqa: E402
from hopweave.engine.engine import Engine  # noqa: E402
from hopweave.engine.replay import REPLAY_CONFIG  # noqa: E402
from hopweave.errors import (  # noqa: E402
    InputError,
    OverloadedError,
    PatternValidationError,
    StoreBusyError,
    TenantError,
    WorkerError,
)
from hopweave.wire import error_from_json, error_json  # noqa: E402

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from generator.build import load_deltabank

    d = tmp_path_factory.mktemp("pool") / "store"
    load_deltabank(d, nodes=3000)
    return d


@pytest.fixture(scope="module")
def pool(store: Path) -> Iterator[EnginePool]:
    p = EnginePool.open(store, workers=2, config=REPLAY_CONFIG, refresh_s=0.5, grace_ms=200)
    yield p
    p.close()


def _served(pool: EnginePool) -> list[int]:
    return [s["served"] for s in pool.stats()]


#: Wall-clock measurements, the only fields that differ from run to run (stage timings, the time
#: each pattern's walk took).
CLOCK_FIELDS = {"timings_ms", "elapsed_ms"}


def _without_clock(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _without_clock(v) for k, v in x.items() if k not in CLOCK_FIELDS}
    if isinstance(x, list):
        return [_without_clock(v) for v in x]
    return x


def _same(a: Any, b: Any) -> str:
    """Two results' bytes, wall-clock fields left out, are equal (context text and trace id
    included); returns them."""
    da, db = (json.dumps(_without_clock(json.loads(r.model_dump_json()))) for r in (a, b))
    assert a.context.text == b.context.text and a.trace_id == b.trace_id
    assert da == db
    return da


def test_open_checks_its_arguments() -> None:
    with pytest.raises(InputError, match="workers"):
        EnginePool.open("somewhere", workers=0)
    with pytest.raises(InputError, match="memory"):
        EnginePool.open(":memory:", workers=1)
    with pytest.raises(InputError, match="once"):
        EnginePool.open("a", graph="b", workers=1)


@pytest.mark.slow  # several seconds (processes, CLI runs): the slow suite, which CI also runs
def test_the_default_config_shares_the_request_slots_among_the_workers(store: Path) -> None:
    from hopweave.adapters.serve_workers import shared_max_active
    from hopweave.engine.config import EngineConfig

    assert [shared_max_active(n) for n in (1, 2, 3, 16)] == [EngineConfig().max_active, 2, 2, 1]
    with EnginePool.open(store, workers=2) as two:
        assert two._spec["config"]["max_active"] == shared_max_active(2)
    given = dataclasses.replace(REPLAY_CONFIG, max_active=5)  # a config given is every worker's as is
    with EnginePool.open(store, workers=1, config=given) as p:
        assert p._spec["config"]["max_active"] == 5


def test_a_worker_that_cannot_open_the_store_fails_open_with_its_typed_error(tmp_path: Path) -> None:
    t = time.monotonic()
    with pytest.raises(InputError, match="no hopweave store"):
        EnginePool.open(tmp_path / "nothing-here", workers=2, start_timeout_s=120)
    assert time.monotonic() - t < 120  # the first worker's failure ends open at once


def test_errors_cross_as_json_with_their_class_and_attributes() -> None:
    exc = PatternValidationError("recent_payments", "max_visited", "must be >= 1", "raise it")
    back = error_from_json(error_json(exc), "worker 0")
    assert type(back) is PatternValidationError and str(back) == str(exc)
    assert (back.pattern, back.field, back.fix) == ("recent_payments", "max_visited", "raise it")
    busy = error_from_json(error_json(StoreBusyError("lock held", lock_path="/x/lock", holder="pid 7")), "w")
    assert isinstance(busy, StoreBusyError) and busy.lock_path == "/x/lock" and busy.holder == "pid 7"
    other = error_from_json(error_json(KeyError("boom")), "pool worker 1 (pid 9)")
    assert isinstance(other, WorkerError) and "KeyError" in str(other) and "pool worker 1" in str(other)


def test_each_worker_answers_byte_identically_and_like_a_plain_engine(pool: EnginePool, store: Path) -> None:
    before = _served(pool)
    first = pool.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    second = pool.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    after = _served(pool)
    assert [a - b for a, b in zip(after, before)] == [1, 1]  # one request each (least loaded, then fewest served)
    assert first.goal == "LateFeeDispute" and not first.degraded and first.chunks and first.facts
    body = _same(first, second)
    # a plain engine in this process, on the live shard (the workers serve private copies)
    with Engine.open(store, config=REPLAY_CONFIG) as eng:
        plain = eng.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    assert _same(first, plain) == body


def test_a_burst_is_spread_over_the_workers(pool: EnginePool) -> None:
    before = _served(pool)
    out: list[Any] = []

    def one(i: int) -> None:
        try:
            out.append(pool.retrieve(f"Ref {i}: can you waive the late fee?", session=MARIA, as_of=AS_OF,
                                     record=False))
        except Exception as exc:  # collected and asserted below
            out.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(out) == 12 and all(not isinstance(r, Exception) for r in out), out
    gained = [a - b for a, b in zip(_served(pool), before)]
    assert sum(gained) == 12 and min(gained) >= 3, gained


def test_aretrieve_on_one_loop(pool: EnginePool) -> None:
    async def many() -> list[Any]:
        return await asyncio.gather(*(pool.aretrieve(f"Ref a{i}: dispute this late fee", session=MARIA,
                                                     as_of=AS_OF, record=False) for i in range(8)),
                                    return_exceptions=True)

    res = asyncio.run(many())
    assert all(getattr(r, "goal", None) == "LateFeeDispute" for r in res), res


def test_typed_errors_cross_the_process_boundary(pool: EnginePool) -> None:
    with pytest.raises(InputError):  # checked in the caller's process
        pool.retrieve("", session=MARIA)
    with pytest.raises(TenantError, match="not served"):  # raised in a worker, same class and message
        pool.retrieve(UTTERANCE, session={"tenant_id": "nobody"}, as_of=AS_OF)
    with pytest.raises(InputError, match="not declared by domain 'deltabank'"):  # the worker checks these
        pool.retrieve(UTTERANCE, session={**MARIA, "attributes": {"zzz": 1}}, as_of=AS_OF, record=False)
    with pytest.raises(InputError, match="fails the pattern gates"):
        pool.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False,
                      pattern_overrides={"applicable_rules": {"max_visited": 0}})
    with pytest.raises(TenantError):
        asyncio.run(pool.aretrieve(UTTERANCE, session={"tenant_id": "nobody"}, as_of=AS_OF))


def test_a_recorded_trace_is_found_through_the_pool(pool: EnginePool, store: Path) -> None:
    r = pool.retrieve("Ref rec: please waive the $39 late fee", session=MARIA, as_of=AS_OF, record=True)
    assert r.recorded
    from hopweave.engine.record import load

    with Engine.open(store, config=REPLAY_CONFIG) as eng:  # another process's view of the store
        assert load(eng.graph, "deltabank", r.trace_id).trace_id == r.trace_id


def _stop_all(pool: EnginePool) -> list[int]:
    pids = pool.pids()
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    return pids


def test_hung_workers_never_hold_a_caller_past_its_budget(pool: EnginePool) -> None:
    pids = _stop_all(pool)
    try:
        t = time.monotonic()
        with pytest.raises(OverloadedError, match="did not answer"):
            pool.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, budget_ms=300, record=False)
        assert time.monotonic() - t < 10  # budget 0.3 s + grace 0.2 s; bounded, not a timing test
        with pytest.raises(OverloadedError):
            asyncio.run(pool.aretrieve(UTTERANCE, session=MARIA, as_of=AS_OF, budget_ms=300, record=False))
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def test_a_worker_that_dies_fails_its_requests_and_is_restarted(pool: EnginePool) -> None:
    pids = _stop_all(pool)
    outcome: list[Any] = []
    caller = threading.Thread(target=lambda: outcome.append(_try(pool)))
    caller.start()
    try:
        deadline = time.monotonic() + 10
        busy = None
        while busy is None and time.monotonic() < deadline:
            busy = next((s for s in pool.stats() if s["inflight"]), None)
            time.sleep(0.01)
        assert busy is not None
        t = time.monotonic()
        os.kill(busy["pid"], signal.SIGKILL)
        caller.join(30)
        assert outcome and isinstance(outcome[0], WorkerError), outcome
        assert time.monotonic() - t < 20  # well before the request's 60 s budget: no hang
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        slot = pool.stats()[busy["slot"]]
        if slot["state"] == "ready" and slot["restarts"] == 1:
            break
        time.sleep(0.2)
    assert slot["state"] == "ready" and slot["pid"] != busy["pid"] and "exit status -9" in slot["last_exit"]
    r = pool.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    assert r.goal == "LateFeeDispute"


@pytest.mark.slow  # several seconds (processes, CLI runs): the slow suite, which CI also runs
def test_a_hung_worker_is_avoided_then_killed_and_restarted(pool: EnginePool) -> None:
    """A worker that stops answering (SIGSTOP) costs one caller its budget: then requests go to
    the other worker, and once it has sent nothing for ``hung_after_s`` it is killed and
    restarted, so the pool's capacity comes back."""
    pool.hung_after_s = 1.0
    victim = pool.stats()[0]
    os.kill(victim["pid"], signal.SIGSTOP)
    try:
        both: list[Any] = []
        # 1 s: the live worker answers well within it even on a loaded machine; the hung one cannot
        callers = [threading.Thread(target=lambda: both.append(_try(pool, budget_ms=1000))) for _ in range(2)]
        for c in callers:  # one request for each worker (the fewest in flight)
            c.start()
        for c in callers:
            c.join(30)
        assert sorted(type(x).__name__ for x in both) == ["OverloadedError", "RetrievalResult"], both
        after = [_try(pool, budget_ms=2000) for _ in range(3)]
        assert all(getattr(x, "goal", None) == "LateFeeDispute" for x in after), after  # the live worker
        time.sleep(1.2)
        assert getattr(_try(pool, budget_ms=2000), "goal", None) == "LateFeeDispute"  # and the hung one is killed
        deadline = time.monotonic() + 240
        slot = pool.stats()[0]
        while time.monotonic() < deadline and not (slot["state"] == "ready" and slot["pid"] != victim["pid"]):
            time.sleep(0.2)
            slot = pool.stats()[0]
        assert slot["state"] == "ready" and slot["pid"] != victim["pid"] and "exit status -9" in slot["last_exit"]
    finally:
        pool.hung_after_s = 15.0
        try:
            os.kill(victim["pid"], signal.SIGCONT)
        except ProcessLookupError:
            pass
    r = pool.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    assert r.goal == "LateFeeDispute"


def _try(pool: EnginePool, budget_ms: int = 60_000) -> Any:
    try:
        return pool.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, budget_ms=budget_ms, record=False)
    except Exception as exc:
        return exc


def test_close_leaves_no_process_and_no_private_copy(pool: EnginePool) -> None:
    pids = pool.pids()
    assert len(pids) == 2
    pool.close()
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists()  # exited and reaped
    left = [p for p in Path(tempfile.gettempdir()).glob(f"{PREFIX}*")
            if p.name[len(PREFIX):].split("-", 1)[0] in {str(x) for x in pids}]
    assert not left
    with pytest.raises(WorkerError, match="closed"):
        pool.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF)
