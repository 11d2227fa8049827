"""``hopweave serve``: the engine as an HTTP service (FastAPI on uvicorn; extra ``serve``).

Endpoints (OpenAPI schema at ``/openapi.json``, docs at ``/docs``):

- ``POST /v1/retrieve``: ``{utterance, session, as_of?, budget_ms?, profile?, token_budget?,
  record?}`` -> the :class:`~hopweave.engine.result.RetrievalResult` as JSON (the Python API's
  typed result: ``RetrievalResult.model_validate(response.json())`` round-trips);
- ``POST /v1/tool/retrieve``: the agent tool ``{session, query, mode, filters, top_k,
  as_of?}`` -> ``{"results": [...]}`` (:class:`~hopweave.adapters.agent_tool.RetrieveTool`: the
  session's scope, the documents in force at ``as_of``; a widening filter is a 400
  ScopeFilterError);
- ``POST /v1/outcomes``: ``{trace_id, session, outcome, decided_by?, rationale?, cited?, as_of?}``
  -> the recorded outcome (:class:`~hopweave.engine.outcomes.OutcomeRecord`), as
  ``Engine.record_outcome``;
- ``POST /v1/facts``: ``{tenant_id?, nodes, edges, source?}`` (JSONL records) -> what was written
  (:class:`~hopweave.engine.facts.FactWriteResult`), as ``Engine.write_facts``;
- ``GET /healthz`` (the process answers) and ``GET /readyz`` (models warm, stores open, not
  shutting down: 200; else 503).

Identity: every ``/v1`` request is checked by :class:`~hopweave.adapters.identity.Verifier`
(in the outer ASGI layer, before routing, and else by a dependency of the whole app, so no route
can skip it): a bearer JWT or API key when the
service verifies callers (the session then comes from the token; a body ``session`` may only
repeat it), or the body ``session`` in the trusted-gateway and loopback modes
(:mod:`hopweave.adapters.identity`). The session is then checked by the engine's one boundary
(:mod:`hopweave.engine.boundary`), exactly as ``Engine.retrieve``, and the caller's id is recorded
on the decision trace. Errors are JSON ``{"error": <type>, "message": ...}``: 400 InputError (and
subclasses; also a body that is not its model, e.g. a NaN budget, naming the fields; and SchemaError: a write the schema refuses), 401
AuthenticationError (with ``WWW-Authenticate: Bearer``), 403 TenantError /
CallerMismatchError, 404 NotFoundError (a trace the tenant does not have), 429 RateLimitedError and 503 OverloadedError / StoreUnavailableError (both
with ``Retry-After``), 500 otherwise.

Deadlines: a request's budget runs from its arrival (an outer ASGI middleware stamps it before
the body is read and validated), so time queued in the server counts. A request answers by its
deadline plus a small margin (docs/serve.md, "Deadlines"): degraded and flagged when the work
did not fit; refused with 503 and ``Retry-After`` when it cannot even start in time (its budget
was spent before the handler ran, or it got no engine slot before its deadline). Every answer
carries a ``Server-Timing`` header: ``queue`` (arrival to handler), ``engine``, ``serialise``,
``total`` (ms, server side).

Load shedding: at most ``max_inflight`` requests are admitted at once (running or waiting for
the engine); one more is answered at once with 503 and ``Retry-After`` instead of joining an
unbounded queue. The outer layer refuses before routing what the headers (and, with every engine
slot taken, a retrieval's ``budget_ms``) already decide: 401, 429 over a verified caller's
limits, 503 for a retrieval the expected slot wait would start too late (:func:`create_app`). Graceful shutdown (SIGTERM/SIGINT via uvicorn): readiness turns 503, requests
in flight finish, queued decision traces are written, the stores close.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import threading
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Literal, Optional, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from hopweave.adapters.identity import Caller, IdentityConfig, RateLimiter, Scope, Verifier
from hopweave.errors import (
    AuthenticationError,
    ConfigError,
    FilterError,
    HopweaveError,
    IdentityError,
    InputError,
    MissingDependencyError,
    NotFoundError,
    OverloadedError,
    RateLimitedError,
    SchemaError,
    StoreError,
    StoreUnavailableError,
    TenantError,
    UnknownProfileError,
)
from hopweave.models.common import Session

if TYPE_CHECKING:  # pragma: no cover
    from fastapi import FastAPI
    from starlette.requests import Request as HTTPRequest

    from hopweave.engine.retriever import Retriever
else:  # endpoint annotations are resolved in this module's namespace (the serve extra is optional)
    try:
        from starlette.requests import Request as HTTPRequest
    except ModuleNotFoundError:  # pragma: no cover - depends on the extra
        HTTPRequest = Any

T = TypeVar("T")
#: Response header naming the server process that answered (``hopweave serve --workers N``).
WORKER_HEADER = "x-hopweave-worker"
#: A request's arrival (``time.perf_counter()``), stamped by :class:`_Arrival` in the request's task.
_ARRIVED: contextvars.ContextVar[float] = contextvars.ContextVar("hopweave_arrived")


#: A refusal the front layer sends itself: status, headers (ASGI byte pairs), JSON body.
Refusal = tuple[int, list[tuple[bytes, bytes]], bytes, float]
#: The front layer's check of one ``/v1`` request before the app runs: the refusal to send, or
#: None to go on; the ``receive`` to go on with (another when it read the body); and what to
#: call once the app has answered (None: nothing).
FrontCheck = Callable[[Any, Any, float], Awaitable[tuple[Optional[Refusal], Any, Optional[Callable[[], None]]]]]


#: Refusals held back at once per server process (:class:`_Front`); past it, answered at once.
MAX_HELD_REFUSALS = 1024


class _Front:
    """Outermost ASGI middleware: stamps each HTTP request's arrival (before the body is read,
    parsed and validated, so its budget covers all of that and any queueing), then runs
    ``check`` on ``/v1`` and ``/mcp`` requests and sends its refusal when it has one: no
    routing, no body parsing, no exception handler, so a refusal costs a small fraction of an
    answer. A refusal with a hold (a rate-limit 429: until the caller's bucket has a token, see
    ``IdentityConfig.refusal_hold_ms``) is sent that much later, without using the CPU meanwhile,
    while fewer than :data:`MAX_HELD_REFUSALS` are held; a client that retries at once then sends
    about one request per token instead of as many as the server can refuse."""

    def __init__(self, app: Any, check: Optional[FrontCheck] = None) -> None:
        self.app = app
        self.check = check
        self.held = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            arrived = time.perf_counter()
            _ARRIVED.set(arrived)  # the endpoint runs in this task: it reads it back
            if self.check is not None and (scope["path"].startswith("/v1/") or _is_mcp(scope["path"])):
                refusal, receive, done = await self.check(scope, receive, arrived)
                if refusal is not None:
                    status, headers, body, hold_s = refusal
                    if hold_s > 0 and self.held < MAX_HELD_REFUSALS:
                        self.held += 1
                        try:
                            await asyncio.sleep(hold_s)
                        finally:
                            self.held -= 1
                    timing = f"total;dur={(time.perf_counter() - arrived) * 1000:.1f}".encode()
                    await send({"type": "http.response.start", "status": status,
                                "headers": [*headers, (b"server-timing", timing)]})
                    await send({"type": "http.response.body", "body": body})
                    return
                if done is not None:
                    try:
                        await self.app(scope, receive, send)
                    finally:
                        done()
                    return
        await self.app(scope, receive, send)


def _is_mcp(path: str) -> bool:
    """Whether ``path`` is the MCP endpoint's (``/mcp``, mounted by ``serve --mcp``)."""
    return path == "/mcp" or path.startswith("/mcp/")


