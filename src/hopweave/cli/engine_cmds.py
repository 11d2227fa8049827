"""Engine commands: ``demo``, ``retrieve``, ``replay`` and ``trace show|diff|used-by``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import GraphOpt, VectorsOpt, emit_json, handle_errors, open_cli_stores
from hopweave.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.engine import Engine
    from hopweave.engine.result import RetrievalResult

trace_app = typer.Typer(help="Inspect recorded retrievals (DecisionTrace nodes).", no_args_is_help=True)
app.add_typer(trace_app, name="trace")



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


def _open_engine(store: Optional[str], vectors: Optional[str] = None, **config: Any) -> "Engine":
    """The engine on ``--graph`` / ``--vectors`` (:func:`hopweave.open`; defaults from the environment)."""
    from hopweave.engine.engine import Engine, EngineConfig

    return Engine.open(store, vectors=vectors, config=EngineConfig(**config) if config else None)


def _open_graph(store: Optional[str]) -> Any:
    """The graph store of ``--graph`` alone (read-only when embedded)."""
    return open_cli_stores(store, graph_only=True, read_only=True).graph


def _needs_load(graph: str, pack: Path) -> bool:
    """Whether ``hopweave demo`` must load ``pack`` first: an embedded directory without a graph,
    or a server store that does not hold the pack's domain."""
    from hopweave.pack.manifest import read_manifest
    from hopweave.stores.uri import parse_graph_uri

    uri = parse_graph_uri(graph)
    if uri.kind == "embedded" and uri.path is not None:
        return not (uri.path / "graph").exists()
    with open_cli_stores(graph, graph_only=True, create=True) as stores:
        return stores.settings is None or read_manifest(pack).name not in stores.settings.domains


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
    if len(result.rounds) > 1 or result.parts:
        typer.echo(f"escalation {result.escalation}: {len(result.rounds)} round(s)"
                   + (f", {len(result.parts)} intents" if result.parts else ""))
        for r in result.rounds:
            typer.echo(f"  round {r.round}: {r.action} (+{len(r.added)} chunks)"
                       + (f" because {'; '.join(r.why)}" if r.why else ""))
    if result.degraded:
        typer.echo("degraded:")
        for d in result.degraded:
            typer.echo(f"  - {d.stage}: {d.what}: {d.reason} -> {d.fallback}")
    caption = f"first run {first_ms:.0f} ms (cold caches)" if first_ms is not None else None
    t = Table(title="stage timings (ms)", caption=caption)
    t.add_column("stage")
    t.add_column("ms", justify="right")
    for k in ("understand", "search", "traverse", "precedent", "search_and_traverse", "rounds", "assemble", "record",
              "total"):
        if k in result.timings_ms:
            t.add_row(k, f"{result.timings_ms[k]:.1f}")
    Console().print(t)


