"""Engine commands: ``demo``, ``retrieve``, ``replay`` and ``trace show|diff|used-by``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import STORE_HELP, emit_json, handle_errors, store_path
from hopweave.errors import ConfigError, InputError

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.engine import Engine
    from hopweave.engine.result import RetrievalResult
    from hopweave.models.domain import DomainRegistry

trace_app = typer.Typer(help="Inspect recorded retrievals (DecisionTrace nodes).", no_args_is_help=True)
app.add_typer(trace_app, name="trace")



def _store(store: Optional[Path]) -> Path:
    return store_path(store)


def _demo_scenario(pack: Path) -> Path:
    """The pack's demo scenario: the first (by file name) tagged ``demo``, else the first one."""
    from hopweave.fileio import read_yaml
    from hopweave.pack.manifest import read_manifest

    m = read_manifest(pack)
    files = sorted((pack / (m.scenarios or "scenarios")).glob("*.yaml"))
    if not files:
        raise InputError(f"pack {pack} has no scenarios to demo: add one under {m.scenarios or 'scenarios'}/")
    tagged = [f for f in files if "demo" in ((read_yaml(f, "scenario") or {}).get("tags") or [])]
    return (tagged or files)[0]


def _open_engine(store: Path, **config: Any) -> "Engine":
    from hopweave.engine.engine import Engine, EngineConfig

    if not (store / "graph").exists():
        raise InputError(f"no hopweave store at {store}: run `hopweave load PACK --store {store}` first")
    return Engine.open(store, config=EngineConfig(**config) if config else None)


def _print_context(result: "RetrievalResult", first_ms: float | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    typer.echo(f"goal {result.goal or '(unclear: clarify)'}  confidence {result.confidence:.2f}  "
               f"as_of {result.as_of.isoformat()}  trace {result.trace_id}")
    typer.echo(f"filter {json.dumps(result.filter_display, sort_keys=True)}\n")
    typer.echo(result.context.text)  # plain: the block is never re-wrapped
    typer.echo(f"\n{result.context.tokens} tokens of {result.context.budget} ({result.context.tokenizer}); "
               f"{len(result.context.omitted)} line(s) left out")
    if not result.recorded:
        typer.echo("trace not recorded" + (" (see degraded)" if any(d.stage == "record" for d in result.degraded)
                                           else ""))
    if result.degraded:
        typer.echo("degraded:")
        for d in result.degraded:
            typer.echo(f"  - {d.stage}: {d.what}: {d.reason} -> {d.fallback}")
    caption = f"first run {first_ms:.0f} ms (cold caches)" if first_ms is not None else None
    t = Table(title="stage timings (ms)", caption=caption)
    t.add_column("stage")
    t.add_column("ms", justify="right")
    for k in ("understand", "search", "traverse", "precedent", "search_and_traverse", "assemble", "record", "total"):
        if k in result.timings_ms:
            t.add_row(k, f"{result.timings_ms[k]:.1f}")
    Console().print(t)


@app.command()
@handle_errors
def demo(
    pack: Path = typer.Argument(Path("examples/deltabank"), help="Domain pack whose demo scenario to run."),
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the full result as JSON."),
) -> None:
    """Run a pack's demo scenario end to end on the embedded store (default: DeltaBank's Maria,
    seed 004's late-fee dispute).

    Loads the pack (graph, metagraph, policy corpus) into the store if it is absent, then prints
    the context block and a stage-timing table.
    """
    import time

    from hopweave.engine.replay import check, load_scenario, run_scenario

    example = pack
    store_dir = _store(store)
    if not (store_dir / "graph").exists():
        from hopweave.pack.loader import load_pack

        t = time.perf_counter()
        typer.echo(f"loading the example pack {example} into {store_dir} ...", err=True)
        load_pack(example, store_dir)
        typer.echo(f"loaded in {time.perf_counter() - t:.1f} s", err=True)
    sc = load_scenario(_demo_scenario(example))
    engine = _open_engine(store_dir)
    try:
        warm = engine.warmup()
        typer.echo(f"models loaded in {sum(warm.values()) / 1000:.1f} s (once per process)", err=True)
        first = run_scenario(engine, sc)
        result = run_scenario(engine, sc)  # the same case again: warm caches, identical bytes
    finally:
        engine.close()
    if result.context.text != first.context.text:  # pragma: no cover - determinism guard
        raise typer.Exit(code=1)
    if as_json:
        emit_json(result.to_json())
        return
    typer.echo(f"\n{sc.utterance!r}  (session {sc.resolved_session().customer_id}, tenant "
               f"{sc.resolved_session().tenant_id})\n")
    _print_context(result, first.timings_ms.get("total"))
    fails = check(sc, result)
    if fails:
        typer.echo("demo expectations NOT met:\n  " + "\n  ".join(fails), err=True)
        raise typer.Exit(code=1)


@app.command()
@handle_errors
def retrieve(
    utterance: str = typer.Argument(..., help="What the customer said."),
    session: Path = typer.Option(..., "--session", help="Session JSON file (tenant_id, customer_id, region, ...)."),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="Evaluate the case at this ISO date/datetime."),
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    profile: Optional[str] = typer.Option(None, "--profile", help="Ranking profile name."),
    token_budget: Optional[int] = typer.Option(None, "--token-budget", help="Context token budget."),
    budget_ms: Optional[int] = typer.Option(None, "--budget-ms", help="Wall-clock budget."),
    no_record: bool = typer.Option(False, "--no-record", help="Do not write a DecisionTrace."),
    as_json: bool = typer.Option(False, "--json", help="Print the typed result as JSON."),
) -> None:
    """Retrieve the working set for one utterance."""
    from hopweave.engine.boundary import check_request
    from hopweave.models.common import read_session_file

    sess = read_session_file(session)  # a bad session or argument fails before the stores open
    check_request(utterance, session=sess, as_of=as_of, budget_ms=budget_ms, profile=profile,
                  token_budget=token_budget)
    engine = _open_engine(_store(store))
    try:
        result = engine.retrieve(utterance, session=sess, as_of=as_of, profile=profile,
                                 token_budget=token_budget, budget_ms=budget_ms, record=not no_record)
    finally:
        engine.close()
    if as_json:
        emit_json(result.to_json())
    else:
        _print_context(result)