def _refusal(exc: HopweaveError, retry_after_s: int, extra: tuple[tuple[bytes, bytes], ...] = (),
             hold_ms: int = 0) -> Refusal:
    """The front layer's answer to ``exc``: the same status, headers and JSON body as the app's
    exception handler gives it, and how long to hold it (a RateLimitedError: until it is due to
    be retried, at most ``hold_ms``; anything else: 0)."""
    status = _status(exc)
    headers = [(b"content-type", b"application/json"), *extra]
    if status == 503:
        headers.append((b"retry-after", str(retry_after_s).encode()))
    elif isinstance(exc, RateLimitedError):
        headers.append((b"retry-after", str(int(max(1, -(-exc.retry_after_s // 1)))).encode()))
    elif isinstance(exc, AuthenticationError):
        headers.append((b"www-authenticate", b'Bearer realm="hopweave"'))
    body = json.dumps({"error": type(exc).__name__, "message": str(exc)}).encode()
    headers.append((b"content-length", str(len(body)).encode()))
    hold = min(exc.retry_after_s, hold_ms / 1000.0) if isinstance(exc, RateLimitedError) else 0.0
    return status, headers, body, max(0.0, hold)


#: The request headers the front layer's identity check reads.
_IDENTITY_HEADERS = frozenset((b"authorization", b"x-api-key", b"x-hopweave-caller"))
#: Largest body the front layer reads to learn a retrieval's ``budget_ms`` (larger: the app reads it).
_PEEK_BODY_BYTES = 64 * 1024


async def _read_body(receive: Any, limit: int) -> tuple[Optional[bytes], Any]:
    """The request body (None when over ``limit`` bytes or the client left) and a ``receive``
    that replays what was read to the app, then goes on with ``receive``."""
    messages: list[Any] = []
    size, chunks = 0, []
    while True:
        msg = await receive()
        messages.append(msg)
        if msg["type"] != "http.request":
            break
        chunk = msg.get("body", b"")
        size += len(chunk)
        chunks.append(chunk)
        if size > limit or not msg.get("more_body", False):
            break
    complete = messages[-1]["type"] == "http.request" and not messages[-1].get("more_body", False)

    async def replay() -> Any:
        return messages.pop(0) if messages else await receive()
    return (b"".join(chunks) if complete and size <= limit else None), replay


def _arrived() -> float:
    return _ARRIVED.get(None) or time.perf_counter()


def _timing(arrived: float, started: float, engine_done: float, serialised: float) -> dict[str, str]:
    """The ``Server-Timing`` header of an answer (ms): arrival to handler, engine, serialisation, total."""
    def ms(a: float, b: float) -> str:
        return f"{(b - a) * 1000:.1f}"
    return {"Server-Timing": f"queue;dur={ms(arrived, started)}, engine;dur={ms(started, engine_done)}, "
                             f"serialise;dur={ms(engine_done, serialised)}, total;dur={ms(arrived, serialised)}"}


__all__ = ["RetrieveBody", "ToolBody", "create_app"]


class RetrieveBody(BaseModel):
    """One retrieval: the same arguments as ``Engine.retrieve``."""

    model_config = ConfigDict(extra="forbid")

    utterance: str = Field(description="What the customer (or agent) said; at most 4,000 characters.")
    session: Optional[dict[str, Any]] = Field(default=None, description=(
        "The session: tenant_id, customer_id, region, ... With a verified bearer token it comes from the token "
        "(omit it, or repeat exactly what the token says); with an API key, or behind a trusted gateway, it is "
        "required."))
    as_of: Optional[str] = Field(default=None, description="Evaluate the case at this ISO date/datetime "
                                 "(parsed by the engine's boundary, as in Engine.retrieve); omitted: now.")
    budget_ms: Optional[int] = Field(default=None, ge=1, description="Wall-clock budget (default 800).")
    profile: Optional[str] = None
    token_budget: Optional[int] = Field(default=None, ge=1)
    record: Optional[bool] = None


class OutcomeBody(BaseModel):
    """What was decided on a retrieval: the same arguments as ``Engine.record_outcome``."""

    model_config = ConfigDict(extra="forbid")

    trace_id: str = Field(description="The trace_id the retrieval returned.")
    session: Optional[dict[str, Any]] = Field(default=None, description=(
        "The session (its customer's traces only); with a verified bearer token it comes from the token and "
        "this may only repeat it."))
    outcome: str = Field(description="One of the goal's outcomes (its pack's `outcomes.vocabulary`).")
    decided_by: Optional[str] = None
    rationale: Optional[str] = None
    cited: list[str] = Field(default_factory=list, description="Provenance ids the decision rests on.")
    as_of: Optional[str] = Field(default=None, description="The decision's instant (ISO); omitted: now.")


class FactsBody(BaseModel):
    """A system of record's write: the same arguments as ``Engine.write_facts``."""

    model_config = ConfigDict(extra="forbid")

    tenant_id: Optional[str] = Field(default=None, description=(
        "The tenant written to; with a verified token or key it comes from the caller and this may only repeat it."))
    nodes: list[dict[str, Any]] = Field(default_factory=list, description=(
        'JSONL node records: {"node": ID, "label": LABEL, "properties": {...}}.'))
    edges: list[dict[str, Any]] = Field(default_factory=list, description=(
        'JSONL edge records: {"edge": TYPE, "from": ID, "to": ID, "properties": {...}}.'))
    source: Optional[str] = Field(default=None, description=(
        "The system of record writing (stamped as recorded_by); default the verified caller's id."))


class ToolBody(BaseModel):
    """An agent tool call (query, mode, filters, top_k), scoped by the session."""

    model_config = ConfigDict(extra="forbid")

    session: Optional[dict[str, Any]] = None
    query: str
    mode: Literal["semantic", "keyword", "hybrid"] = "hybrid"
    filters: Optional[dict[str, Any]] = None
    top_k: int = Field(default=10, ge=1, le=100)
    as_of: Optional[str] = Field(default=None, description="Search the documents in force at this ISO "
                                 "date/datetime (parsed by the engine's boundary); omitted: today's.")


class _Gate:
    """Admission: at most ``limit`` requests in the service at once (no unbounded queue)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.inflight = 0
        self.shed = 0
        self.late = 0  # shed because they could not start within their budget

    def enter(self) -> None:
        """Raises OverloadedError when ``limit`` requests are already in."""
        if self.inflight >= self.limit:
            self.shed += 1
            raise OverloadedError(f"{self.inflight} requests in progress (limit {self.limit}); retry shortly")
        self.inflight += 1

    def leave(self) -> None:
        self.inflight -= 1


def create_app(engine: "Retriever", *, max_inflight: int = 128, retry_after_s: int = 1, warm: bool = True,
               close: bool = True, warm_first: bool = False, graph_refresh_s: float = 0.0,
               on_shutdown: Optional[Callable[[], None]] = None, worker: Optional[dict[str, Any]] = None,
               identity: Optional[IdentityConfig] = None, mcp: bool = False, host: str = "127.0.0.1",
               processes: int = 1, shared_limits: Optional[Path] = None) -> "FastAPI":
    """The ASGI app serving ``engine``. ``warm`` warms the engine at startup: in the background
    (readiness is 503 until done), or, with ``warm_first``, before the server accepts any
    connection (a worker of several: a request never reaches a cold worker). ``close`` closes the
    engine on shutdown (else its trace queue is drained and its writer keeps running); ``on_shutdown`` runs after that
    (a worker deletes its private vectors copy). ``graph_refresh_s`` > 0 catches the graph store
    up with other processes' commits that often (:class:`~hopweave.adapters.serve_workers.GraphRefresher`).
    ``worker`` is shown by ``/healthz`` and ``/readyz`` (with the process id). ``engine`` may be an
    :class:`~hopweave.adapters.pool.EnginePool` (``hopweave serve --engine-processes N``): this
    process then only serves HTTP and hands each request to an engine process, so its event loop
    never waits for the GIL behind engine work (its workers are warm when the pool is open; it
    closes on shutdown). ``identity`` says how callers are verified and rate-limited
    (:class:`~hopweave.adapters.identity.IdentityConfig`; default: the loopback mode, body
    sessions as given). ``mcp`` also serves the MCP tools over streamable HTTP at ``/mcp``
    (:mod:`hopweave.adapters.mcp_server`; each call verified from its headers by the same
    verifier; ``host``, the address listened on, turns on the SDK's DNS-rebinding protection for
    loopback). ``processes``: the server processes serving the same socket (``--workers N``), each
    with an app of its own: each holds ``1/processes`` of the tenant concurrency cap (at least 1),
    and of the rate limits unless ``shared_limits`` names the table of rate-limit buckets they
    share (:class:`~hopweave.adapters.shared_buckets.SharedBuckets`: what ``hopweave serve``
    gives its workers), so the service's totals are the stated ones.

    Before routing, an outer layer (:class:`_Front`) refuses what it can without reading the
    body: a missing or failing credential (401; on ``/mcp`` too, so an unverified client cannot
    even list the tools), a source past its budget of failed credentials,
    a verified caller over its rate limit or its tenant's concurrency cap (429), and a retrieval
    that the engine's expected wait for a request slot would start too late to finish within its
    budget (503); a repeated bearer token is not verified again
    (:class:`~hopweave.adapters.identity.TokenCache`). Raises MissingDependencyError without the
    ``serve`` (or, with ``mcp``, the ``mcp``) extra, ConfigError for unusable identity settings."""
    try:
        from fastapi import Depends, FastAPI, Request
        from fastapi.exceptions import RequestValidationError
        from fastapi.responses import JSONResponse, Response
    except ModuleNotFoundError as exc:  # pragma: no cover - depends on the extra
        raise MissingDependencyError(exc.name or "fastapi", "serve", "hopweave serve") from exc
    from hopweave.adapters.agent_tool import RetrieveTool
    from hopweave.adapters.pool import EnginePool
    from hopweave.engine.result import RetrievalResult

    pool = engine if isinstance(engine, EnginePool) else None
    plain: Any = engine  # an Engine wherever pool is None
    gate = _Gate(max_inflight)
    verifier = Verifier(identity or IdentityConfig())
    shared = None
    if shared_limits is not None and (verifier.config.rate_per_tenant or verifier.config.rate_per_caller):
        from hopweave.adapters.shared_buckets import SharedBuckets

        shared = SharedBuckets(shared_limits)
    limiter = RateLimiter(verifier.config.rate_per_tenant, verifier.config.rate_per_caller, processes=processes,
                          shared=shared)
    mcp_server: Any = None
    if mcp:
        if pool is not None:
            raise ConfigError("the MCP endpoint runs beside an engine in this process, not with --engine-processes")
        from hopweave.adapters.mcp_server import build_mcp

        mcp_server = build_mcp(plain, verifier=verifier, limiter=limiter)
        mcp_http = mcp_server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True,
                                                  json_response=True, host=host)
    state: dict[str, Any] = {"ready": False, "stopping": False, "warm_error": None}

    def warm_up() -> None:
        try:
            if pool is None:
                plain.warmup()
            state["ready"] = True
        except Exception as exc:  # readiness says why
            state["warm_error"] = f"{type(exc).__name__}: {exc}"

    from hopweave.adapters.serve_workers import GraphRefresher

    refresher = GraphRefresher(plain.graph if pool is None else None, graph_refresh_s if pool is None else 0.0)
    ident = {"pid": os.getpid(), **(worker or {})}
    worker_header = {WORKER_HEADER: str(ident["pid"])}  # which worker answered (several share one socket)
    worker_header_raw = [(WORKER_HEADER.encode(), str(ident["pid"]).encode())]

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        try:
            if warm and warm_first:
                await loop.run_in_executor(None, warm_up)
                if state["warm_error"]:
                    raise StoreError(f"warming the engine failed: {state['warm_error']}")
            elif warm:
                threading.Thread(target=warm_up, name="hopweave-warmup", daemon=True).start()
            else:
                state["ready"] = True
            refresher.start()
            if mcp_server is not None:
                async with mcp_server.session_manager.run():
                    yield
            else:
                yield
        finally:
            state["stopping"] = True
            refresher.stop()
            # close drains the trace queue too (a pool's workers drain theirs as they stop); an
            # engine the app does not own keeps its trace writer running
            drain = engine.close if close or pool is not None else plain.trace_writer.drain
            try:
                await loop.run_in_executor(None, drain)
            finally:
                if shared is not None:
                    shared.close()
                if on_shutdown is not None:
                    on_shutdown()

    async def verified(request: HTTPRequest) -> None:
        """Every route's dependency: a ``/v1`` request's caller, verified from its headers (by the
        front layer already, or here)."""
        if request.url.path.startswith("/v1/") and getattr(request.state, "caller", None) is None:
            client = request.scope.get("client")
            request.state.caller = verifier.caller(request.headers, client[0] if client else None)

    def authorize(request: HTTPRequest, body_session: Optional[dict[str, Any]], need: Scope) -> tuple[Session, Optional[str]]:
        """The session for a ``/v1`` request (the token's, or the body's where the mode allows),
        after the caller's rate limits (taken by the front layer already for a caller bound to a
        tenant); and the caller id to record (None in the loopback mode)."""
        caller: Caller = request.state.caller
        session = verifier.session_for(caller, body_session, need=need)
        if not getattr(request.state, "rate_taken", False):
            limiter.take(session.tenant_id, caller.id)
        return session, None if caller.kind == "loopback" else caller.id

    admission = getattr(plain, "admission", None) if pool is None else None
    # retrievals the front layer let in and the app has not answered yet (running, waiting for
    # a slot or a thread, or still queued on the event loop before their handler)
    retrieving = [0]

    def retrieval_done() -> None:
        retrieving[0] -= 1

    def starts_too_late(arrived: float, budget_ms: int) -> Optional[OverloadedError]:
        """The refusal of a retrieval arriving now when every request slot is taken and the
        engine's expected wait for one (the retrievals already in, ``max_active`` at a time, each
        the median recent hold: as ``Admission.expected_wait_ms``) plus a hold would end past its
        budget less the engine's reserve; else None (a cold engine, with no hold measured, admits).
        The retrievals counted are all those let in and not answered, so a burst whose requests
        have not reached their handler yet is counted as it arrives."""
        if admission is None:
            return None
        n = admission.config.max_active
        inside = retrieving[0]
        if inside < n:
            return None
        hold = admission.hold_clock.expected_ms(True)
        if hold <= 0:
            return None
        wait = ((inside - n) // n + 1) * hold
        left = budget_ms - admission.reserve_ms(budget_ms) - (time.perf_counter() - arrived) * 1000.0
        if wait + hold <= left:
            return None
        gate.late += 1
        return OverloadedError(f"{inside} retrievals are ahead ({n} at a time, about {hold:.0f} ms each): this one "
                               f"would start after about {wait:.0f} ms and could not finish within its budget "
                               f"({budget_ms} ms): shed without an answer; retry shortly")

    async def front_check(scope: Any, receive: Any, arrived: float) -> tuple[Optional[Refusal], Any, Any]:
        """What the front layer refuses before the app reads the body (see :func:`create_app`)."""
        state = scope.setdefault("state", {})
        if verifier.config.verifies:
            headers: dict[str, str] = {}
            for k, v in scope["headers"]:
                if k in _IDENTITY_HEADERS:
                    headers.setdefault(k.decode("latin-1"), v.decode("latin-1"))
            client = scope.get("client")
            try:
                caller = verifier.caller(headers, client[0] if client else None)
            except (AuthenticationError, RateLimitedError) as exc:  # a source past its failures: held too
                return _refusal(exc, retry_after_s, tuple(worker_header_raw),
                                verifier.config.refusal_hold_ms), receive, None
            state["caller"] = caller
            if _is_mcp(scope["path"]):  # verified; each tool call takes its rate limits itself
                return None, receive, None
            if caller.tenant_id is not None:
                held = tenant_inflight.get(caller.tenant_id, 0)
                try:
                    if per_tenant_cap and held >= per_tenant_cap:
                        limiter.refused += 1
                        raise too_many(caller.tenant_id, held)
                    limiter.take(caller.tenant_id, caller.id)
                except RateLimitedError as exc:
                    return _refusal(exc, retry_after_s, tuple(worker_header_raw),
                                    verifier.config.refusal_hold_ms), receive, None
                state["rate_taken"] = True
        if scope["path"] != "/v1/retrieve" or admission is None:
            return None, receive, None
        if retrieving[0] >= admission.config.max_active:  # every slot taken: read its budget
            body, receive = await _read_body(receive, _PEEK_BODY_BYTES)
            late = starts_too_late(arrived, _budget_of(body) or engine.config.budget_ms)
            if late is not None:
                return _refusal(late, retry_after_s, tuple(worker_header_raw)), receive, None
        retrieving[0] += 1
        return None, receive, retrieval_done

    app = FastAPI(title="hopweave", version="1", lifespan=lifespan, dependencies=[Depends(verified)],
                  description="Compositional retrieval for AI agents (see docs/serve.md).")
    app.add_middleware(_Front, check=front_check)  # added last: the outermost layer, before the body is read

    @app.exception_handler(RequestValidationError)
    async def _body(request: Request, exc: RequestValidationError) -> JSONResponse:
        # the body failed its model (a NaN budget, a string for top_k): 400 InputError JSON, naming
        # each field without echoing its value (NaN is not JSON; a 10 MB value need not return)
        problems = "; ".join(f"{'.'.join(str(x) for x in e.get('loc', ()) if x != 'body') or 'body'}: {e.get('msg')}"
                             for e in exc.errors()[:10])
        return await _typed(request, InputError(f"the request body is not valid: {problems}"))

    @app.exception_handler(HopweaveError)
    async def _typed(_: Request, exc: HopweaveError) -> JSONResponse:
        status, headers = _status(exc), {}
        if status == 503:
            headers["Retry-After"] = str(retry_after_s)
        elif isinstance(exc, RateLimitedError):
            headers["Retry-After"] = str(max(1, -(-exc.retry_after_s // 1)))
        elif isinstance(exc, AuthenticationError):
            headers["WWW-Authenticate"] = 'Bearer realm="hopweave"'

        arrived = _ARRIVED.get(None)
        if arrived is not None:
            headers["Server-Timing"] = f"total;dur={(time.perf_counter() - arrived) * 1000:.1f}"
        return JSONResponse({"error": type(exc).__name__, "message": str(exc)}, status_code=status,
                            headers=headers)

    # each of ``processes`` servers holds its share of the cap (at least 1)
    per_tenant_cap = max(1, verifier.config.tenant_concurrency // processes) if verifier.config.tenant_concurrency else 0
    tenant_inflight: dict[str, int] = {}

    def too_many(tenant_id: str, held: int) -> RateLimitedError:
        return RateLimitedError(f"tenant {tenant_id!r} already has {held} requests in progress (limit "
                                f"{per_tenant_cap} at once); retry shortly", retry_after_s=1.0)

    async def admitted(work: Callable[[], Awaitable[T]], tenant_id: str) -> T:
        """Run ``work`` inside the service's admission: at most ``max_inflight`` requests in all
        (503 past it) and, with a tenant concurrency cap, at most that many of one tenant (429
        past it), so one tenant's burst cannot hold every engine slot."""
        if state["stopping"]:
            raise OverloadedError("the service is shutting down")
        held = tenant_inflight.get(tenant_id, 0)
        if per_tenant_cap and held >= per_tenant_cap:
            limiter.refused += 1
            raise too_many(tenant_id, held)
        gate.enter()
        tenant_inflight[tenant_id] = held + 1
        try:
            return await work()
        finally:
            gate.leave()
            left = tenant_inflight[tenant_id] - 1
            if left:
                tenant_inflight[tenant_id] = left
            else:
                del tenant_inflight[tenant_id]

    def check_start(arrived: float, budget_ms: int, kept_ms: float) -> float:
        """Now, or OverloadedError (503) when the request's budget, less ``kept_ms`` to answer, was
        spent before its handler ran (queued in the server): it cannot start in time."""
        now = time.perf_counter()
        budget = budget_ms / 1000.0
        if now - arrived >= budget - kept_ms / 1000.0:
            gate.late += 1
            raise OverloadedError(f"the request waited {round((now - arrived) * 1000)} ms in the server before it "
                                  f"could start (budget {round(budget * 1000)} ms): shed without an answer; retry shortly")
        return now

    @app.post("/v1/retrieve", response_model=RetrievalResult, response_model_exclude_none=False)
    async def retrieve(body: RetrieveBody, request: HTTPRequest) -> Any:
        """One retrieval (``Engine.aretrieve``); degraded stages are listed in ``degraded``. The
        budget runs from the request's arrival; 503 + Retry-After when it cannot start in time."""
        arrived = _arrived()
        session, caller = authorize(request, body.session, "full")
        budget_ms = body.budget_ms or engine.config.budget_ms
        started = check_start(arrived, budget_ms, engine.finish_reserve_ms(budget_ms))
        args: dict[str, Any] = dict(session=session, caller=caller, as_of=body.as_of, budget_ms=body.budget_ms, profile=body.profile,
                    token_budget=body.token_budget, record=body.record, arrived=arrived, shed=True)
        if pool is not None:  # the worker's RetrievalResult JSON, passed on as it is
            payload: Any = await admitted(lambda: pool.aretrieve_json(body.utterance, **args), session.tenant_id)
            done = time.perf_counter()
        else:
            result = await admitted(lambda: plain.aretrieve(body.utterance, **args), session.tenant_id)
            done = time.perf_counter()
            # serialised by pydantic-core in one call (FastAPI's re-validation + jsonable_encoder of
            # a result costs tens of ms on the event loop: 100 at once would queue for seconds)
            payload = result.model_dump_json()
        return Response(payload, media_type="application/json",
                        headers={**worker_header, **_timing(arrived, started, done, time.perf_counter())})

    @app.post("/v1/tool/retrieve")
    async def tool(body: ToolBody, request: HTTPRequest) -> Any:
        """The agent tool ``retrieve(query, mode, filters, top_k)`` for the session's tenant, within
        the engine's ``tool_budget_ms`` from arrival (503 + Retry-After when it cannot fit)."""
        arrived = _arrived()
        session, _ = authorize(request, body.session, "tool")
        started = check_start(arrived, engine.config.tool_budget_ms, 0.0)
        loop = asyncio.get_running_loop()

        async def run() -> Response:
            if pool is not None:
                got = await pool.atool_json(session.model_dump(mode="json"), body.query, mode=body.mode,
                                            filters=body.filters, top_k=body.top_k, as_of=body.as_of, arrived=arrived)
                done = time.perf_counter()
                payload = b'{"results":' + got + b"}"
            else:
                tool_ = RetrieveTool(plain, session, as_of=body.as_of)
                results = await loop.run_in_executor(
                    plain.request_pool, lambda: tool_(body.query, mode=body.mode, filters=body.filters,
                                                        top_k=body.top_k, arrived=arrived))
                done = time.perf_counter()
                payload = json.dumps({"results": results}, default=str).encode()
            return Response(payload, media_type="application/json",
                            headers={**worker_header, **_timing(arrived, started, done, time.perf_counter())})

        return await admitted(run, session.tenant_id)

    @app.post("/v1/outcomes")
    async def outcomes(body: OutcomeBody, request: HTTPRequest) -> Any:
        """Record an outcome (``Engine.record_outcome``) for the verified session's customer: 200
        with the record (``created`` False for a repeat), 400 for an unknown outcome / bad field /
        outcome before its trace, 403 for another customer's trace, 404 for a trace the tenant
        does not have. ``decided_by`` defaults to the verified caller's id."""
        verifier.check_may_decide(request.state.caller)
        session, caller = authorize(request, body.session, "full")
        if pool is not None:
            raise InputError("recording outcomes needs the engine in this process: serve with --workers, "
                             "not --engine-processes")
        loop = asyncio.get_running_loop()

        async def run() -> Response:
            rec = await loop.run_in_executor(plain.request_pool, lambda: plain.record_outcome(
                body.trace_id, session=session, outcome=body.outcome,
                decided_by=body.decided_by if body.decided_by is not None else caller,
                rationale=body.rationale, cited=tuple(body.cited), as_of=body.as_of))
            return Response(rec.model_dump_json(), media_type="application/json", headers=worker_header)

        return await admitted(run, session.tenant_id)

    @app.post("/v1/facts")
    async def facts(body: FactsBody, request: HTTPRequest) -> Any:
        """Upsert a system of record's facts (``Engine.write_facts``): all or nothing, 200 with what
        was written, 400 for a schema violation or a malformed record, 403 for a customer session
        (facts are written for the tenant by a system of record) or another tenant's node. Without
        ``tenant_id`` the tenant is the service key's."""
        tenant = body.tenant_id or getattr(request.state.caller, "tenant_id", None)  # a service key names its tenant
        session, caller = authorize(request, {"tenant_id": tenant} if tenant else None, "full")
        if session.customer_id is not None:
            raise IdentityError("facts are written by a system of record for the tenant, not in a customer's "
                                "session; use a tenant-scoped service key")
        if pool is not None:
            raise InputError("writing facts needs the engine in this process: serve with --workers, "
                             "not --engine-processes")
        source = body.source or caller
        if not source:
            raise InputError("name the system of record writing in `source`")
        loop = asyncio.get_running_loop()

        async def run() -> Response:
            res = await loop.run_in_executor(plain.request_pool, lambda: plain.write_facts(
                session.tenant_id, body.nodes, body.edges, source=source))
            return Response(res.model_dump_json(), media_type="application/json", headers=worker_header)

        return await admitted(run, session.tenant_id)

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        """The process answers (``pid``: which worker)."""
        return {"status": "ok", **ident}

    @app.get("/readyz", response_class=JSONResponse)
    async def readyz() -> Any:
        """200 when warm and not shutting down; 503 (with the reason) otherwise."""
        ok = bool(state["ready"]) and not state["stopping"]
        body = {"ready": ok, "inflight": gate.inflight, "max_inflight": gate.limit, "shed": gate.shed,
                "shed_late": gate.late,
                "stopping": state["stopping"], "warm_error": state["warm_error"], **ident}
        if refresher.errors:
            body["graph_refresh_errors"], body["graph_refresh_last_error"] = refresher.errors, refresher.last_error
        return JSONResponse(body, status_code=200 if ok else 503)

    if mcp_server is not None:  # last: the app's own routes match first
        app.mount("/", mcp_http)
    return app


#: The environment ``hopweave serve`` passes to :func:`app_from_env` (uvicorn's factory; every
#: worker process reads it).
SERVE_ENV = {"store": "HOPWEAVE_SERVE_STORE", "vectors": "HOPWEAVE_SERVE_VECTORS", "budget_ms": "HOPWEAVE_SERVE_BUDGET_MS",
             "max_inflight": "HOPWEAVE_SERVE_MAX_INFLIGHT", "workers": "HOPWEAVE_SERVE_WORKERS",
             "switch_interval_ms": "HOPWEAVE_SERVE_SWITCH_INTERVAL_MS", "graph_refresh_s": "HOPWEAVE_SERVE_GRAPH_REFRESH_S",
             "max_active": "HOPWEAVE_SERVE_MAX_ACTIVE", "engine_processes": "HOPWEAVE_SERVE_ENGINE_PROCESSES",
             "search_process": "HOPWEAVE_SERVE_SEARCH_PROCESS", "identity": "HOPWEAVE_SERVE_IDENTITY",
             "mcp": "HOPWEAVE_SERVE_MCP", "host": "HOPWEAVE_SERVE_HOST", "limits": "HOPWEAVE_SERVE_LIMITS"}


def app_from_env() -> "FastAPI":
    """The app for the stores named by ``HOPWEAVE_SERVE_STORE`` (a graph URI: a store directory,
    ``neo4j://...``) and ``HOPWEAVE_SERVE_VECTORS`` (a vectors URI; default as :func:`hopweave.open`) (``uvicorn
    hopweave.adapters.http:app_from_env --factory``, which is what ``hopweave serve`` runs, once per
    worker). With ``HOPWEAVE_SERVE_WORKERS`` > 1 this process is one of several serving one
    socket: it serves a private copy of an embedded vector index (see
    :mod:`hopweave.adapters.serve_workers`), warms up before accepting connections and catches the
    graph up with the other workers' commits every ``HOPWEAVE_SERVE_GRAPH_REFRESH_S`` (default 0.5), and
    its engine works on ``EngineConfig.max_active`` / N requests at once unless
    ``HOPWEAVE_SERVE_MAX_ACTIVE`` says otherwise; ``HOPWEAVE_SERVE_LIMITS`` names the rate-limit
    table the workers share. With ``HOPWEAVE_SERVE_ENGINE_PROCESSES`` = N > 0
    (one server process) the engines run in an :class:`~hopweave.adapters.pool.EnginePool` of N
    processes and this one only serves HTTP.
    Raises InputError without a store or with a malformed setting, StoreError for an unreadable
    store or a shard another process holds."""
    import sys

    from hopweave.adapters.serve_workers import (
        DEFAULT_GRAPH_REFRESH_S,
        open_worker_engine,
        remove_private,
        shared_max_active,
    )
    from hopweave.engine.engine import Engine, EngineConfig

    mcp = os.environ.get(SERVE_ENV["mcp"]) == "1"
    host = os.environ.get(SERVE_ENV["host"]) or "127.0.0.1"
    raw_identity = os.environ.get(SERVE_ENV["identity"])
    identity = IdentityConfig.from_json(raw_identity) if raw_identity else None
    store = os.environ.get(SERVE_ENV["store"])
    if not store:
        raise InputError(f"set {SERVE_ENV['store']} to the store (a directory or graph URI: hopweave load PACK --graph URI)")
    budget = _env_number(SERVE_ENV["budget_ms"], int, None)
    workers = _env_number(SERVE_ENV["workers"], int, 1)
    switch_ms = _env_number(SERVE_ENV["switch_interval_ms"], float, None)
    refresh_s = _env_number(SERVE_ENV["graph_refresh_s"], float, DEFAULT_GRAPH_REFRESH_S)
    if switch_ms is not None and switch_ms > 0:
        sys.setswitchinterval(switch_ms / 1000.0)  # a worker is a fresh interpreter: the CLI's setting is not inherited
    vectors = os.environ.get(SERVE_ENV["vectors"]) or None
    max_active = _env_number(SERVE_ENV["max_active"], int, None)
    engine_processes = _env_number(SERVE_ENV["engine_processes"], int, 0)
    if max_active is None and max(workers, engine_processes) > 1:
        max_active = shared_max_active(max(workers, engine_processes))
    settings: dict[str, Any] = {k: v for k, v in (("budget_ms", budget), ("max_active", max_active)) if v}
    search_process = _env_number(SERVE_ENV["search_process"], int, None)
    if search_process is not None:  # 0: each engine keeps its vector shard in process
        settings["search_process"] = bool(search_process)
    config = EngineConfig(**settings) if settings else None
    if engine_processes > 0:
        from hopweave.adapters.pool import EnginePool

        if workers > 1:
            raise InputError("serve: use either several server processes (--workers) or --engine-processes, not both")
        pool = EnginePool.open(store, vectors=vectors, config=config, workers=engine_processes,
                               grace_ms=POOL_GRACE_MS, refresh_s=refresh_s)
        return create_app(pool, max_inflight=_env_number(SERVE_ENV["max_inflight"], int, 128), warm=False,
                          identity=identity, mcp=mcp, host=host,
                          worker={"workers": 1, "engine_processes": engine_processes})
    if workers > 1:
        engine, private = open_worker_engine(store, vectors, config)
    else:
        engine, private = Engine.open(store, vectors=vectors, config=config), None
    return create_app(engine, max_inflight=_env_number(SERVE_ENV["max_inflight"], int, 128), warm_first=workers > 1,
                      identity=identity, mcp=mcp, host=host, processes=workers,
                      shared_limits=Path(limits) if workers > 1 and (limits := os.environ.get(SERVE_ENV["limits"])) else None,
                      graph_refresh_s=refresh_s if workers > 1 else 0.0,
                      on_shutdown=(lambda: remove_private(private)) if private is not None else None,
                      worker={"workers": workers})


#: With ``--engine-processes``: how long past a request's deadline the front waits for an engine
#: process's answer before it answers 503 itself (the pool's ``grace_ms``; the stated margin).
POOL_GRACE_MS = 50


def _budget_of(body: Optional[bytes]) -> Optional[int]:
    """A retrieval body's ``budget_ms`` when it is a positive integer (else None: the app's own
    validation answers for it)."""
    if not body:
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    value = data.get("budget_ms") if isinstance(data, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _env_number(name: str, kind: type, default: Any) -> Any:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return kind(raw)
    except ValueError:
        raise InputError(f"{name}={raw!r} is not a number") from None


def _status(exc: HopweaveError) -> int:
    """The HTTP status of a typed error."""
    if isinstance(exc, AuthenticationError):
        return 401
    if isinstance(exc, RateLimitedError):
        return 429
    if isinstance(exc, TenantError):
        return 403
    if isinstance(exc, NotFoundError) and not isinstance(exc, UnknownProfileError):
        return 404
    if isinstance(exc, (InputError, FilterError, UnknownProfileError, SchemaError)):
        return 400
    if isinstance(exc, (OverloadedError, StoreUnavailableError)):
        return 503
    return 500
