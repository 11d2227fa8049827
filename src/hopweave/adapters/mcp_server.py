"""hopweave as a Model Context Protocol server (the official ``mcp`` SDK; extra ``mcp``).

Tools:

- ``retrieve(utterance, as_of?, token_budget?)``: one full retrieval for the caller's session:
  the context block, the structured facts and the sources of every line, the goal and what was
  degraded (``Engine.retrieve``).
- ``search(query, mode?, filters?, top_k?, as_of?)``: the agent tool, one filtered hybrid search
  scoped by the caller's session at ``as_of`` (:class:`~hopweave.adapters.agent_tool.RetrieveTool`).
- ``record_outcome(trace_id, outcome, rationale?, cited?, as_of?)``: what was decided on one of
  the session's customer's retrievals (``Engine.record_outcome``; ``decided_by`` is the caller).

Resources (read-only): ``hopweave://{tenant_id}/goals`` (the caller's own tenant only), the goal types of the caller's tenant with their
traversal patterns (name, version, sub-question, section).

Identity never comes from tool arguments. Over stdio (``hopweave mcp --session FILE``) the session
is the file's, fixed for the process; over streamable HTTP (mounted at ``/mcp`` by ``hopweave
serve --mcp``) every call is verified from its request headers by the service's
:class:`~hopweave.adapters.identity.Verifier` (a bearer JWT's session, or an API key's tenant with
no customer), exactly as the ``/v1`` routes, and rate-limited with them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal, Mapping, Optional

from hopweave.adapters.identity import Caller, RateLimiter, Scope, Verifier
from hopweave.errors import AuthenticationError, CallerMismatchError, HopweaveError, MissingDependencyError
from hopweave.models.common import Session, parse_session

if TYPE_CHECKING:  # pragma: no cover
    from mcp.server.mcpserver import Context, MCPServer

    from hopweave.engine.engine import Engine
else:  # tool annotations are resolved in this module's namespace (the mcp extra is optional)
    try:
        from mcp.server.mcpserver import Context
    except ModuleNotFoundError:  # pragma: no cover - depends on the extra
        Context = Any

__all__ = ["build_mcp"]

INSTRUCTIONS = (
    "hopweave retrieves the working set for one turn of a support conversation: call `retrieve` with what the "
    "customer said (and as_of for a replayable answer) to get a sectioned context block whose every line names "
    "its sources; call `search` for one scoped document search. The customer is the authenticated session's; "
    "tool arguments never change who it is.")


class _Identity:
    """Where a call's session comes from: fixed (stdio) or the verified request headers (HTTP)."""

    def __init__(self, session: Optional[Session], verifier: Optional[Verifier], limiter: Optional[RateLimiter],
                 caller_id: Optional[str]) -> None:
        self.session, self.verifier, self.limiter, self.caller_id = session, verifier, limiter, caller_id

    def resolve(self, headers: Optional[Mapping[str, str]], need: Scope,
                source: Optional[str] = None, decides: bool = False) -> tuple[Session, Optional[str]]:
        """The call's session and the caller id to record; ``decides``: the call records an
        outcome (the verifier's decision scope applies)."""
        if self.session is not None:
            return self.session, self.caller_id
        if self.verifier is None or headers is None:
            raise AuthenticationError("this MCP endpoint needs the caller's credentials (Authorization: Bearer ...)")
        caller: Caller = self.verifier.caller(headers, source)
        if caller.session is None:
            raise AuthenticationError(
                f"the caller {caller.id} carries no session: MCP tools take the session from a bearer token (a "
                "service key names no customer, and tool arguments never do)")
        if decides:
            self.verifier.check_may_decide(caller)
        session = self.verifier.session_for(caller, None, need=need)
        if self.limiter is not None:
            self.limiter.take(session.tenant_id, caller.id)
        return session, None if caller.kind == "loopback" else caller.id


