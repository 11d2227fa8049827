"""Learning from decided cases: ``consolidate`` (mine heuristics), ``review`` (approve or reject
them) and ``pattern-report`` (how decisions cite the goal's patterns, and pattern proposals)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import GraphOpt, VectorsOpt, emit_json, handle_errors, open_cli_stores
from hopweave.errors import InputError, NotFoundError

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.engine import Engine
    from hopweave.models.metagraph import GoalType


def _engine(store: Optional[str]) -> "Engine":
    from hopweave.engine.engine import Engine

    stores = open_cli_stores(store, graph_only=True)
    return Engine(stores.graph, None, domains=stores.domains(), settings=stores.settings, store_dir=stores.store_dir)


def _goal(engine: "Engine", tenant: str, name: str) -> "GoalType":
    domain = engine.settings_for(tenant).name
    goals = {g.name: g for g in engine.graph.domain_goal_types(domain)}
    if name not in goals:
        raise NotFoundError(f"goal {name!r} is not a goal of tenant {tenant!r}'s domain; goals: {sorted(goals)}")
    return goals[name]


def _instant(as_of: Optional[str], default: Optional[datetime]) -> datetime:
    from hopweave.engine.boundary import check_as_of

    if as_of is None and default is not None:
        return default
    return check_as_of(as_of)[0]


def _writer(engine: "Engine") -> Any:
    from hopweave.engine.outcomes import commit

    return lambda tenant, nodes, edges: commit(engine.trace_writer, tenant, nodes, edges)


@app.command()
@handle_errors
def consolidate(
    goal: str = typer.Option(..., "--goal", help="The goal whose decided cases are mined."),
    tenant: str = typer.Option(..., "--tenant", help="The tenant whose decided cases are mined."),
    min_support: int = typer.Option(20, "--min-support", help="Fewest cases a heuristic rests on."),
    min_confidence: float = typer.Option(0.8, "--min-confidence", help="Lowest share with the outcome."),
    max_depth: Optional[int] = typer.Option(None, "--max-depth", help="Most conditions a heuristic has (the "
                                            "depth of the tree mined; default 4); a rule over more facts needs more."),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="The proposals' instant (default: the latest "
                                                              "decision mined)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Mine and print; write nothing."),
    store: Optional[str] = GraphOpt,
    as_json: bool = typer.Option(False, "--json", help="Print the proposals as JSON."),
) -> None:
    """Mine heuristics (conditions over the kept case facts -> an outcome, with support,
    confidence and evidence) from the goal's decided traces and write them as proposed
    :Heuristic nodes (deterministic: the same traces give the same proposals)."""
    from hopweave.engine import consolidate as C

    engine = _engine(store)
    try:
        g = _goal(engine, tenant, goal)
        if g.outcomes is None:
            raise InputError(f"goal {goal} declares no outcomes; add `outcomes:` to the goal in its pack")
        cases = C.decided_cases(engine.graph, tenant, g)
        mined = C.mine(cases, g.name, list(g.outcomes.keep), min_support=min_support, min_confidence=min_confidence,
                       max_depth=C.DEFAULT_MAX_DEPTH if max_depth is None else max_depth)
        latest = max((c.decided_at for c in cases if c.decided_at is not None), default=None)
        at = _instant(as_of, latest)
        if dry_run:
            out = [{"id": h.id, "status": "mined", "text": h.text(), "outcome": h.outcome, "support": h.support,
                    "confidence": h.confidence, "evidence": len(h.evidence)} for h in mined]
        else:
            out = C.propose(engine.graph, _writer(engine), tenant, mined, at=at)
    finally:
        engine.close()
    if as_json:
        emit_json({"goal": goal, "tenant": tenant, "cases": len(cases), "proposals": out})
        return
    typer.echo(f"{len(cases)} decided cases of {goal}; {len(out)} heuristic(s)")
    if not out and len(cases) < min_support:
        typer.echo(f"  (a heuristic rests on at least --min-support {min_support} cases: record more outcomes with "
                   "`hopweave outcome`, or lower --min-support)")
    for p in out:
        typer.echo(f"  {p['id']} [{p['status']}] {p['text']}  (support {p['support']}, "
                   f"confidence {p['confidence']:.2f}, {p['evidence']} traces)")


@app.command()
@handle_errors
def review(
    tenant: str = typer.Option(..., "--tenant", help="The tenant whose proposals are listed or reviewed."),
    goal: Optional[str] = typer.Option(None, "--goal", help="Only this goal's proposals."),
    status: Optional[str] = typer.Option(None, "--status", help="Only proposals with this status "
                                                                "(proposed, approved, rejected)."),
    approve: Optional[str] = typer.Option(None, "--approve", help="Approve this heuristic id."),
    reject: Optional[str] = typer.Option(None, "--reject", help="Reject this heuristic id."),
    by: Optional[str] = typer.Option(None, "--by", help="Who reviews (required with --approve/--reject)."),
    note: Optional[str] = typer.Option(None, "--note", help="Why."),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="The review's ISO instant (default now)."),
    store: Optional[str] = GraphOpt,
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """List mined heuristics, or approve / reject one (who and when are recorded). Only approved
    heuristics reach the Procedure section, from the approval instant on."""
    from hopweave.engine import consolidate as C

    if approve and reject:
        raise InputError("give --approve or --reject, not both")
    if status is not None and status not in ("proposed", "approved", "rejected"):
        raise InputError(f"--status must be proposed, approved or rejected, not {status!r}")
    engine = _engine(store)
    try:
        if goal is not None:
            _goal(engine, tenant, goal)  # an unknown goal is a NotFoundError naming the goals, not an empty list
        if approve or reject:
            if not by:
                raise InputError("--by is required to approve or reject: name the reviewer")
            goals = {g.name: g for g in engine.graph.domain_goal_types(engine.settings_for(tenant).name)}
            hid = approve or reject
            assert hid is not None
            done = C.review(engine.graph, _writer(engine), tenant, goals, hid,
                            decision="approve" if approve else "reject", by=by, at=_instant(as_of, None), note=note)
            rows = [done]
        else:
            rows = C.proposals(engine.graph, tenant, goal, status)
    finally:
        engine.close()
    if as_json:
        emit_json({"tenant": tenant, "heuristics": rows})
        return
    if not rows:
        typer.echo("no mined heuristics (run `hopweave consolidate --goal G --tenant T`)")
    for p in rows:
        who = f", {p['status']} by {p['reviewed_by']} at {p['reviewed_at']}" if p.get("reviewed_by") else ""
        typer.echo(f"{p['id']} [{p['status']}] {p['text']}{who}")


@app.command("pattern-report")
@handle_errors
def pattern_report(
    goal: str = typer.Option(..., "--goal", help="The goal whose decided cases are read."),
    tenant: str = typer.Option(..., "--tenant", help="The tenant whose decided cases are read."),
    min_cases: int = typer.Option(20, "--min-cases", help="Fewest cases a flag or a new pattern rests on."),
    propose: bool = typer.Option(False, "--propose", help="Write the proposals (PatternProposal nodes)."),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="The proposals' instant (default: the latest "
                                                              "decision read)."),
    store: Optional[str] = GraphOpt,
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """How often each of the goal's patterns had its rows cited by decided cases (per outcome),
    the patterns never cited, and a candidate pattern for cited nodes no pattern retrieved."""
    from hopweave.engine import consolidate as C, pattern_learning as PL

    engine = _engine(store)
    try:
        g = _goal(engine, tenant, goal)
        domain = engine.settings_for(tenant).name
        cases = C.decided_cases(engine.graph, tenant, g)
        latest = max((c.decided_at for c in cases if c.decided_at is not None), default=None)
        out = PL.propose_patterns(engine.graph, _writer(engine), tenant, g, engine.graph.domain_patterns(domain, goal),
                                  at=_instant(as_of, latest), domain=domain, min_cases=min_cases, dry_run=not propose)
    finally:
        engine.close()
    if as_json:
        emit_json(out)
        return
    rep = out["report"]
    typer.echo(f"{rep['cases']} decided cases of {goal}: {rep['outcomes']}")
    for p in rep["patterns"]:
        flag = "  NEVER CITED" if p["never_cited"] else ""
        typer.echo(f"  {p['name']} v{p['version']}: rows in {p['retrieved_in']}, cited in {p['cited_in']} "
                   f"{p['cited_by_outcome']}{flag}")
    typer.echo(f"cases citing ids no pattern retrieved: {rep['unretrieved']['cases']}")
    if not out["proposals"] and rep["cases"] < min_cases:
        typer.echo(f"  (a flag or a proposal rests on at least --min-cases {min_cases} decided cases: record more "
                   "outcomes with `hopweave outcome --cite ID`, or lower --min-cases)")
    for pr in out["proposals"]:
        typer.echo(f"proposal {pr['id']} [{pr['status']}] {pr['kind']} {pr['pattern']}: {pr['reason']}")


@app.command("review-pattern")
@handle_errors
def review_pattern(
    tenant: str = typer.Option(..., "--tenant", help="The tenant whose pattern proposals are listed or reviewed."),
    goal: Optional[str] = typer.Option(None, "--goal", help="Only this goal's proposals."),
    approve: Optional[str] = typer.Option(None, "--approve", help="Approve this proposal id: a new pattern is "
                                                                  "written and runs from then on; a retired one "
                                                                  "is no longer run by its goal."),
    reject: Optional[str] = typer.Option(None, "--reject", help="Reject this proposal id."),
    by: Optional[str] = typer.Option(None, "--by", help="Who reviews (required with --approve/--reject)."),
    note: Optional[str] = typer.Option(None, "--note", help="Why."),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="The review's ISO instant (default now)."),
    scenarios: Optional[list[Path]] = typer.Option(
        None, "--scenarios", help="With --approve: replay these scenario files or folders before and after the "
                                  "approval (not recorded) and print what changed in each (repeatable)."),
    store: Optional[str] = GraphOpt,
    vectors: Optional[str] = VectorsOpt,
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """List pattern proposals, or approve / reject one (who and when are recorded). With
    --scenarios, an approval shows its effect: each scenario replayed before and after it, with
    the patterns, facts and context lines that changed; exit 1 when a scenario that passed fails."""
    from hopweave.engine import pattern_learning as PL

    if approve and reject:
        raise InputError("give --approve or --reject, not both")
    if scenarios and not approve:
        raise InputError("--scenarios shows what an approval changes: give it with --approve ID")
    changes: list[Any] = []
    engine = _engine(store) if not scenarios else _full_engine(store, vectors)
    try:
        if approve or reject:
            if not by:
                raise InputError("--by is required to approve or reject: name the reviewer")
            at = _instant(as_of, None)
            if approve:
                def run() -> dict[str, Any]:
                    return PL.approve_pattern(engine.graph, _writer(engine), tenant, approve, by=by, at=at,
                                              note=note, domain=engine.settings_for(tenant).name)
                if scenarios:
                    from hopweave.engine.replay import compare

                    done, changes = compare(engine, scenarios, run)
                else:
                    done = run()
                rows = [done]
            else:
                assert reject is not None
                rows = [PL.reject_pattern(engine.graph, _writer(engine), tenant, reject, by=by, at=at, note=note)]
        else:
            rows = PL.pattern_proposals(engine.graph, tenant, goal)
    finally:
        engine.close()
    broke = [c for c in changes if c.before.passed and not c.after.passed]
    if as_json:
        out: dict[str, Any] = {"tenant": tenant, "proposals": rows}
        if scenarios:
            out["replay"] = [c.model_dump(mode="json") for c in changes]
        emit_json(out)
    else:
        if not rows:
            typer.echo("no pattern proposals (run `hopweave pattern-report --goal G --tenant T --propose`)")
        for p in rows:
            who = f", {p['status']} by {p['reviewed_by']}" if p.get("reviewed_by") else ""
            typer.echo(f"{p['id']} [{p['status']}] {p['kind']} {p['pattern']}: {p.get('reason', '')}{who}")
        if scenarios:
            typer.echo(f"replay before -> after the approval ({len(changes)} scenarios, "
                       f"{sum(c.changed for c in changes)} changed, {len(broke)} newly failing):")
            for c in changes:
                typer.echo("  " + c.render().replace("\n", "\n  "))
    if broke:
        raise typer.Exit(code=1)


def _full_engine(store: Optional[str], vectors: Optional[str]) -> "Engine":
    """The engine with its vector index at the replay budgets (scenario runs)."""
    from hopweave.engine.engine import Engine
    from hopweave.engine.replay import REPLAY_CONFIG

    return Engine.open(store, vectors=vectors, config=REPLAY_CONFIG)
