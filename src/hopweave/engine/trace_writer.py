"""Recording off the hot path: a group commit of decision traces.

A request hands its result to :meth:`GroupCommitter.submit` and waits on the returned future for
at most the time left in its budget. One writer thread takes everything queued, builds the trace
nodes and edges, and writes each tenant's traces in ONE :meth:`GraphStore.write` call (one
journal record, one fsync on the embedded store), passing ``timeout_s`` = the time left to the
latest waiter (at least ``min_write_s``). A future resolves True only after that write returned,
i.e. once the traces are durable: a caller told ``recorded=True`` finds its trace after a crash.

A caller that stops waiting (its budget ran out) reports ``recorded=False``; its trace stays
queued and is written with the next group (it is never dropped silently, and never claimed).
When a group's write fails, its traces are retried one by one so one bad trace cannot fail the
others; each future then carries its own outcome (the exception, typed by the engine).

A busy store (another process holds its lock: ``hopweave load`` rewriting it while the service
runs, a compaction) is not a failure: the round goes back to the head of the queue and is tried
again, each trace for at most ``busy_retry_s`` from its first busy attempt (then its future
carries the StoreBusyError). :meth:`close` (the engine's close, ``serve``'s shutdown on SIGTERM)
keeps trying for at most its timeout, so traces queued during a load are written once it ends.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Callable, TypeVar

from hopweave.engine.pins import PIN_LABEL
from hopweave.errors import StoreBusyError
from hopweave.graph.base import Edge, GraphStore, Node

#: Builds (nodes, edges) of one trace; runs on the writer thread.
Build = Callable[[], tuple[list[Node], list[Edge]]]

__all__ = ["GroupCommitter"]


@dataclass
class _Pending:
    tenant_id: str
    build: Build
    deadline: float
    future: Future[bool] = field(default_factory=Future)
    #: When a write of it first found the store busy (``time.monotonic()``), None before.
    busy_since: float | None = None


class GroupCommitter:
    """Queues traces and makes many durable per store write (per tenant, per round).

    Args:
        store: the graph store the traces go to.
        max_batch: most traces taken in one round.
        min_write_s: the least lock wait a round's write gets (its waiters may have given up).
        busy_retry_s: how long a trace is retried while the store is busy (held by another
            process) before its future carries the StoreBusyError.
        close_timeout_s: the longest :meth:`close` waits for the queue to be written.

    Thread-safe. The writer thread starts on the first submit; :meth:`close` drains the queue.
    """

    def __init__(self, store: GraphStore, *, max_batch: int = 256, min_write_s: float = 1.0,
                 busy_retry_s: float = 600.0, close_timeout_s: float = 60.0) -> None:
        self.store = store
        self.max_batch = max_batch
        self.min_write_s = min_write_s
        self.busy_retry_s = busy_retry_s
        self.close_timeout_s = close_timeout_s
        #: rounds put back because the store was busy (for tests and benchmarks)
        self.busy_rounds = 0
        self._queue: list[_Pending] = []
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._busy = False  # a round taken from the queue is being written
        #: rounds written and traces written (for tests and benchmarks)
        self.writes = 0
        self.traces = 0

    def submit(self, tenant_id: str, build: Build, deadline: float) -> Future[bool]:
        """Queue one trace; ``deadline`` is the caller's (``time.perf_counter()`` clock). Returns
        a future that resolves True once the trace is durable, or to the write's exception.
        Raises RuntimeError after :meth:`close`."""
        p = _Pending(tenant_id, build, deadline)
        with self._cond:
            if self._closed:
                raise RuntimeError("the trace writer is closed")
            self._queue.append(p)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="hopweave-trace-writer", daemon=True)
                self._thread.start()
            self._cond.notify()
        return p.future

    def pending(self) -> int:
        with self._cond:
            return len(self._queue)

    def drain(self, timeout_s: float = 10.0) -> bool:
        """Wait (at most ``timeout_s``) until every queued trace is written; the writer keeps
        running. Returns whether the queue drained in time."""
        end = time.monotonic() + timeout_s
        with self._cond:
            while self._queue or self._busy:
                left = end - time.monotonic()
                if left <= 0 or self._thread is None or not self._thread.is_alive():
                    return not (self._queue or self._busy)
                self._cond.wait(min(left, 0.05))
            return True

    def close(self, timeout_s: float | None = None) -> None:
        """Write what is queued (waiting at most ``timeout_s``, default ``close_timeout_s``,
        also while the store is busy), then stop the writer thread."""
        if timeout_s is None:
            timeout_s = self.close_timeout_s
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    # ---- the writer thread -----------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue and self._closed:
                    return
                batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch:]
                self._busy = True
            try:
                back = self._round(batch)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
            if back:
                with self._cond:
                    self._queue[:0] = back  # first in, first written: ahead of later arrivals
                    self.busy_rounds += 1
                time.sleep(_BUSY_PAUSE_S)  # the write already waited min_write_s for the lock

    def _round(self, batch: list[_Pending]) -> list[_Pending]:
        """Build every trace of the round, then one write per tenant (in arrival order).
        Returns the traces to try again (the store was busy), in arrival order."""
        by_tenant: dict[str, list[tuple[_Pending, list[Node], list[Edge]]]] = {}
        for p in batch:
            try:
                nodes, edges = p.build()
            except BaseException as exc:  # a trace that cannot be built fails alone
                settle(p.future, exc)
                continue
            by_tenant.setdefault(p.tenant_id, []).append((p, nodes, edges))
        back: list[_Pending] = []
        for tenant_id, items in by_tenant.items():
            back.extend(self._write(tenant_id, items))
        order = {id(p): i for i, p in enumerate(batch)}
        return sorted(back, key=lambda p: order[id(p)])

    def _write(self, tenant_id: str, items: list[tuple[_Pending, list[Node], list[Edge]]]) -> list[_Pending]:
        """One write of ``items``; returns those to try again because the store was busy."""
        timeout = max(max(p.deadline for p, _, _ in items) - time.perf_counter(), self.min_write_s)
        nodes = _unique_pins([n for _, ns, _ in items for n in ns])
        edges = [e for _, _, es in items for e in es]
        try:
            self.store.write(tenant_id, nodes, edges, timeout_s=timeout)
        except StoreBusyError as exc:
            now, back = time.monotonic(), []
            for p, _, _ in items:
                p.busy_since = now if p.busy_since is None else p.busy_since
                if now - p.busy_since < self.busy_retry_s:
                    back.append(p)
                else:
                    settle(p.future, exc)
            return back
        except BaseException as exc:
            if len(items) == 1:
                settle(items[0][0].future, exc)
                return []
            back = []
            for item in items:  # isolate the failing trace(s)
                back.extend(self._write(tenant_id, [item]))
            return back
        self.writes += 1
        self.traces += len(items)
        for p, _, _ in items:
            settle(p.future, True)
        return []


def _unique_pins(nodes: list[Node]) -> list[Node]:
    """``nodes`` without repeats of a pinned text (content-addressed: one id, one text) that two
    traces of the round both pinned first."""
    seen: set[str] = set()
    out: list[Node] = []
    for n in nodes:
        if n.label == PIN_LABEL:
            if n.id in seen:
                continue
            seen.add(n.id)
        out.append(n)
    return out


#: Pause between two tries of a round the busy store refused.
_BUSY_PAUSE_S = 0.05

T = TypeVar("T")


def settle(fut: Future[T], outcome: T | BaseException) -> None:
    """Resolve ``fut`` with a result or an exception (a caller that gave up may have cancelled
    it: nothing to tell then). Shared by the trace writer and the engine pool."""
    try:
        if isinstance(outcome, BaseException):
            fut.set_exception(outcome)
        else:
            fut.set_result(outcome)
    except InvalidStateError:
        pass
