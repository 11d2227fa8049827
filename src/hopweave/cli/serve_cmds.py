"""``hopweave serve``: the engine over HTTP (see :mod:`hopweave.adapters.http`, docs/serve.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import STORE_HELP, handle_errors, store_path
from hopweave.errors import InputError, MissingDependencyError


@app.command()
@handle_errors
def serve(
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on (loopback by default)."),
    port: int = typer.Option(8765, "--port", help="TCP port."),
    max_inflight: int = typer.Option(128, "--max-inflight",
                                     help="Requests admitted at once; one more gets 503 + Retry-After."),
    budget_ms: Optional[int] = typer.Option(None, "--budget-ms", help="Default wall-clock budget (800)."),
    switch_interval_ms: float = typer.Option(
        1.0, "--switch-interval-ms", help="Python's thread switch interval: a small one lets a request whose "
        "deadline came get the GIL back quickly under load (Python's default is 5)."),
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level."),
) -> None:
    """Serve retrievals over HTTP: POST /v1/retrieve, POST /v1/tool/retrieve, GET /healthz,
    GET /readyz, /openapi.json. One process (a qdrant-edge shard opens in one process only);
    SIGTERM drains requests in flight and queued traces, then closes the stores."""
    try:
        import uvicorn
    except ModuleNotFoundError as exc:
        raise MissingDependencyError(exc.name or "fastapi", "serve", "hopweave serve") from exc
    root = store_path(store)
    if not (root / "graph").exists():
        raise InputError(f"no hopweave store at {root}: run `hopweave load PACK --store {root}` first")
    if switch_interval_ms <= 0:
        raise InputError("--switch-interval-ms must be > 0")
    if budget_ms is not None and budget_ms < 1:
        raise InputError("--budget-ms must be >= 1")
    sys.setswitchinterval(switch_interval_ms / 1000.0)
    # the app is an adapter (hopweave.adapters.http); uvicorn builds it from its factory, so
    # the CLI stays beside the adapters rather than importing them
    os.environ["HOPWEAVE_SERVE_STORE"] = str(root)
    os.environ["HOPWEAVE_SERVE_MAX_INFLIGHT"] = str(max_inflight)
    if budget_ms is not None:
        os.environ["HOPWEAVE_SERVE_BUDGET_MS"] = str(budget_ms)
    uvicorn.run("hopweave.adapters.http:app_from_env", factory=True, host=host, port=port, log_level=log_level,
                timeout_graceful_shutdown=30)
