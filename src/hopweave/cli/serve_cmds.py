"""``hopweave serve``: the engine over HTTP (see :mod:`hopweave.adapters.http`, docs/serve.md)."""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import GraphOpt, VectorsOpt, handle_errors
from hopweave.errors import InputError, MissingDependencyError


@app.command()
@handle_errors
def serve(
    store: Optional[str] = GraphOpt,
    vectors: Optional[str] = VectorsOpt,
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on (loopback by default)."),
    port: int = typer.Option(8765, "--port", help="TCP port."),
    max_inflight: int = typer.Option(128, "--max-inflight",
                                     help="Requests admitted at once; one more gets 503 + Retry-After."),
    budget_ms: Optional[int] = typer.Option(None, "--budget-ms", help="Default wall-clock budget (800)."),
    max_active: Optional[int] = typer.Option(
        None, "--max-active", help="Requests each worker's engine works on at once; the others wait for a slot "
        "within their budget (default: EngineConfig.max_active, 4, shared among the workers: 2 each for 2)."),
    search_process: Optional[bool] = typer.Option(
        None, "--search-process/--no-search-process", help="Serve each engine's embedded vector shard from a "
        "child process (default: on, EngineConfig.search_process; docs/engine.md, The search process)."),
    switch_interval_ms: float = typer.Option(
        1.0, "--switch-interval-ms", help="Python's thread switch interval: a small one lets a request whose "
        "deadline came get the GIL back quickly under load (Python's default is 5)."),
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level."),
    workers: Optional[int] = typer.Option(
        None, "--workers", help="Server processes behind the one listening socket (default: the CPUs this process "
        "may use). Several: each serves a private copy of an embedded vector index (made at its start in $TMPDIR, "
        "deleted at shutdown) and warms up before taking requests. 1: one process, as before."),
    engine_processes: int = typer.Option(
        0, "--engine-processes", help="Run the engines in N processes of their own (an EnginePool) behind one HTTP "
        "process that only serves HTTP: its event loop never waits behind engine work for the GIL, so a request's "
        "budget starts when it arrives and 503s are immediate (docs/serve.md, Deadlines). 0: the engine runs in "
        "the server process(es) (--workers). Not with --workers > 1."),
    graph_refresh_s: float = typer.Option(
        0.5, "--graph-refresh-s", help="With several workers: how often each catches up with what the others (and "
        "other processes) wrote to an embedded graph store, e.g. decision traces and run-time facts (0: only when "
        "it writes itself; a check that finds nothing new takes no lock)."),
    jwt_secret_file: Optional[str] = typer.Option(
        None, "--jwt-secret-file", help="Verify bearer JWTs (HS256) with the secret in this file (>= 32 bytes)."),
    jwt_public_key: Optional[str] = typer.Option(
        None, "--jwt-public-key", help="Verify bearer JWTs (RS256 / ES256) with this PEM public key file."),
    jwks_file: Optional[str] = typer.Option(
        None, "--jwks-file", help="Verify bearer JWTs with this JSON Web Key Set file (key chosen by kid)."),
    jwt_issuer: Optional[str] = typer.Option(None, "--jwt-issuer", help="The required iss claim."),
    jwt_audience: Optional[str] = typer.Option(None, "--jwt-audience", help="The required aud claim."),
    jwt_claim: list[str] = typer.Option(
        [], "--jwt-claim", help="FIELD=CLAIM: take the session field FIELD (tenant_id, customer_id, region, channel, "
        "agent_id, locale, attributes, or attributes.NAME for one session attribute) from the token's claim CLAIM "
        "(default customer_id=sub, tenant_id=tenant_id, the others by their own name). Repeatable."),
    api_keys: Optional[str] = typer.Option(
        None, "--api-keys", help="Accept service keys from this file (SHA-256 digests, each scoped to a tenant and to "
        "tool or full; `hopweave api-key FILE` writes it)."),
    trust_body_session: bool = typer.Option(
        False, "--trust-body-session", help="Behind a gateway that authenticates callers: take the request body's "
        "session as it is (logged at start; not with token or key verification)."),
    rate_limit_tenant: float = typer.Option(
        0.0, "--rate-limit-tenant", help="Requests per second per tenant for the service (0: unlimited); over it: "
        "429 + Retry-After. With --workers N the workers share one count."),
    rate_limit_caller: float = typer.Option(
        0.0, "--rate-limit-caller", help="Requests per second per caller (token subject or key) for the service; "
        "with --workers N the workers share one count."),
    refusal_hold_ms: int = typer.Option(
        1000, "--refusal-hold-ms", help="Send a rate-limit 429 when the caller's bucket next has a token, at most this "
        "late (0: at once), so a client that retries at once is paced by its own answers; at most 1024 refusals are "
        "held at a time per worker, the rest answered at once."),
    tenant_concurrency: int = typer.Option(
        0, "--tenant-concurrency", help="Requests of one tenant in progress at once (0: no cap); past it: 429 + "
        "Retry-After. With --workers N each worker allows 1/N of it (at least 1). Below --max-active, it keeps "
        "engine slots for the other tenants."),
    jwt_decision_scope: Optional[str] = typer.Option(
        None, "--jwt-decision-scope", help="Record outcomes (POST /v1/outcomes, MCP record_outcome) only for JWTs "
        "granting this OAuth scope (scope or scp claim), e.g. hopweave:decide, so a token handed to a customer-facing "
        "client cannot write its own precedent (default: any verified JWT, for its own customer's traces)."),
    mcp: bool = typer.Option(
        False, "--mcp", help="Also serve the MCP tools (retrieve, search, record_outcome) over streamable HTTP at /mcp, each call "
        "verified like the /v1 routes (extra mcp)."),
) -> None:
    """Serve retrievals over HTTP: POST /v1/retrieve, POST /v1/tool/retrieve, POST /v1/outcomes,
    POST /v1/facts, GET /healthz, GET /readyz, /openapi.json (and /mcp with --mcp). --workers N runs N processes on one socket (default: one per
    CPU); SIGTERM drains requests in flight and queued traces in every worker, then closes the
    stores. Callers are verified by bearer JWT (--jwt-*) and/or service keys (--api-keys); without
    either (and without --trust-body-session) the service listens on loopback only."""
    try:
        import uvicorn
    except ModuleNotFoundError as exc:
        raise MissingDependencyError(exc.name or "fastapi", "serve", "hopweave serve") from exc
    from hopweave.adapters.identity import IdentityConfig, Verifier, check_bind
    from hopweave.stores.uri import default_graph_uri, parse_graph_uri

    claims: dict[str, str] = {}
    for item in jwt_claim:
        name, sep, claim = item.partition("=")
        if not sep or not name or not claim:
            raise InputError(f"--jwt-claim {item!r}: write FIELD=CLAIM, e.g. customer_id=sub")
        claims[name] = claim
    identity = IdentityConfig(
        jwt_secret_file=jwt_secret_file, jwt_public_key=jwt_public_key, jwks_file=jwks_file, jwt_issuer=jwt_issuer,
        jwt_audience=jwt_audience, claims=claims, api_keys_file=api_keys, trust_body_session=trust_body_session,
        rate_per_tenant=rate_limit_tenant, rate_per_caller=rate_limit_caller, tenant_concurrency=tenant_concurrency,
        decision_scope=jwt_decision_scope or None, refusal_hold_ms=refusal_hold_ms)
    if refusal_hold_ms < 0:
        raise InputError("--refusal-hold-ms must be >= 0")
    if tenant_concurrency < 0:
        raise InputError("--tenant-concurrency must be >= 0")
    check_bind(host, identity)
    Verifier(identity)  # unreadable key files fail here, not in every worker
    if identity.mode == "loopback":
        typer.echo(f"hopweave serve: callers are not verified: listening on {host} only (loopback). Verify callers "
                   "with --jwt-secret-file / --jwt-public-key / --jwks-file or --api-keys to listen beyond it.", err=True)
    elif identity.mode == "gateway":
        typer.echo("hopweave serve: --trust-body-session: the request body's session is taken as it is; only a "
                   "gateway that authenticates callers may reach this port.", err=True)
    os.environ["HOPWEAVE_SERVE_IDENTITY"] = identity.to_json()
    os.environ["HOPWEAVE_SERVE_HOST"] = host
    os.environ["HOPWEAVE_SERVE_MCP"] = "1" if mcp else "0"
    graph = store if store is not None else default_graph_uri()
    uri = parse_graph_uri(graph)
    if uri.kind == "embedded":
        from hopweave.stores.front import check_store_dir

        assert uri.path is not None
        check_store_dir(uri.path)  # fail here, not in the server's first request
    if switch_interval_ms <= 0:
        raise InputError("--switch-interval-ms must be > 0")
    if budget_ms is not None and budget_ms < 1:
        raise InputError("--budget-ms must be >= 1")
    from hopweave.adapters.serve_workers import check_workers, worker_count

    if engine_processes < 0:
        raise InputError("--engine-processes must be >= 0")
    if workers is None:
        workers = 1 if engine_processes else worker_count()
    if workers < 1:
        raise InputError("--workers must be >= 1")
    if engine_processes and workers > 1:
        raise InputError("use either --workers N (engines in the server processes) or --engine-processes N, not both")
    check_workers(graph, vectors, workers)  # fail here, not in N workers at once
    if tenant_concurrency and workers > 1:
        typer.echo(f"hopweave serve: the tenant concurrency cap is shared among the {workers} workers: each allows "
                   f"1/{workers} of it (a tenant whose connections all reach one worker gets that share); the rate "
                   "limits are counted once for all the workers", err=True)
    if graph_refresh_s < 0:
        raise InputError("--graph-refresh-s must be >= 0")
    sys.setswitchinterval(switch_interval_ms / 1000.0)
    # the app is an adapter (hopweave.adapters.http); uvicorn builds it from its factory, so
    # the CLI stays beside the adapters rather than importing them
    os.environ["HOPWEAVE_SERVE_STORE"] = graph
    if vectors is not None:
        os.environ["HOPWEAVE_SERVE_VECTORS"] = vectors
    os.environ["HOPWEAVE_SERVE_MAX_INFLIGHT"] = str(max_inflight)
    if budget_ms is not None:
        os.environ["HOPWEAVE_SERVE_BUDGET_MS"] = str(budget_ms)
    if max_active is not None:
        if max_active < 1:
            raise InputError("--max-active must be >= 1")
        os.environ["HOPWEAVE_SERVE_MAX_ACTIVE"] = str(max_active)
    if search_process is not None:
        os.environ["HOPWEAVE_SERVE_SEARCH_PROCESS"] = "1" if search_process else "0"
    os.environ["HOPWEAVE_SERVE_WORKERS"] = str(workers)
    os.environ["HOPWEAVE_SERVE_ENGINE_PROCESSES"] = str(engine_processes)
    os.environ["HOPWEAVE_SERVE_SWITCH_INTERVAL_MS"] = str(switch_interval_ms)
    os.environ["HOPWEAVE_SERVE_GRAPH_REFRESH_S"] = str(graph_refresh_s)
    # workers > 1: uvicorn's supervisor binds the socket, starts the workers (each builds the app
    # from the factory), replaces one that dies, and on SIGTERM/SIGINT sends each a SIGTERM and
    # waits for it (every worker drains its requests and traces). A worker busy with a burst still
    # answers the supervisor's health pings from a thread; 30 s before it counts as hung.
    limits_dir = None
    os.environ.pop("HOPWEAVE_SERVE_LIMITS", None)
    if workers > 1 and (rate_limit_tenant or rate_limit_caller):
        import shutil
        import tempfile

        # one table of rate-limit buckets for all the workers (a client's keep-alive connection
        # sends every request to one worker); private to this server, removed when it stops
        limits_dir = tempfile.mkdtemp(prefix="hopweave-serve-limits-")
        os.environ["HOPWEAVE_SERVE_LIMITS"] = os.path.join(limits_dir, "buckets")
    try:
        uvicorn.run("hopweave.adapters.http:app_from_env", factory=True, host=host, port=port, log_level=log_level,
                    timeout_graceful_shutdown=30, workers=workers, timeout_worker_healthcheck=30)
    finally:
        if limits_dir is not None:
            shutil.rmtree(limits_dir, ignore_errors=True)


