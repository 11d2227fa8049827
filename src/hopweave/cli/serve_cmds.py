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
        1.0, "--graph-refresh-s", help="With several workers: how often each catches up with what the others (and "
        "other processes) wrote to an embedded graph store, e.g. decision traces (0: only when it writes itself)."),
) -> None:
    """Serve retrievals over HTTP: POST /v1/retrieve, POST /v1/tool/retrieve, GET /healthz,
    GET /readyz, /openapi.json. --workers N runs N processes on one socket (default: one per
    CPU); SIGTERM drains requests in flight and queued traces in every worker, then closes the
    stores."""
    try:
        import uvicorn
    except ModuleNotFoundError as exc:
        raise MissingDependencyError(exc.name or "fastapi", "serve", "hopweave serve") from exc
    from hopweave.stores.uri import default_graph_uri, parse_graph_uri

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
    uvicorn.run("hopweave.adapters.http:app_from_env", factory=True, host=host, port=port, log_level=log_level,
                timeout_graceful_shutdown=30, workers=workers, timeout_worker_healthcheck=30)
