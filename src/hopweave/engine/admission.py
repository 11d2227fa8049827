"""Request slots: handed over only to a request that can still finish in time.

The engine lets ``EngineConfig.max_active`` requests work at once; the others wait. These rules
make a burst beyond capacity spend its CPU on answers that finish, instead of on stages cut
short at the deadline, and answer the requests it cannot serve early rather than at their
deadline (docs/BENCHMARKS.md "Admission that finishes what it starts"):

- **No barging.** A freed slot goes to a waiting request, never to one that arrives at that
  moment (a semaphore lets a newcomer take it while the woken waiter is still being scheduled,
  so who was served was left to the thread scheduler).
- **First come, first served, until the queue stands.** Once the oldest waiter has waited more
  than a quarter of the time it had left when it queued, the newest waiter is served first
  (adaptive LIFO, as in Facebook's queue management): under sustained overload the oldest have
  too little time left to finish, and serving them first would cut every answer short.
- **Handed over only when the work fits.** A waiter says by when its work in the slot must end
  (its deadline less what finishing takes). At each hand-off, in arrival order, each waiter is
  expected to start after those before it, ``n`` at a time, each holding a slot for the
  expected hold (:class:`HoldClock`: the median of the last holds that ended with every slot
  taken); a waiter whose work would then end past its ``end`` is told at once and answers
  degraded, with none of its stages started. In a standing queue a waiter is told only when
  even a slot handed over now would leave it too little time: answering early there only feeds
  callers that resend at once (measured: 100 closed-loop clients sent 13,669 requests in 30 s,
  2 answered in full).
- **A cheaper answer before none** (:mod:`hopweave.engine.ladder`). A request that gets no
  request slot in time (told at a hand-off, or at once when the expected wait is already past
  its end) steps down the degradation ladder: it waits for one of the ladder's own
  ``ladder_max_active`` slots (the same rules, with the ladder's own expected hold) and runs the
  ``facts_and_lexical`` rung in it; only when none is handed over in time either does it answer
  on the ``nothing`` rung (no stage started), or is shed.
"""

from __future__ import annotations

import collections
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, TypeVar

from hopweave.engine.ladder import LADDER
from hopweave.engine.result import Degradation, Rung
from hopweave.errors import OverloadedError

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.config import EngineConfig, Run

T = TypeVar("T")
#: What a request that got no slot in time answers with (its stages are skipped).
NO_SLOT_FALLBACK = LADDER["nothing"].keeps
#: The rung a ladder slot runs.
LADDER_RUNG: Rung = "facts_and_lexical"


class RecentTimes:
    """The last ``n`` measured durations (ms): their maximum and quantiles. Thread-safe enough:
    appends to a bounded deque, read through a snapshot."""

    def __init__(self, n: int = 64) -> None:
        self._ms: collections.deque[float] = collections.deque(maxlen=n)

    def add(self, ms: float) -> None:
        self._ms.append(ms)

    def recent_max_ms(self) -> float:
        return max(tuple(self._ms), default=0.0)

    def count(self) -> int:
        return len(self._ms)

    def quantile_ms(self, q: float) -> float:
        xs = sorted(self._ms)
        return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


class HoldClock:
    """How long requests hold a slot (ms): every hold, and apart the holds that ended with every
    slot taken (run among ``n`` active requests, so longer than a hold alone: on 2 cores, a hold
    among 4 takes several times a hold alone). A queue forms only when every slot is taken, so
    its expected hold is the median of those once a few were measured."""

    #: Holds with every slot taken needed before their median is used.
    MIN_BUSY = 4

    def __init__(self) -> None:
        self._all = RecentTimes()
        self._busy = RecentTimes(n=16)

    def add(self, ms: float, busy: bool) -> None:
        self._all.add(ms)
        if busy:
            self._busy.add(ms)

    def expected_ms(self, busy: bool = True) -> float:
        """The expected hold: with every slot taken (``busy``), the median of the last holds that
        ended that way once there are :data:`MIN_BUSY` of them; else the median of the last holds
        (0 before any: a cold estimate admits)."""
        if busy and self._busy.count() >= self.MIN_BUSY:
            return self._busy.quantile_ms(0.5)
        return self._all.quantile_ms(0.5)


