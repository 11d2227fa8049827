"""Request slots (engine/admission.py): first come, first served, and handed over only to a
request whose work still fits before its deadline; the engine's use of them."""

from __future__ import annotations

import threading
import time

import pytest
from busy import all_slots_held
from domains import AS_OF, MARIA

from hopweave.engine.admission import REFUSED, HoldClock, RecentTimes, Slots
from hopweave.engine.engine import Engine


def _queue(slots: Slots, n: int, end: float | None = None, wait_s: float = 10.0
           ) -> tuple[list[threading.Thread], list[tuple[int, bool, float]]]:
    """``n`` threads queued for a slot one after another (each in the queue before the next
    starts); each appends (its number, whether it got a slot, seconds it waited)."""
    got: list[tuple[int, bool, float]] = []
    threads = []
    for i in range(n):
        def ask(i: int = i) -> None:
            t = time.perf_counter()
            got.append((i, slots.acquire(wait_s, end), time.perf_counter() - t))

        before = slots.waiting
        th = threading.Thread(target=ask)
        th.start()
        deadline = time.perf_counter() + 5
        while slots.waiting == before and time.perf_counter() < deadline:
            time.sleep(0.001)
        assert slots.waiting == before + 1
        threads.append(th)
    return threads, got


def test_slots_go_first_come_first_served_and_a_newcomer_does_not_jump_the_queue() -> None:
    slots = Slots(1, lambda: 0.0)
    assert slots.acquire(0) and slots.busy
    threads, got = _queue(slots, 3)
    assert not slots.acquire(0)  # queued requests go first, even when asked without waiting
    for k in range(3):
        slots.release()
        threads[k].join(5)
        assert [i for i, ok, _ in got] == list(range(k + 1)) and all(ok for _, ok, _ in got)
    slots.release()
    assert not slots.busy and slots.acquire(0)  # back in the pool


def test_a_slot_is_not_handed_to_a_request_whose_work_no_longer_fits() -> None:
    """The expected hold (1 s) does not fit before the first two waiters' end: both are told at
    once (not at their timeout) and the slot goes to the third, which set no end."""
    slots = Slots(1, lambda: 1.0)
    assert slots.acquire(0)
    soon = time.perf_counter() + 0.5
    first, got = _queue(slots, 2, end=soon)
    last, got_last = _queue(slots, 1)
    slots.release()
    for th in [*first, *last]:
        th.join(5)
    assert sorted((i, ok) for i, ok, _ in got) == [(0, False), (1, False)]
    assert all(waited < 0.4 for _, _, waited in got)  # refused at the hand-off, before their end
    assert got_last[0][1] and slots.waiting == 0


def test_a_waiter_that_would_start_too_late_behind_the_others_is_told_at_once() -> None:
    """One slot, an expected hold of 0.4 s, three waiters that must end within about 1 s: the
    first starts now, the second after one hold, the third after two (ending past its end)."""
    slots = Slots(1, lambda: 0.4)
    assert slots.acquire(0)
    end = time.perf_counter() + 1.0
    threads, got = _queue(slots, 3, end=end)
    slots.release()
    threads[0].join(5)
    threads[2].join(5)
    assert sorted((i, ok) for i, ok, _ in got) == [(0, True), (2, False)]
    assert slots.waiting == 1  # the second still waits for its turn
    slots.release()
    threads[1].join(5)
    assert (1, True) in [(i, ok) for i, ok, _ in got]


def test_a_standing_queue_serves_its_newest_waiter_first() -> None:
    """Once the oldest waiter has waited more than a quarter of the time it had, the newest
    (with the most time left) gets the slot: adaptive LIFO (on an injected clock: no sleep)."""
    now = [100.0]
    slots = Slots(1, lambda: 0.0, clock=lambda: now[0])
    assert slots.acquire(0)
    end = now[0] + 2.0
    threads, got = _queue(slots, 3, end=end)
    now[0] += 0.6  # > 2.0 / 4
    slots.release()
    threads[2].join(5)
    assert [(i, ok) for i, ok, _ in got] == [(2, True)]
    for _ in range(2):
        slots.release()
    for th in threads:
        th.join(5)
    assert sorted(i for i, ok, _ in got if ok) == [0, 1, 2]