@app.command()
@handle_errors
def replay(
    paths: list[Path] = typer.Argument(..., help="Scenario files or folders."),
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    twice: bool = typer.Option(False, "--twice", help="Replay each scenario twice and require identical bytes."),
    no_record: bool = typer.Option(False, "--no-record", help="Do not write DecisionTraces."),
    as_json: bool = typer.Option(False, "--json", help="Print the outcomes as JSON."),
) -> None:
    """Re-run scenarios at their recorded as_of and check their expectations (exit 1 on failure)."""
    from hopweave.engine.replay import REPLAY_CONFIG, replay as run

    engine = _open_engine(_store(store), **REPLAY_CONFIG.__dict__)
    try:
        outcomes = run(engine, paths, record=not no_record)
        if twice:
            again = run(engine, paths, record=False)
            outcomes = [
                o if o.context_hash == a.context_hash and o.trace_id == a.trace_id else o.model_copy(update={
                    "passed": False,
                    "failures": o.failures + (f"second replay differs: context {o.context_hash[:12]} vs "
                                              f"{a.context_hash[:12]}, trace {o.trace_id} vs {a.trace_id}",)})
                for o, a in zip(outcomes, again)
            ]
    finally:
        engine.close()
    failed = [o for o in outcomes if not o.passed]
    if as_json:
        emit_json([o.model_dump(mode="json") for o in outcomes])
    else:
        for o in outcomes:
            mark = "PASS" if o.passed else "FAIL"
            typer.echo(f"{mark}  {o.scenario:40s} goal={o.goal or '-':22s} trace={o.trace_id} "
                       f"tokens={o.tokens} {o.timings_ms.get('total', 0):.0f}ms")
            for f in o.failures:
                typer.echo(f"      - {f}")
        typer.echo(f"\n{len(outcomes) - len(failed)}/{len(outcomes)} scenarios passed"
                   + (" (each replayed twice, byte-identical)" if twice and not failed else ""))
    if failed:
        raise typer.Exit(code=1)


def _tenant(tenant: Optional[str]) -> str:
    t = tenant or os.environ.get("HOPWEAVE_TENANT")
    if not t:
        raise InputError("traces are tenant-scoped: pass --tenant (or set HOPWEAVE_TENANT)")
    return t


