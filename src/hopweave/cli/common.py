"""Shared CLI helpers: JSON output and mapping HopweaveError to a clean exit."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, Callable, TypeVar

import typer

from hopweave.errors import HopweaveError

F = TypeVar("F", bound=Callable[..., Any])


def emit_json(obj: Any) -> None:
    """Print deterministic JSON (sorted keys) to stdout."""
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def handle_errors(fn: F) -> F:
    """Turn a HopweaveError into 'error: <message>' on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HopweaveError as exc:
            typer.echo(f"error: {type(exc).__name__}: {exc}", err=True)
            raise typer.Exit(code=2) from None

    return wrapper  # type: ignore[return-value]


def store_path(store: Path | None) -> Path:
    """The store directory every command uses: ``--store``, else ``$HOPWEAVE_STORE``
    (``HopweaveSettings.store_dir``), else ``.hopweave/store``."""
    if store is not None:
        return store
    from hopweave.config import HopweaveSettings

    return HopweaveSettings().store_dir


STORE_HELP = "Store directory (default: $HOPWEAVE_STORE or .hopweave/store; build it with `hopweave load PACK`)."