class _Waiter:
    __slots__ = ("end", "granted", "refused", "signal", "since")

    def __init__(self, end: float | None, since: float) -> None:
        self.end = end
        self.since = since
        self.signal = threading.Semaphore(0)  # released once: granted or refused
        self.granted = False
        self.refused = False


class Slots:
    """``n`` slots, handed out first come, first served (see the module docstring).
    ``expected_hold_s`` says how long a request is expected to hold a slot (seconds); ``clock``
    is the clock of the ``end`` instants and of the queue's waits (default
    ``time.perf_counter``; a test passes its own to decide when a queue stands). Raises
    ValueError for ``n < 1``."""

    def __init__(self, n: int, expected_hold_s: Callable[[], float],
                 clock: Callable[[], float] = time.perf_counter) -> None:
        if n < 1:
            raise ValueError("Slots needs at least one slot")
        self._clock = clock
        self._n = n
        self._free = n
        self._queue: collections.deque[_Waiter] = collections.deque()
        self._lock = threading.Lock()
        self._expected_hold_s = expected_hold_s

    @property
    def busy(self) -> bool:
        """True when a request asking now would have to wait (no slot free, or others queued)."""
        return not self._free or bool(self._queue)

    @property
    def full(self) -> bool:
        """True when every slot is taken."""
        return not self._free

    @property
    def waiting(self) -> int:
        """Requests queued for a slot now."""
        return len(self._queue)

    def acquire(self, wait_s: float, end: float | None = None) -> bool:
        """A slot: at once when one is free and nobody waits, else after the requests queued
        before this one, waiting at most ``wait_s`` seconds. ``end`` (a ``time.perf_counter()``
        instant): the work in the slot must end by then, so a slot is not handed over once the
        expected hold no longer fits before it. True with the slot held (give it back with
        :meth:`release`), False when none was handed over."""
        with self._lock:
            if self._free and not self._queue:
                self._free -= 1
                return True
            if wait_s <= 0:
                return False
            waiter = _Waiter(end, self._clock())
            self._queue.append(waiter)
        waiter.signal.acquire(timeout=wait_s)
        with self._lock:
            if waiter.granted:
                return True
            if not waiter.refused:  # timed out: leave the queue
                self._queue.remove(waiter)
            return False

    def release(self) -> None:
        """Give a slot back: to the next waiter in service order, else to the pool.

        Service order is arrival order, or newest first once the queue stands (its oldest has
        waited more than a quarter of the time it had left when it queued): under sustained
        overload the oldest have too little time left to finish, so serving them first would cut
        every answer short (adaptive LIFO). A waiter whose work would end past its ``end`` is
        told at once and leaves the queue (it answers degraded now, not at its deadline): in
        arrival order, each waiter is expected to start after the ones before it, ``n`` at a
        time, each holding a slot for the expected hold; in a standing queue, a waiter is told
        only once even a slot handed over now would leave it too little time, so that callers
        who resend at once are held back instead of fed refusals."""
        with self._lock:
            standing = False
            if self._queue:
                now, hold = self._clock(), self._expected_hold_s()
                oldest = self._queue[0]
                standing = oldest.end is not None and now - oldest.since > (oldest.end - oldest.since) / 4
                order = list(reversed(self._queue)) if standing else list(self._queue)
                ahead = 0
                for waiter in order:
                    # a standing queue counts none ahead: answering its waiters early only feeds
                    # more load (closed-loop callers resend at once: 13,669 requests in 30 s, 2 full)
                    starts = now if standing else now + ahead / self._n * hold
                    if waiter.end is not None and starts + hold > waiter.end:
                        waiter.refused = True
                        waiter.signal.release()
                    else:
                        ahead += 1
                if ahead < len(order):
                    self._queue = collections.deque(w for w in self._queue if not w.refused)
            if self._queue:
                waiter = self._queue.pop() if standing else self._queue.popleft()
                waiter.granted = True
                waiter.signal.release()
                return
            self._free += 1