@trace_app.command("show")
@handle_errors
def trace_show(
    trace_id: str = typer.Argument(..., help="A recorded retrieval's trace id (RT_...)."),
    tenant: Optional[str] = typer.Option(None, "--tenant", help="Tenant id (or $HOPWEAVE_TENANT)."),
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    pii: bool = typer.Option(False, "--pii", help="Show the utterance (a PII property)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """What trace T saw: plan, patterns and versions, chunks, facts, precedent, context."""
    from hopweave.engine import record as trace_record
    from hopweave.engine.stages import open_graph

    graph = open_graph(_store(store))
    t = trace_record.load(graph, _tenant(tenant), trace_id)
    t = t if pii else t.redacted()
    if as_json:
        emit_json(t.model_dump(mode="json"))
        return
    typer.echo(f"trace {t.trace_id}  goal={t.goal}@{t.goal_version}  as_of={t.as_of}  customer={t.customer_id}")
    typer.echo(f"utterance: {t.utterance}")
    pats = ", ".join(f"{p.get('name')}@{p.get('version')}" for p in t.patterns)
    typer.echo(f"patterns:  {pats or '-'}")
    typer.echo(f"filter:    {json.dumps(t.filter, sort_keys=True)}")
    typer.echo(f"profile:   {t.ranking_profile}")
    typer.echo(f"chunks:    {', '.join(t.chunk_ids) or '-'}")
    typer.echo(f"facts:     {', '.join(t.fact_ids) or '-'}")
    typer.echo(f"precedent: {', '.join(t.precedent_ids) or '-'}")
    typer.echo(f"degraded:  {json.dumps(t.degraded) if t.degraded else '-'}")
    typer.echo(f"context ({t.tokens} tokens, sha256 {str(t.context_hash)[:16]}):\n{t.context_text}")


@trace_app.command("diff")
@handle_errors
def trace_diff(
    a: str = typer.Argument(..., help="Earlier trace id."),
    b: str = typer.Argument(..., help="Later trace id."),
    tenant: Optional[str] = typer.Option(None, "--tenant", help="Tenant id (or $HOPWEAVE_TENANT)."),
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Exactly what changed between two recorded retrievals (plan, what was seen, context)."""
    from hopweave.engine import record as trace_record
    from hopweave.engine.stages import open_graph

    graph = open_graph(_store(store))
    t = _tenant(tenant)
    d = trace_record.diff(trace_record.load(graph, t, a), trace_record.load(graph, t, b))
    if as_json:
        emit_json(d.model_dump(mode="json"))
    else:
        typer.echo(d.render())


@trace_app.command("replay")
@handle_errors
def trace_replay(
    trace_id: str = typer.Argument(..., help="A recorded retrieval to re-run (its utterance, session, as_of)."),
    tenant: Optional[str] = typer.Option(None, "--tenant", help="Tenant id (or $HOPWEAVE_TENANT)."),
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    no_record: bool = typer.Option(False, "--no-record", help="Do not write the new trace."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Re-run a recorded retrieval on the store as it is now and show what changed (exit 1 if
    the context differs)."""
    from hopweave.engine.replay import REPLAY_CONFIG, replay_trace

    engine = _open_engine(_store(store), **REPLAY_CONFIG.__dict__)
    try:
        result, d = replay_trace(engine, _tenant(tenant), trace_id, record=not no_record)
    finally:
        engine.close()
    if as_json:
        emit_json({"trace_id": result.trace_id, "diff": d.model_dump(mode="json")})
    else:
        typer.echo(f"replayed {trace_id} -> {result.trace_id}")
        typer.echo(d.render())
    if not d.same_context:
        raise typer.Exit(code=1)


@trace_app.command("used-by")
@handle_errors
def trace_used_by(
    pattern: str = typer.Argument(..., help="TraversalPattern name."),
    version: Optional[int] = typer.Option(None, "--version", help="Only traces that used this version."),
    tenant: Optional[str] = typer.Option(None, "--tenant", help="Tenant id (or $HOPWEAVE_TENANT)."),
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Which recorded retrievals used pattern X (through USED_PATTERN edges)."""
    from hopweave.engine import record as trace_record
    from hopweave.engine.stages import open_graph

    graph = open_graph(_store(store))
    traces = trace_record.traces_using(graph, _tenant(tenant), pattern, version)
    if as_json:
        emit_json([{"trace_id": x.trace_id, "as_of": x.as_of, "goal": x.goal,
                    "pattern_versions": [p for p in x.patterns if p.get("name") == pattern]} for x in traces])
        return
    for x in traces:
        v = next((p.get("version") for p in x.patterns if p.get("name") == pattern), None)
        typer.echo(f"{x.trace_id}  as_of={x.as_of}  goal={x.goal}  {pattern}@{v}")
    typer.echo(f"{len(traces)} trace(s) used {pattern}" + (f"@{version}" if version else ""))