def test_a_waiter_leaves_the_queue_at_its_timeout() -> None:
    slots = Slots(1, lambda: 0.0)
    assert slots.acquire(0)
    threads, got = _queue(slots, 1, wait_s=0.05)
    threads[0].join(5)
    assert got[0][1] is False and got[0][2] >= 0.05 and slots.waiting == 0
    slots.release()
    assert slots.acquire(0)


def test_the_expected_hold_of_a_queue_is_that_of_holds_with_every_slot_taken() -> None:
    clock = HoldClock()
    assert clock.expected_ms() == 0.0  # cold: admits
    for _ in range(20):
        clock.add(30.0, busy=False)  # requests one at a time
    for ms in (120.0, 140.0, 130.0):
        clock.add(ms, busy=True)
    assert clock.expected_ms() == 30.0  # too few holds with every slot taken yet
    clock.add(150.0, busy=True)
    assert clock.expected_ms(busy=True) == 140.0 and clock.expected_ms(busy=False) == 30.0


def test_recent_times_quantiles() -> None:
    clock = RecentTimes(n=4)
    assert clock.quantile_ms(0.5) == 0.0 and clock.recent_max_ms() == 0.0
    for ms in (5.0, 1.0, 3.0, 9.0, 7.0):  # the first falls out
        clock.add(ms)
    assert clock.quantile_ms(0.5) == 7.0 and clock.recent_max_ms() == 9.0


def test_a_request_that_cannot_finish_in_time_answers_at_once_without_starting(engine: Engine) -> None:
    """Every slot busy, the last holds longer than the budget and no ladder slots: a request
    answers degraded right away (no understanding, no search started), not after waiting out its
    budget (with ladder slots it steps down first: tests/unit/engine/test_ladder.py)."""
    import dataclasses

    sib = engine.sibling(index=engine.index, understander=None,
                         config=dataclasses.replace(engine.config, ladder_max_active=0))
    try:
        with all_slots_held(sib):
            t = time.perf_counter()
            out = sib.retrieve("Why was I charged a monthly fee? I am on the Gold tier.", session=MARIA, as_of=AS_OF,
                               record=False, budget_ms=2_000)
            waited = time.perf_counter() - t
        assert waited < 1.0, waited
        assert any(d.what == "request capacity" for d in out.degraded)
        assert out.chunks == () and out.goal is None
    finally:
        sib.close_pools()