@app.command()
@handle_errors
def demo(
    pack: Path = typer.Argument(..., help="Domain pack whose demo scenario to run (e.g. the examples/ folders)."),
    store: Optional[str] = GraphOpt,
    vectors: Optional[str] = VectorsOpt,
    as_json: bool = typer.Option(False, "--json", help="Print the full result as JSON."),
) -> None:
    """Run a pack's demo scenario (the first tagged `demo`) end to end on the embedded store.

    Loads the pack (graph, metagraph, policy corpus) into the store if it is absent, then prints
    the context block and a stage-timing table.
    """
    import time

    from hopweave.engine.replay import check, run_scenario
    from hopweave.models.scenario import load_scenario
    from hopweave.stores.uri import default_graph_uri

    example = pack
    target = store if store is not None else default_graph_uri()
    if _needs_load(target, example):
        from hopweave.pack.loader import load_pack

        t = time.perf_counter()
        typer.echo(f"loading the example pack {example} into {target} ...", err=True)
        load_pack(example, target, vectors=vectors)
        typer.echo(f"loaded in {time.perf_counter() - t:.1f} s", err=True)
    from hopweave.engine.replay import REPLAY_CONFIG

    sc = load_scenario(_demo_scenario(example))
    # the replay budgets (as `hopweave replay`): the demo shows the scenario's answer and checks
    # it twice for identical bytes, which a busy machine's wall-clock cuts must not decide
    engine = _open_engine(target, vectors, **REPLAY_CONFIG.__dict__)
    try:
        warm = engine.warmup()
        typer.echo(f"models loaded in {sum(warm.values()) / 1000:.1f} s (once per process)", err=True)
        first = run_scenario(engine, sc)
        result = run_scenario(engine, sc)  # the same case again: warm caches, identical bytes
    finally:
        engine.close()
    if result.context.text != first.context.text:  # pragma: no cover - determinism guard
        typer.echo("the same case gave two different contexts: "
                   f"{[d.what for d in first.degraded]} vs {[d.what for d in result.degraded]} degraded", err=True)
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
    store: Optional[str] = GraphOpt,
    vectors: Optional[str] = VectorsOpt,
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
    engine = _open_engine(store, vectors)
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
    paths: Optional[list[Path]] = typer.Argument(None, help="Scenario files or folders."),
    store: Optional[str] = GraphOpt,
    vectors: Optional[str] = VectorsOpt,
    twice: bool = typer.Option(False, "--twice", help="Replay each scenario twice and require identical bytes."),
    no_record: bool = typer.Option(False, "--no-record", help="Do not write DecisionTraces."),
    as_json: bool = typer.Option(False, "--json", help="Print the outcomes as JSON."),
    as_recorded: Optional[str] = typer.Option(
        None, "--as-recorded", help="Rebuild trace T's context from what it pinned and check its hash."),
    as_of_now: Optional[str] = typer.Option(
        None, "--as-of-now", help="Re-run trace T's request on today's store, at --as-of (default: now)."),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="With --as-of-now: the as_of to run at."),
    tenant: Optional[str] = typer.Option(None, "--tenant", help="Tenant of the trace (or $HOPWEAVE_TENANT)."),
    budget_ms: Optional[int] = typer.Option(
        None, "--budget-ms", help="Replay scenarios at this wall-clock budget with served timings (default: the "
                                  "audit budgets, 60 s and pattern budgets x100); a scenario's options.budget_ms wins."),
) -> None:
    """Re-run scenarios at their recorded as_of and check their expectations (exit 1 on failure);
    or, for one recorded trace, rebuild what the agent saw (--as-recorded) or re-run it on
    today's store (--as-of-now), exit 1 when the context differs from the recording."""
    if as_recorded or as_of_now:
        if budget_ms is not None:
            raise InputError("--budget-ms replays scenarios; --as-recorded / --as-of-now take none")
        if paths or (as_recorded and as_of_now):
            raise InputError("give scenario paths, or one of --as-recorded TRACE / --as-of-now TRACE")
        _replay_trace_cmd(store, vectors, _tenant(tenant), as_recorded, as_of_now, as_of, no_record, as_json)
        return
    if not paths:
        raise InputError("give scenario files or folders (or --as-recorded / --as-of-now TRACE)")
    _replay_scenarios(paths, store, vectors, twice, no_record, as_json, budget_ms)


def _replay_trace_cmd(store: Optional[str], vectors: Optional[str], tenant: str, recorded: Optional[str], now: Optional[str],
                      as_of: Optional[str], no_record: bool, as_json: bool) -> None:
    from datetime import datetime, timezone

    from hopweave.engine.replay import REPLAY_CONFIG, as_recorded, replay_trace

    engine = _open_engine(store, vectors, **REPLAY_CONFIG.__dict__)
    try:
        if recorded:
            rebuilt = as_recorded(engine, tenant, recorded)
            emit_json(rebuilt.model_dump(mode="json")) if as_json else typer.echo(rebuilt.render())
            identical = rebuilt.identical
        else:
            at = as_of or datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0).isoformat()
            result, d = replay_trace(engine, tenant, str(now), record=not no_record, as_of=at)
            if as_json:
                emit_json({"trace_id": result.trace_id, "as_of": result.as_of.isoformat(),
                           "diff": d.model_dump(mode="json"), "context": result.context.text})
            else:
                typer.echo(f"replayed {now} as of {result.as_of.isoformat()} on today's store -> {result.trace_id}")
                typer.echo(d.render())
            identical = d.same_context
    finally:
        engine.close()
    if not identical:
        raise typer.Exit(code=1)


