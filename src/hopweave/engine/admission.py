"""Request slots: first come, first served, handed over only to a request that can still finish.

The engine lets ``EngineConfig.max_active`` requests work at once; the others wait. Two rules
make a burst beyond capacity spend its CPU on answers that finish instead of on work that is cut
at the deadline (issue 13, docs/BENCHMARKS.md "Admission that finishes what it starts"):

- **First come, first served.** A freed slot goes to the request that has waited longest, never
  to one that arrives at that moment (a semaphore lets a newcomer take it while the woken
  waiter is still being scheduled, so who is served was left to the thread scheduler).
- **Handed over only when the work fits.** A waiter says by when its work in the slot must end
  (its deadline less what finishing takes). A slot is not handed to a waiter for which the
  expected hold (the median of the last holds, :class:`RecentTimes`) no longer fits before that
  instant: it is told at once and answers degraded, and the slot goes to the next waiter, so no
  slot is spent on a request whose stages would be cut short anyway.
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

    def quantile_ms(self, q: float) -> float:
        xs = sorted(self._ms)
        return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


class _Waiter:
    __slots__ = ("end", "event", "granted", "refused", "since")

    def __init__(self, end: float | None) -> None:
        self.end = end
        self.since = time.perf_counter()
        self.event = threading.Event()
        self.granted = False
        self.refused = False


class Slots:
    """``n`` slots, handed out first come, first served (see the module docstring).
    ``expected_hold_s`` says how long a request is expected to hold a slot (seconds)."""

    def __init__(self, n: int, expected_hold_s: Callable[[], float]) -> None:
        if n < 1:
            raise ValueError("Slots needs at least one slot")
        self._free = n
        self._queue: collections.deque[_Waiter] = collections.deque()
        self._lock = threading.Lock()
        self._expected_hold_s = expected_hold_s

    @property
    def busy(self) -> bool:
        """True when a request asking now would have to wait (no slot free, or others queued)."""
        return not self._free or bool(self._queue)

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
        waiter.event.wait(wait_s)
        with self._lock:
            if waiter.granted:
                return True
            if not waiter.refused:  # timed out: leave the queue
                self._queue.remove(waiter)
            return False

    def release(self) -> None:
        """Give a slot back. The waiters whose work no longer fits before their ``end`` are told
        so and leave the queue; the slot goes to the longest-waiting of the others, or, when the
        queue stands (its oldest has waited more than a quarter of the time it had left when it
        queued), to the newest: under sustained overload the oldest have too little time left
        to finish, so serving them first would cut every answer short (adaptive LIFO). With no
        waiter left, the slot goes back to the pool."""
        with self._lock:
            if self._queue:
                now, hold = time.perf_counter(), self._expected_hold_s()
                for waiter in [w for w in self._queue if w.end is not None and now + hold > w.end]:
                    self._queue.remove(waiter)
                    waiter.refused = True
                    waiter.event.set()
            if self._queue:
                oldest = self._queue[0]
                standing = oldest.end is not None and now - oldest.since > (oldest.end - oldest.since) / 4
                waiter = self._queue.pop() if standing else self._queue.popleft()
                waiter.granted = True
                waiter.event.set()
                return
            self._free += 1


__all__ = ["RecentTimes", "Slots"]