@app.command("api-key")
@handle_errors
def api_key(
    file: str = typer.Argument(..., help="The --api-keys file to add the key to (created if missing)."),
    key_id: str = typer.Option(..., "--id", help="The key's id (recorded on the traces of its requests)."),
    tenant: str = typer.Option(..., "--tenant", help="The tenant the key may act for."),
    scope: str = typer.Option("tool", "--scope", help="tool (agent-tool calls only) or full (every endpoint)."),
) -> None:
    """Create a service key for `hopweave serve --api-keys FILE`: prints the key once and stores
    only its SHA-256 digest in FILE."""
    import json
    from pathlib import Path

    from hopweave.adapters.identity import hash_key, load_keys, new_api_key
    from hopweave.models.common import check_tenant

    if scope not in ("tool", "full"):
        raise InputError(f"--scope must be tool or full, not {scope!r}")
    check_tenant(tenant)
    path = Path(file)
    entries: list[dict[str, str]] = []
    if path.exists():
        entries = [{"id": k.id, "sha256": k.sha256, "tenant_id": k.tenant_id, "scope": k.scope}
                   for k in load_keys(file).values()]
        if any(e["id"] == key_id for e in entries):
            raise InputError(f"{file} already has a key {key_id!r}: pick another --id")
    key = new_api_key()
    entries.append({"id": key_id, "sha256": hash_key(key), "tenant_id": tenant, "scope": scope})
    try:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"keys": entries}, indent=2) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write {file}: {exc.strerror or exc}") from None
    typer.echo(key)


@app.command("mcp")
@handle_errors
def mcp(
    session: str = typer.Option(..., "--session", help="The session file (JSON: tenant_id, customer_id, ...) the "
                                "local agent acts for; fixed for the process, never taken from tool arguments."),
    store: Optional[str] = GraphOpt,
    vectors: Optional[str] = VectorsOpt,
) -> None:
    """Serve hopweave to a local agent over the Model Context Protocol on stdio: tools `retrieve`,
    `search` and `record_outcome`, resource template `hopweave://{tenant_id}/goals` (extra `mcp`;
    docs/serve.md, "MCP")."""
    import json
    from pathlib import Path

    from hopweave.adapters.mcp_server import build_mcp
    from hopweave.engine.engine import Engine

    path = Path(session)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"--session {session}: not a readable JSON session file ({exc})") from None
    engine = Engine.open(store, vectors=vectors)
    try:
        server = build_mcp(engine, session=data, caller_id=f"stdio:{path.name}")
        engine.warmup()
        server.run("stdio")
    finally:
        engine.close()