def _replay_scenarios(paths: list[Path], store: Optional[str], vectors: Optional[str], twice: bool, no_record: bool,
                      as_json: bool, budget_ms: Optional[int] = None) -> None:
    from hopweave.engine.replay import REPLAY_CONFIG, budget_config, replay as run

    if budget_ms is not None:
        budget_config(budget_ms)  # a bad --budget-ms is refused before the store opens
    engine = _open_engine(store, vectors, **REPLAY_CONFIG.__dict__)
    try:
        outcomes = run(engine, paths, record=not no_record, budget_ms=budget_ms)
        if twice:
            again = run(engine, paths, record=False, budget_ms=budget_ms)
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
                   + (f" at --budget-ms {budget_ms}" if budget_ms is not None else "")
                   + (" (each replayed twice, byte-identical)" if twice and not failed else ""))
        if not no_record and outcomes:
            typer.echo("what a run saw, rebuilt from its trace: hopweave replay --as-recorded TRACE --tenant TENANT"
                       " (the scenario session's tenant_id)")
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
    store: Optional[str] = GraphOpt,
    pii: bool = typer.Option(False, "--pii", help="Show the utterance, the part headers' spans and the PII "
                                              "properties of what the trace saw (names, emails...)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """What trace T saw: plan, patterns and versions, chunks, facts, precedent, context."""
    from hopweave.engine import record as trace_record

    with _open_graph(store) as graph:
        t = trace_record.load(graph, _tenant(tenant), trace_id)
        if not pii:
            t = t.redacted(trace_record.trace_pii_values(graph, _tenant(tenant), t.fact_ids, t.customer_id))
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
    store: Optional[str] = GraphOpt,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Exactly what changed between two recorded retrievals (plan, what was seen, context)."""
    from hopweave.engine import record as trace_record

    t = _tenant(tenant)
    with _open_graph(store) as graph:
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
    store: Optional[str] = GraphOpt,
    vectors: Optional[str] = VectorsOpt,
    no_record: bool = typer.Option(False, "--no-record", help="Do not write the new trace."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Re-run a recorded retrieval on the store as it is now and show what changed (exit 1 if
    the context differs)."""
    from hopweave.engine.replay import REPLAY_CONFIG, replay_trace

    engine = _open_engine(store, vectors, **REPLAY_CONFIG.__dict__)
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
    store: Optional[str] = GraphOpt,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Which recorded retrievals used pattern X (through USED_PATTERN edges)."""
    from hopweave.engine import record as trace_record

    with _open_graph(store) as graph:
        traces = trace_record.traces_using(graph, _tenant(tenant), pattern, version)
    if as_json:
        emit_json([{"trace_id": x.trace_id, "as_of": x.as_of, "goal": x.goal,
                    "pattern_versions": [p for p in x.patterns if p.get("name") == pattern]} for x in traces])
        return
    for x in traces:
        v = next((p.get("version") for p in x.patterns if p.get("name") == pattern), None)
        typer.echo(f"{x.trace_id}  as_of={x.as_of}  goal={x.goal}  {pattern}@{v}")
    typer.echo(f"{len(traces)} trace(s) used {pattern}" + (f"@{version}" if version else ""))


def _register_eval_scenarios() -> None:
    """``hopweave eval scenarios PACK``: registered on the ``eval`` group (search_cmds)."""
    from hopweave.cli.search_cmds import eval_app

    @eval_app.command("scenarios")
    @handle_errors
    def eval_scenarios(
        pack: Path = typer.Argument(..., help="A pack folder (its scenarios/) or a folder of scenarios."),
        store: Optional[str] = GraphOpt,
        vectors: Optional[str] = VectorsOpt,
        as_json: bool = typer.Option(False, "--json", help="Print the full report as JSON."),
        rerank: Optional[str] = typer.Option(None, "--rerank", help="Rerank every goal (bi_encoder, "
                                             "cross_encoder, none); default: each goal's own setting (off)."),
    ) -> None:
        """Goal accuracy, required-fact / required-chunk recall, forbidden-chunk rate, tokens,
        latency and rounds per goal and per pattern, multi-round against single pass."""
        from hopweave.engine.replay import REPLAY_CONFIG
        from hopweave.engine.scenario_eval import METRICS, evaluate

        folder = pack / "scenarios" if (pack / "scenarios").is_dir() else pack
        engine = _open_engine(store, vectors, **REPLAY_CONFIG.__dict__)
        engine.rerank = rerank
        try:
            report = evaluate(engine, [folder])
        finally:
            engine.close()
        if as_json:
            emit_json(report)
            return
        for mode in ("single_pass", "multi_round"):
            typer.echo(f"\n{mode}")
            for name, agg in [("overall", report[mode]["overall"]), *report[mode]["per_goal"].items()]:
                cells = "  ".join(f"{m}={agg[m]}" for m in METRICS)
                typer.echo(f"  {name:24s} n={agg['scenarios']:<3d} {cells}")
        typer.echo("\none-round scenarios (latency must not grow)")
        for mode, agg in report["one_round_scenarios"].items():
            typer.echo(f"  {mode:24s} n={agg['scenarios']:<3d} latency_ms={agg['latency_ms']} tokens={agg['tokens']}")


_register_eval_scenarios()
