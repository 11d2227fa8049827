"""Request slots: handed over only to a request that can still finish in time.

The engine lets ``EngineConfig.max_active`` requests work at once; the others wait. These rules
make a burst beyond capacity spend its CPU on answers that finish, instead of on stages cut
short at the deadline, and answer the requests it cannot serve early rather than at their
deadline (issue 13, docs/BENCHMARKS.md "Admission that finishes what it starts"):

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
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Callable


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

    def __init__(self, end: float | None) -> None:
        self.end = end
        self.since = time.perf_counter()
        self.signal = threading.Semaphore(0)  # released once: granted or refused
        self.granted = False
        self.refused = False


class Slots:
    """``n`` slots, handed out first come, first served (see the module docstring).
    ``expected_hold_s`` says how long a request is expected to hold a slot (seconds)."""

    def __init__(self, n: int, expected_hold_s: Callable[[], float]) -> None:
        if n < 1:
            raise ValueError("Slots needs at least one slot")
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
            waiter = _Waiter(end)
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
                now, hold = time.perf_counter(), self._expected_hold_s()
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


__all__ = ["HoldClock", "RecentTimes", "Slots"]