@dataclass(frozen=True)
class Grant:
    """A slot handed over (``held_since``: the ``Admission`` clock's instant it was taken), or
    none handed over in time (``held_since`` None), and the rung of the degradation ladder the
    request runs (:mod:`hopweave.engine.ladder`): ``full`` in a request slot,
    ``facts_and_lexical`` in a ladder slot, ``nothing`` without a slot."""

    held_since: float | None
    rung: Rung = "full"

    @property
    def granted(self) -> bool:
        """True when a slot is held (give it back with :meth:`Admission.release`)."""
        return self.held_since is not None


#: No slot was handed over in time: the ``nothing`` rung.
REFUSED = Grant(None, "nothing")


class Admission:
    """The engine's admission control: ``config.max_active`` request slots (:class:`Slots`),
    the clocks that say how long a slot is held and how long finishing takes, the reserves kept
    at the end of a budget, and the requests in flight.

    Args:
        config: the engine's budgets (``max_active``, ``ladder_max_active``,
            ``deadline_reserve_ms``, ``reserve_per_request_ms``, ``budget_ms``).
        clock: the clock of every instant it takes or returns (default ``time.perf_counter``,
            the clock of a request's deadline).
    """

    def __init__(self, config: "EngineConfig", clock: Callable[[], float] = time.perf_counter) -> None:
        self.config = config
        self.clock = clock
        #: How long requests hold a slot (the expected hold of the hand-offs, ``expected_wait_ms``).
        self.hold_clock = HoldClock()
        #: The request slots: first come, first served, handed over only to work that can finish.
        self.slots = Slots(config.max_active, lambda: self.hold_clock.expected_ms() / 1000.0, clock)
        #: The agent-tool calls' own slots (``config.tool_max_active``; None when 0: they share
        #: the request slots). A tool call is one encoder pass and one filtered search, so it
        #: neither takes a retrieval's slot nor waits behind retrievals holding them.
        # (a tool call waits without an ``end``: no hand-off refuses it early, so no expected hold)
        self.tool_slots = Slots(config.tool_max_active, lambda: 0.0, clock) if config.tool_max_active > 0 else None
        #: How long ladder slots are held, and the ladder's own slots (None when
        #: ``config.ladder_max_active`` is 0: a request without a request slot answers on the
        #: ``nothing`` rung).
        self.ladder_hold = HoldClock()
        self.ladder_slots = Slots(config.ladder_max_active, lambda: self.ladder_hold.expected_ms() / 1000.0,
                                  clock) if config.ladder_max_active > 0 else None
        self._finish_clock = RecentTimes()
        self._block_clocks: dict[str, RecentTimes] = {}
        self._lock = threading.Lock()
        self._inflight = 0

    # ---- requests in flight ----------------------------------------------------------------
    @property
    def inflight(self) -> int:
        """Requests running the pipeline now (admitted or not)."""
        return self._inflight

    @contextmanager
    def in_flight(self) -> Iterator[None]:
        """Count one request in flight for the block (the reserves grow with them)."""
        with self._lock:
            self._inflight += 1
        try:
            yield
        finally:
            with self._lock:
                self._inflight -= 1

    def load_reserve_ms(self, budget_ms: float) -> float:
        """``reserve_per_request_ms`` per request in flight (they assemble one at a time under
        the GIL), at most 40% of ``budget_ms``."""
        return min(self.config.reserve_per_request_ms * self._inflight, budget_ms * 0.4)

    def reserve_ms(self, budget_ms: float) -> float:
        """The end of a ``budget_ms`` budget the stages leave for assembly:
        ``deadline_reserve_ms`` (at most 10% of it) plus :meth:`load_reserve_ms`."""
        return self.config.reserve_ms(budget_ms) + self.load_reserve_ms(budget_ms)

    def finish_reserve_ms(self, budget_ms: float) -> float:
        """The end of a budget kept for finishing a request that did no work (assembly, result,
        trace hand-off): the slowest of the last finishes measured (:meth:`finished`), at least
        ``deadline_reserve_ms`` and at most 10% of the budget. A request not started by then is
        answered degraded (or shed) so that it still lands by its deadline."""
        return max(self.config.reserve_ms(budget_ms), min(self._finish_clock.recent_max_ms(), budget_ms * 0.1))

    def finished(self, ms: float) -> None:
        """Record how long one request's finish (the stages after the slot) took."""
        self._finish_clock.add(ms)

    # ---- slots -------------------------------------------------------------------------------
    def expected_wait_ms(self) -> float:
        """How long a request arriving now would wait for a request slot: the requests already
        waiting plus it, ``max_active`` at a time, each round the expected hold
        (:class:`HoldClock`; 0 before any was measured: a cold estimate admits, it never sheds)."""
        n = self.config.max_active
        rounds = (self.slots.waiting + 1 + n - 1) // n
        return rounds * self.hold_clock.expected_ms()

    def overloaded(self, budget_ms: int | None, why: str) -> OverloadedError:
        """The error of a request shed without an answer (``budget_ms`` None: the default)."""
        return OverloadedError(f"{why} ({self.config.max_active} requests in progress, budget "
                               f"{budget_ms or self.config.budget_ms} ms): shed without an answer; retry shortly")

    def take(self, end: float, *, shed: bool = False, budget_ms: int | None = None) -> Grant:
        """One of the request slots for work that must end by ``end`` (an instant of
        :attr:`clock`), handed over only while the expected hold still fits before it.

        Args:
            end: when the work in the slot must be done.
            shed: raise rather than wait when the expected wait (:meth:`expected_wait_ms`) is
                already past that point and there is no ladder to step down to.
            budget_ms: the request's budget, named in the error (None: the default).

        Returns:
            The grant (:data:`REFUSED` when no slot was handed over in time, and at once when
            the expected wait is already past ``end`` and the ladder has slots: the caller steps
            down, :meth:`step_down`).

        Raises:
            OverloadedError: with ``shed`` and no ladder slots, when the expected wait is past ``end``.
        """
        now = self.clock()
        if end <= now:  # no time left at all
            return REFUSED
        wait = end - self.hold_clock.expected_ms(self.slots.busy) / 1000.0 - now
        if (shed or self.ladder_slots is not None) and self.slots.busy and self.expected_wait_ms() / 1000.0 > wait:
            if self.ladder_slots is not None:  # step down now, while the cheaper rung still has time
                return REFUSED
            raise self.overloaded(budget_ms, f"the expected wait for a request slot ({self.expected_wait_ms():.0f} "
                                             "ms) is past the request's deadline")
        return Grant(self.clock()) if self.slots.acquire(wait, end) else REFUSED

    def release(self, grant: Grant) -> None:
        """Give back a granted slot, a request slot or a ladder slot (its hold time feeds that
        lane's expected hold); a refused grant holds nothing and is ignored."""
        if grant.held_since is None:
            return
        ms = round((self.clock() - grant.held_since) * 1000, 3)
        if grant.rung == "full":
            self.hold_clock.add(ms, self.slots.full)
            self.slots.release()
        elif self.ladder_slots is not None:
            self.ladder_hold.add(ms, self.ladder_slots.full)
            self.ladder_slots.release()

    def admit(self, run: "Run", shed: bool = False) -> Grant:
        """A slot for one run of the pipeline, handed over only while the expected slot hold
        still fits before the run's deadline less its reserve (:meth:`reserve_ms`). When none
        was handed over in time the run steps down the ladder (:meth:`step_down`).

        Returns:
            The grant, whose ``rung`` says what the run does.

        Raises:
            OverloadedError: with ``shed``, when no rung with stages can be handed over in time.
        """
        grant = self.take(run.deadline - self.reserve_ms(run.budget_ms) / 1000.0, shed=shed,
                          budget_ms=run.req.budget_ms)
        return grant if grant.granted else self.step_down(run, shed)

    def step_down(self, run: "Run", shed: bool) -> Grant:
        """A run that got no request slot in time: one of the ladder's slots for the
        ``facts_and_lexical`` rung, handed over only while the ladder's expected hold still
        fits before the run's deadline less its reserve; else the run is refused
        (:meth:`refuse`, the ``nothing`` rung). The pipeline adds the rung's degradations
        (:meth:`degradations`).

        Returns:
            The ladder grant, or :data:`REFUSED`.

        Raises:
            OverloadedError: with ``shed``, when no ladder slot was handed over in time.
        """
        lane = self.ladder_slots
        if lane is not None:
            end = run.deadline - self.reserve_ms(run.budget_ms) / 1000.0
            wait = end - self.ladder_hold.expected_ms(lane.busy) / 1000.0 - self.clock()
            if wait > 0 and lane.acquire(wait, end):
                return Grant(self.clock(), LADDER_RUNG)
        self.refuse(run, shed)
        return REFUSED

    def refuse(self, run: "Run", shed: bool) -> None:
        """A run that got no slot in time: out of time (its budget ends now, so every stage is
        skipped and flagged; the ``nothing`` rung), so a burst far beyond capacity gets degraded
        answers within budget instead of late ones.

        Raises:
            OverloadedError: with ``shed`` (the request is refused instead).
        """
        if shed:
            raise self.overloaded(run.req.budget_ms, "no request slot freed up in time to finish within the budget")
        run.budget_ms = max(int((self.clock() - run.t_start) * 1000), 0)

    def degradations(self, rung: Rung) -> list[Degradation]:
        """The degradation items of an answer on ``rung`` (none for ``full``): ``engine`` /
        ``request capacity`` naming the rung, then one per part it leaves out
        (:meth:`RungSpec.degradations <hopweave.engine.ladder.RungSpec.degradations>`); the
        same for every answer on that rung of this engine."""
        why = ("no request slot freed up in time to finish within the budget" if rung == "nothing" else
               "no request slot freed up in time for the full pipeline")
        return LADDER[rung].degradations(
            f"the engine was at capacity ({self.config.max_active} requests in progress): {why}")

    @contextmanager
    def admitted(self, budget_ms: int | None = None, *, arrived: float | None = None,
                 kind: str = "call") -> Iterator[float]:
        """One slot for work outside the pipeline, then hold it for the block: wait for a slot
        until the budget (from ``arrived``, default now) less what the work is expected to take
        once it has the slot (the 90th percentile of the last blocks of the same ``kind``, at
        least ``deadline_reserve_ms``, at most half the budget); a free slot nobody waits for is
        taken at once. ``kind="tool"`` (an agent-tool call) takes one of the tool calls' own
        slots (:attr:`tool_slots`) when ``config.tool_max_active`` > 0, any other kind a
        request slot.

        Yields:
            The call's deadline (an instant of :attr:`clock`).

        Raises:
            OverloadedError: no slot freed up in time (the caller retries; nothing waits in an
            unbounded queue).
        """
        t0 = self.clock() if arrived is None else arrived
        budget = (budget_ms or self.config.budget_ms) / 1000.0
        lane = self.tool_slots if kind == "tool" else None
        slots = lane if lane is not None else self.slots
        clock = self._block_clocks.setdefault(kind, RecentTimes())
        keep = min(max(clock.quantile_ms(0.9), self.config.reserve_ms(budget * 1000)) / 1000.0, budget * 0.5)
        wait = budget - keep - (self.clock() - t0)
        if not slots.acquire(max(wait, 0.0)):  # a free slot with nobody waiting is taken at once
            if lane is not None:
                raise OverloadedError(f"the agent-tool calls' {self.config.tool_max_active} slots were taken for "
                                      f"the call's budget ({round(budget * 1000)} ms, {round(keep * 1000)} ms of it "
                                      "kept for the work itself); retry shortly")
            raise OverloadedError(f"the engine was at capacity ({self.config.max_active} requests in progress) "
                                  f"for the call's budget ({round(budget * 1000)} ms, {round(keep * 1000)} ms of "
                                  "it kept for the work itself); retry shortly")
        t = self.clock()
        try:
            yield t0 + budget
        finally:
            slots.release()
            clock.add(round((self.clock() - t) * 1000, 3))


class Ticket:
    """A queued request that the caller can abandon before a worker starts it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = "queued"

    def wrap(self, work: Callable[[], T]) -> Callable[[], T | None]:
        """``work`` that does nothing (returns None) once the ticket was abandoned."""
        def run() -> T | None:
            with self._lock:
                if self._state == "abandoned":
                    return None
                self._state = "started"
            return work()

        return run

    def abandon(self) -> bool:
        """True when the request had not started (it never will now)."""
        with self._lock:
            if self._state == "queued":
                self._state = "abandoned"
            return self._state == "abandoned"


__all__ = ["LADDER_RUNG", "REFUSED", "Admission", "Grant", "HoldClock", "RecentTimes", "Slots", "Ticket"]
