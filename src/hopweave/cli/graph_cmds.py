"""Graph commands: ``load``, ``patterns list|show|validate|uses``, ``traverse``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import GraphOpt, emit_json, handle_errors, open_cli_stores
from hopweave.errors import InputError, NotFoundError

patterns_app = typer.Typer(help="List, show, validate and search the stored traversal patterns.", no_args_is_help=True)
app.add_typer(patterns_app, name="patterns")

StoreOpt = GraphOpt
JsonOpt = typer.Option(False, "--json", help="Print JSON.")


def _open_existing(store: Optional[str]) -> Any:
    """The graph store of ``--graph`` (read-only when embedded); it must exist."""
    return open_cli_stores(store, graph_only=True, read_only=True).graph


def _echo(text: str) -> None:
    typer.echo(text)


# ---- patterns ------------------------------------------------------------------------------------
def _pattern_row(p: Any) -> dict[str, Any]:
    return {"name": p.name, "goal": p.goal, "version": p.version, "sub_question": p.sub_question,
            "seed_type": p.seed.type, "edge_types": [s.type for s in p.edge_sequence],
            "target_type": p.target_type, "depth": p.depth, "budget_ms": p.budget_ms,
            "definition_hash": p.definition_hash(), "status": p.status}


@patterns_app.command("list")
@handle_errors
def patterns_list(
    goal: Optional[str] = typer.Option(None, "--goal", help="Only this goal's patterns."),
    store: Optional[str] = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """List the patterns stored in the graph."""
    with _open_existing(store) as s:
        rows = [_pattern_row(p) for p in s.patterns(goal)]
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        retired = "  [retired]" if r["status"] == "retired" else ""
        _echo(f"{r['goal']:<20} {r['name']:<28} v{r['version']}  {'-'.join(r['edge_types']):<40} {r['sub_question']}"
              f"{retired}")


@patterns_app.command("show")
@handle_errors
def patterns_show(name: str = typer.Argument(..., help="Pattern name."), store: Optional[str] = StoreOpt) -> None:
    """Print one pattern's full definition (JSON, as stored in the graph)."""
    with _open_existing(store) as s:
        for p in s.patterns():
            if p.name == name:
                emit_json(p.model_dump(mode="json"))
                return
    raise NotFoundError(f"no pattern named {name!r} in the store; see `hopweave patterns list`")


@patterns_app.command("validate")
@handle_errors
def patterns_validate(
    schema: Optional[Path] = typer.Option(None, "--schema", help="Validate against this schema file (default: the store's)."),
    store: Optional[str] = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Re-run the write gates on every stored pattern (e.g. against a changed schema). Exit 1 on errors."""
    from hopweave.graph.gates import validate_all
    from hopweave.models.schema import GraphSchema

    with _open_existing(store) as s:
        sch = GraphSchema.load(schema) if schema else None
        errors = validate_all(s, sch)
        total = len(s.patterns()) + len(s.pattern_problems())
    out: dict[str, Any] = {"patterns": total, "invalid": {k: [str(e) for e in v] for k, v in sorted(errors.items())}}
    if as_json:
        emit_json(out)
    else:
        for name, errs in out["invalid"].items():
            for e in errs:
                _echo(f"INVALID {name}: {e}")
        _echo(f"{total - len(errors)}/{total} patterns valid")
    if errors:
        raise typer.Exit(code=1)


@patterns_app.command("uses")
@handle_errors
def patterns_uses(
    rel: Optional[str] = typer.Option(None, "--rel", help="Relationship type."),
    label: Optional[str] = typer.Option(None, "--label", help="Node label."),
    store: Optional[str] = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Every pattern that uses a relationship type and/or a label (co-evolution with the schema)."""
    from hopweave.graph.gates import patterns_using

    if rel is None and label is None:
        raise InputError("give --rel TYPE and/or --label LABEL")
    with _open_existing(store) as s:
        rows = [_pattern_row(p) for p in patterns_using(s, rel_type=rel, label=label)]
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        _echo(f"{r['goal']:<20} {r['name']:<28} v{r['version']}  {'-'.join(r['edge_types'])}")
    _echo(f"{len(rows)} pattern(s)")


# ---- traverse ------------------------------------------------------------------------------------
def _parse_entities(values: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for v in values:
        if "=" not in v:
            raise InputError(f"--entity {v!r}: use TYPE=VALUE, e.g. --entity Plan=Unlimited_Plus")
        k, val = v.split("=", 1)
        out[k.strip()] = val.strip()
    return out


@app.command("traverse")
@handle_errors
def traverse_cmd(
    goal: str = typer.Option(..., "--goal", help="Goal type whose patterns to run, e.g. RoamingChargeDispute."),
    seed: str = typer.Option(..., "--seed", help="The session's subject id (the patterns' seed), e.g. SUB_1001."),
    as_of: str = typer.Option(..., "--as-of", help="Request time (YYYY-MM-DD or ISO datetime); relative times use it."),
    store: Optional[str] = StoreOpt,
    tenant: Optional[str] = typer.Option(None, "--tenant", help="The session's tenant (default: the store's default tenant)."),
    entity: list[str] = typer.Option([], "--entity", help="Resolved entity TYPE=VALUE (repeatable)."),
    workers: int = typer.Option(8, "--workers", help="Parallel patterns."),
    as_json: bool = JsonOpt,
) -> None:
    """Run a goal's traversal patterns (read from the graph) in parallel for a seed customer."""
    from hopweave.graph.traverse import run_goal_patterns, seed_entities
    from hopweave.models.common import Bindings, Session, to_datetime

    when = to_datetime(as_of)
    with open_cli_stores(store, graph_only=True, read_only=True) as stores:
        stored, s = stores.settings, stores.graph
        if stored is None:
            raise InputError(f"{stores.graph_uri.display} was not loaded from a domain pack: run "
                             f"`hopweave load PACK --graph {stores.graph_uri.display}`")
        tenant = tenant or stored.default_tenant()
        if tenant is None:
            raise InputError("give --tenant: the store's packs name no default tenant")
        subject = stored.registry().for_tenant(tenant).subject.label
        patterns = s.patterns(goal)
        if not patterns:
            known = sorted(g.name for g in s.goal_types())
            raise NotFoundError(f"goal {goal!r} has no patterns in the store; goals: {known}")
        entities = {**seed_entities(s, tenant, subject, seed), **_parse_entities(entity)}
        bindings = Bindings(session=Session(tenant_id=tenant, customer_id=seed), as_of=when, goal=goal,
                            entities=entities)
        results = run_goal_patterns(s, tenant, patterns, bindings, max_workers=workers)
    out: list[dict[str, Any]] = [
        {
            "pattern": r.pattern, "version": r.version, "sub_question": r.sub_question, "section": r.section,
            "rows": [row.model_dump(mode="json") for row in r.rows], "truncated": r.truncated,
            "truncated_reason": r.truncated_reason, "elapsed_ms": r.elapsed_ms, "visited": r.visited,
            "seed_id": r.seed_id, "error": r.error,
        }
        for r in results
    ]
    if as_json:
        emit_json(out)
        return
    for r in out:
        flag = f" [truncated: {r['truncated_reason']}]" if r["truncated"] else ""
        _echo(f"{r['pattern']} v{r['version']} — {r['sub_question']} ({r['elapsed_ms']:.2f} ms){flag}")
        for row in r["rows"]:
            _echo(f"    {row['node_id']}: {row['properties'].get('summary', '')}")
        if r["error"]:
            _echo(f"    error: {r['error']}")
