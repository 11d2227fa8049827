"""Living-memory commands: ``outcome`` (record what was decided on a retrieval) and ``write-facts``
(a system of record's nodes and edges at run time)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import GraphOpt, emit_json, handle_errors, open_cli_stores

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.engine import Engine


def _memory_engine(store: Optional[str]) -> "Engine":
    """An engine on the graph store of ``--graph`` alone (memory writes read no vectors), with the
    store's domains and settings."""
    from hopweave.engine.engine import Engine

    stores = open_cli_stores(store, graph_only=True)
    return Engine(stores.graph, None, domains=stores.domains(), settings=stores.settings, store_dir=stores.store_dir)


@app.command()
@handle_errors
def outcome(
    trace_id: str = typer.Argument(..., help="The trace_id the retrieval returned."),
    session: Path = typer.Option(..., "--session", help="Session JSON file: the customer whose trace it is."),
    outcome_name: Optional[str] = typer.Option(None, "--outcome", help="One of the goal's outcomes (the pack's "
                                               "vocabulary); required unless --history."),
    decided_by: Optional[str] = typer.Option(None, "--decided-by", help="Who decided."),
    rationale: Optional[str] = typer.Option(None, "--rationale", help="Why."),
    cite: Optional[list[str]] = typer.Option(None, "--cite", help="A provenance id the decision rests on (repeat)."),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="The decision's ISO instant (default now)."),
    store: Optional[str] = GraphOpt,
    history: bool = typer.Option(False, "--history", help="Instead of recording: list every recorded version "
                                                          "of the trace's outcome, oldest first."),
    as_json: bool = typer.Option(False, "--json", help="Print the record as JSON."),
) -> None:
    """Record the outcome of a retrieval (Engine.record_outcome): idempotent, a different outcome
    is a new version. With --history: every version recorded on the trace (the audit of
    corrections)."""
    from hopweave.errors import InputError
    from hopweave.models.common import read_session_file

    if history and (outcome_name or decided_by or rationale or cite or as_of):
        raise InputError("--history lists the recorded versions: give it without --outcome, --decided-by, "
                         "--rationale, --cite or --as-of")
    if not history and not outcome_name:
        raise InputError("--outcome is required: one of the goal's outcomes (or --history to list the versions)")
    sess = read_session_file(session)
    engine = _memory_engine(store)
    if history:
        try:
            versions = engine.outcomes.history(trace_id, session=sess)
        finally:
            engine.close()
        if as_json:
            emit_json([v.model_dump(mode="json") for v in versions])
            return
        if not versions:
            typer.echo(f"no outcome recorded on {trace_id}")
        for v in versions:
            by = f" by {v.decided_by}" if v.decided_by else ""
            cited = f", cited {', '.join(v.cited)}" if v.cited else ""
            typer.echo(f"v{v.version} {v.decided_at.isoformat()}  {v.outcome}{by}{cited}")
        return
    assert outcome_name is not None
    try:
        rec = engine.record_outcome(trace_id, session=sess, outcome=outcome_name, decided_by=decided_by,
                                    rationale=rationale, cited=tuple(cite or ()), as_of=as_of)
    finally:
        engine.close()
    if as_json:
        emit_json(rec.model_dump(mode="json"))
    else:
        what = "recorded" if rec.created else "already recorded (nothing written)"
        typer.echo(f"{rec.outcome} on {rec.trace_id}: {what}; {rec.decided_id} version {rec.version} "
                   f"at {rec.decided_at.isoformat()}")


@app.command("write-facts")
@handle_errors
def write_facts(
    file: Path = typer.Argument(..., help="A JSONL file of node and edge records (the pack's graph format)."),
    tenant: str = typer.Option(..., "--tenant", help="The tenant the facts belong to."),
    source: str = typer.Option(..., "--source", help="The system of record writing (stamped as recorded_by)."),
    store: Optional[str] = GraphOpt,
    as_json: bool = typer.Option(False, "--json", help="Print what was written as JSON."),
) -> None:
    """Upsert facts from a system of record (Engine.write_facts): schema-validated, all or
    nothing, stamped recorded_at / recorded_by; time travel sees them from then on. The tenant
    must be one the store serves (examples/*/facts/ hold example files)."""
    from hopweave.engine.facts import parse_records
    from hopweave.errors import FactError, InputError
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {file}: {exc}; give a UTF-8 JSONL file") from None
    nodes: list[dict] = []
    edges: list[dict] = []
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FactError(f"{file}:{no}: not a JSON record ({exc.msg})") from None
        if not isinstance(rec, dict) or ("node" in rec) == ("edge" in rec):
            raise FactError(f"{file}:{no}: a record is a node ({{\"node\": ...}}) or an edge ({{\"edge\": ...}})")
        (nodes if "node" in rec else edges).append(rec)
    parse_records(nodes, "node"), parse_records(edges, "edge")  # malformed records fail before the store opens
    engine = _memory_engine(store)
    try:
        engine.settings_for(tenant)  # a tenant no domain of the store serves (a typo) is a TenantError, not orphan facts
        res = engine.write_facts(tenant, nodes, edges, source=source)
    finally:
        engine.close()
    if as_json:
        emit_json(res.model_dump(mode="json"))
    else:
        typer.echo(f"{len(res.nodes_written)} nodes and {res.edges_written} edges written, {res.unchanged} unchanged; "
                   f"recorded_at {res.recorded_at.isoformat()} by {res.source}")