def test_a_one_intent_request_keeps_the_slot_its_split_ran_in(engine: Engine, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    """A request that may carry two intents takes one slot for the split and the pipeline: with a
    single slot, it is answered in full (the pipeline does not queue behind itself)."""
    import dataclasses

    from hopweave.engine import multi_intent

    sib = engine.sibling(index=engine.index, understander=None,
                         config=dataclasses.replace(engine.config, max_active=1))
    sib.warmup()
    taken = []
    acquire = sib.admission.slots.acquire
    monkeypatch.setattr(sib.admission.slots, "acquire", lambda *a, **k: taken.append(a) or acquire(*a, **k))
    utterance = "Why was I charged a monthly fee? I am on the Gold tier and have paid on time."
    assert multi_intent.may_split(utterance) and multi_intent.split_intents(sib.pipeline().deps, _req(utterance)) is None
    try:
        out = sib.retrieve(utterance, session=MARIA, as_of=AS_OF, record=False, budget_ms=30_000)
    finally:
        sib.close_pools()
    assert len(taken) == 1
    assert not any(d.what == "request capacity" for d in out.degraded) and out.chunks


def _req(utterance: str):  # type: ignore[no-untyped-def]
    from hopweave.engine.boundary import check_request

    return check_request(utterance, session=MARIA, as_of=AS_OF, record=False)


def _admission(max_active: int = 1, clock: list[float] | None = None):  # type: ignore[no-untyped-def]
    from hopweave.engine.admission import Admission
    from hopweave.engine.config import EngineConfig

    now = clock if clock is not None else [50.0]
    # no ladder slots: a request refused a slot answers with nothing (or is shed); test_ladder.py steps down
    return Admission(EngineConfig(max_active=max_active, deadline_reserve_ms=40, reserve_per_request_ms=1.5,
                                  ladder_max_active=0), clock=lambda: now[0]), now


def test_admission_times_a_hold_on_its_clock_and_expects_it_of_the_next_waiter() -> None:
    adm, now = _admission()
    grant = adm.take(now[0] + 1.0)
    assert grant.granted and grant.held_since == 50.0 and adm.slots.full
    now[0] += 0.25  # the hold: 250 ms on the injected clock
    adm.release(grant)
    assert not adm.slots.full and adm.hold_clock.expected_ms() == 250.0
    assert adm.expected_wait_ms() == 250.0  # one round of one slot
    adm.release(REFUSED)  # a refused grant holds nothing
    assert not adm.slots.full


def test_admission_refuses_work_that_cannot_end_in_time_and_sheds_on_request() -> None:
    from hopweave.errors import OverloadedError

    adm, now = _admission()
    assert adm.take(now[0]) is REFUSED  # no time left at all
    held = adm.take(now[0] + 5.0)
    for _ in range(HoldClock.MIN_BUSY):
        adm.hold_clock.add(2_000.0, busy=True)
    with pytest.raises(OverloadedError, match="expected wait"):
        adm.take(now[0] + 1.0, shed=True)  # a 2 s hold does not fit in 1 s
    assert not adm.take(now[0] + 1.0).granted and adm.slots.waiting == 0  # told without queueing
    adm.release(held)


def _tool_admission(tool_max_active: int):  # type: ignore[no-untyped-def]
    from hopweave.engine.admission import Admission
    from hopweave.engine.config import EngineConfig

    now = [50.0]
    return Admission(EngineConfig(max_active=1, tool_max_active=tool_max_active, deadline_reserve_ms=40),
                     clock=lambda: now[0]), now


def test_tool_calls_take_their_own_slots_not_a_retrievals() -> None:
    from hopweave.errors import OverloadedError

    adm, now = _tool_admission(2)
    held = adm.take(now[0] + 5.0)  # the only request slot is taken by a retrieval
    assert held.granted and adm.slots.full
    with adm.admitted(200, kind="tool") as deadline:
        assert deadline == 50.2 and adm.tool_slots is not None and not adm.tool_slots.full
        with adm.admitted(200, kind="tool"):
            assert adm.tool_slots.full and adm.slots.waiting == 0
            with pytest.raises(OverloadedError, match="agent-tool calls' 2 slots"):  # a third waits, then gives up
                with adm.admitted(1, kind="tool"):
                    pass
            assert adm.tool_slots.waiting == 0
    assert not adm.tool_slots.full
    adm.release(held)
    assert not adm.slots.full


def test_tool_calls_share_the_request_slots_with_no_tool_slots() -> None:
    from hopweave.errors import OverloadedError

    adm, now = _tool_admission(0)
    assert adm.tool_slots is None
    held = adm.take(now[0] + 5.0)
    with pytest.raises(OverloadedError, match="at capacity"):  # waits its budget less the work, then gives up
        with adm.admitted(50, kind="tool"):
            pass
    adm.release(held)
    with adm.admitted(50, kind="tool"):
        assert adm.slots.full


def test_admission_reserves_grow_with_the_requests_in_flight() -> None:
    adm, _ = _admission(max_active=4)
    assert adm.reserve_ms(800) == 40.0 and adm.load_reserve_ms(800) == 0.0
    with adm.in_flight(), adm.in_flight():
        assert adm.inflight == 2 and adm.reserve_ms(800) == 43.0
    assert adm.inflight == 0
    assert adm.finish_reserve_ms(800) == 40.0
    adm.finished(70.0)
    assert adm.finish_reserve_ms(800) == 70.0 and adm.finish_reserve_ms(200) == 20.0


def test_a_ticket_abandoned_before_it_started_never_runs() -> None:
    from hopweave.engine.admission import Ticket

    ran: list[int] = []
    ticket = Ticket()
    work = ticket.wrap(lambda: ran.append(1) or 1)
    assert ticket.abandon() and work() is None and ran == []
    started = Ticket()
    assert started.wrap(lambda: 2)() == 2 and not started.abandon()
