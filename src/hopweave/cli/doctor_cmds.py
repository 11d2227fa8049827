"""``hopweave doctor``: check the configured stores and print what to fix (exit 1 on a problem)."""

from __future__ import annotations

from typing import Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import GraphOpt, VectorsOpt, emit_json, handle_errors

_MARK = {"ok": "ok", "warning": "warn", "error": "ERROR"}


@app.command("doctor")
@handle_errors
def doctor_cmd(
    store: Optional[str] = GraphOpt,
    vectors: Optional[str] = VectorsOpt,
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
    deep: bool = typer.Option(False, "--deep", help="Also decode and check every node of an embedded graph "
                              "snapshot (seconds at a million nodes)."),
) -> None:
    """Check each configured store: the graph opens (reachable, credentials), holds the store
    settings and the loaded packs' goals and patterns, has its constraints and indexes (Cypher
    servers); the vector index opens and its embedding space is the configured embedder's.
    An embedded graph's snapshot format and journal size are checked too (`hopweave compact`
    when they slow opens). Prints what to fix; exit 1 when a check fails (warnings alone exit 0)."""
    from hopweave.stores.doctor import doctor

    report = doctor(store, vectors, deep=deep)
    if as_json:
        emit_json(report.as_json())
    else:
        typer.echo(f"hopweave doctor: graph {report.graph}, vectors {report.vectors or '(none)'}")
        for f in report.findings:
            typer.echo(f"  {_MARK[f.severity]:<5}  {f.store:<7}  {f.check:<16} {f.detail}")
            if f.fix and f.severity != "ok":
                typer.echo(f"  {'':<5}  {'':<7}  {'':<16} fix: {f.fix}")
        errors = sum(f.severity == "error" for f in report.findings)
        warnings = sum(f.severity == "warning" for f in report.findings)
        typer.echo(f"{errors} problem(s), {warnings} warning(s)" if errors or warnings else "all checks passed")
    if not report.ok:
        raise typer.Exit(code=1)