def build_mcp(engine: "Engine", *, session: Optional[Mapping[str, Any] | Session] = None,
              verifier: Optional[Verifier] = None, limiter: Optional[RateLimiter] = None,
              caller_id: Optional[str] = None) -> "MCPServer":
    """The MCP server for ``engine``.

    Args:
        engine: an open engine.
        session: the fixed session of a stdio server (checked against the tenant's domain now).
        verifier: for HTTP: verifies each call's headers (used when ``session`` is None).
        limiter: the service's rate limiter (HTTP).
        caller_id: recorded on the traces of a stdio server's retrievals (``stdio:<name>``).

    Returns:
        An ``mcp.server.mcpserver.MCPServer`` (``run("stdio")`` or ``streamable_http_app()``).

    Raises:
        MissingDependencyError: without the ``mcp`` extra.
        InputError / TenantError: a malformed or unserved fixed session.
    """
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ResourceError, ToolError
    except ModuleNotFoundError as exc:  # pragma: no cover - depends on the extra
        raise MissingDependencyError(exc.name or "mcp", "mcp", "hopweave's MCP server") from exc
    import anyio

    from hopweave.adapters.agent_tool import RetrieveTool
    from hopweave.engine.boundary import check_session_attributes

    fixed = None
    if session is not None:
        fixed = parse_session(session, "the MCP session")
        check_session_attributes(fixed, engine.settings_for(fixed.tenant_id))
    ident = _Identity(fixed, verifier, limiter, caller_id)
    server: MCPServer = MCPServer(name="hopweave", instructions=INSTRUCTIONS)

    async def typed(work: Any, error: type[Exception]) -> Any:
        """Run ``work``; a HopweaveError becomes the SDK's error carrying its type and message."""
        try:
            return await work()
        except HopweaveError as exc:
            raise error(f"{type(exc).__name__}: {exc}") from None

    def headers(ctx: Context) -> Optional[Mapping[str, str]]:
        try:
            return ctx.headers
        except ValueError:  # outside a request
            return None

    def client(ctx: Context) -> Optional[str]:
        """The client address of an HTTP call (the failed-credential budget's source), else None."""
        try:
            peer = getattr(ctx.request_context.request, "client", None)
        except ValueError:  # outside a request
            return None
        host = getattr(peer, "host", None)
        return host if isinstance(host, str) else None

    @server.tool(description="Retrieve the working set for what the customer said: the sectioned context block "
                 "(facts, policy, precedent, procedure; every line with its sources), the structured facts, the goal "
                 "and what was degraded. as_of: ISO date or datetime the case is evaluated at (omit for now).")
    async def retrieve(utterance: str, ctx: Context, as_of: Optional[str] = None,
                       token_budget: Optional[int] = None) -> dict[str, Any]:
        async def work() -> Any:
            sess, caller = ident.resolve(headers(ctx), "full", client(ctx))
            return await anyio.to_thread.run_sync(lambda: engine.retrieve(
                utterance, session=sess, as_of=as_of, token_budget=token_budget, caller=caller))
        r = await typed(work, ToolError)
        return {
            "trace_id": r.trace_id, "goal": r.goal, "as_of": r.as_of.isoformat(), "context": r.context.text,
            "lines": [{"section": ln.section, "kind": ln.kind, "text": ln.text, "sources": list(ln.sources)}
                      for ln in r.context.lines],
            "facts": [f.model_dump(mode="json", include={"pattern", "version", "section", "rows", "truncated"})
                      for f in r.facts],
            "degraded": [d.model_dump(mode="json") for d in r.degraded],
        }

    @server.tool(description="One document search scoped by the customer's session (tenant, region, tier/plan/"
                 "product on record, in force at as_of: ISO date or datetime, omit for today's documents): mode "
                 "semantic, keyword or hybrid; filters may only narrow the scope (a widening one is refused, "
                 "ScopeFilterError).")
    async def search(query: str, ctx: Context, mode: Literal["semantic", "keyword", "hybrid"] = "hybrid",
                     filters: Optional[dict[str, Any]] = None, top_k: int = 10,
                     as_of: Optional[str] = None) -> dict[str, Any]:
        async def work() -> Any:
            sess, _ = ident.resolve(headers(ctx), "tool", client(ctx))
            tool = RetrieveTool(engine, sess, as_of=as_of)
            return await anyio.to_thread.run_sync(lambda: tool(query, mode=mode, filters=filters, top_k=top_k))
        rows = await typed(work, ToolError)
        return {"results": json.loads(json.dumps(rows, default=str))}

    @server.tool(description="Record what was decided on an earlier retrieval of this customer (trace_id from "
                 "`retrieve`): outcome from the goal's vocabulary, an optional rationale and the source ids cited. "
                 "Idempotent; a different outcome is a new version (the audit keeps both).")
    async def record_outcome(trace_id: str, outcome: str, ctx: Context, rationale: Optional[str] = None,
                             cited: Optional[list[str]] = None, as_of: Optional[str] = None) -> dict[str, Any]:
        async def work() -> Any:
            sess, caller = ident.resolve(headers(ctx), "full", client(ctx), decides=True)
            return await anyio.to_thread.run_sync(lambda: engine.record_outcome(
                trace_id, session=sess, outcome=outcome, decided_by=caller, rationale=rationale, cited=cited or (),
                as_of=as_of))
        rec = await typed(work, ToolError)
        return dict(rec.model_dump(mode="json"))

    @server.resource("hopweave://{tenant_id}/goals", name="goals", mime_type="application/json",
                     description="The goal types of the caller's tenant and their traversal patterns (read-only).")
    async def goals(tenant_id: str, ctx: Context) -> str:
        async def work() -> str:
            sess, _ = ident.resolve(headers(ctx), "tool", client(ctx))
            if tenant_id != sess.tenant_id:
                raise CallerMismatchError(f"the caller's tenant is {sess.tenant_id!r}, not {tenant_id!r}")
            return json.dumps(describe_goals(engine, sess.tenant_id), sort_keys=True, indent=1)
        return str(await typed(work, ResourceError))

    return server


def describe_goals(engine: "Engine", tenant_id: str) -> list[dict[str, Any]]:
    """The goal types of ``tenant_id``'s domain (and every-domain goals) with their patterns, by name."""
    domain = engine.settings_for(tenant_id).name
    out = []
    for g in sorted(engine.graph.goal_types(), key=lambda g: g.name):
        if g.domain not in (None, domain):
            continue
        out.append({"name": g.name, "version": g.version, "description": g.description,
                    "patterns": [{"name": p.name, "version": p.version, "sub_question": p.sub_question,
                                  "section": p.section} for p in engine.graph.patterns(g.name)
                                 if p.status != "retired"]})
    return out
