"""End-to-end evaluation of a pack's scenarios, per goal and per pattern, single pass against
multi-round: ``hopweave eval scenarios PACK --json``.

Per scenario: goal accuracy (the expected goal, or the expected intents of a multi-intent
request), required-fact recall (``expect.facts`` found in the context), required-chunk recall
(``expect.chunks`` cited in the context), forbidden-chunk rate (cited chunks that are
``forbidden_chunks`` or match ``forbidden_metadata``, over all cited chunks), context tokens,
latency and rounds. Aggregated overall, per goal and per pattern (the scenarios whose facts a
pattern fed), for two modes: ``multi_round`` (the goals' escalation policies and intent
splitting) and ``single_pass`` (both off), so a pattern or policy edit shows its effect in
numbers. Deterministic apart from latency.
"""

from __future__ import annotations

from pathlib import Path
from statistics import mean
from typing import Any, Iterable

from hopweave.engine.engine import Engine
from hopweave.engine.replay import chunk_matches, run_scenario, scenario_paths
from hopweave.engine.result import ChunkItem, RetrievalResult
from hopweave.models.scenario import Scenario, load_scenario

METRICS = ("goal_accuracy", "fact_recall", "chunk_recall", "forbidden_rate", "tokens", "latency_ms", "rounds")


def _forbidden(sc: Scenario, c: ChunkItem) -> bool:
    e = sc.expect
    if any(chunk_matches(c, ref) for ref in e.forbidden_chunks):
        return True
    fields = {**c.metadata, "version": c.version}
    return any(fields.get(k) in vals for k, vals in e.forbidden_metadata.items())


def score(sc: Scenario, r: RetrievalResult) -> dict[str, Any]:
    """One scenario's metrics (None where the scenario states no expectation)."""
    e = sc.expect
    cited = [c for c in r.chunks if c.in_context]
    if e.intents:
        goal_ok: float | None = float([p.goal for p in r.parts] == e.intents)
    else:
        goal_ok = float(r.goal == e.goal) if "goal" in e.model_fields_set else None
    return {
        "scenario": sc.name, "goal": r.goal, "intents": [p.goal for p in r.parts],
        "patterns": sorted({f.pattern for f in r.facts}),
        "goal_accuracy": goal_ok,
        "fact_recall": mean(float(f in r.context.text) for f in e.facts) if e.facts else None,
        "chunk_recall": mean(float(any(chunk_matches(c, ref) for c in cited)) for ref in e.chunks) if e.chunks else None,
        "forbidden_rate": (sum(_forbidden(sc, c) for c in cited) / len(cited)) if cited else 0.0,
        "tokens": r.context.tokens, "latency_ms": r.timings_ms.get("total", 0.0), "rounds": len(r.rounds),
    }


def _aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"scenarios": len(rows)}
    for m in METRICS:
        vals = [r[m] for r in rows if r[m] is not None]
        out[m] = round(mean(vals), 4) if vals else None
    return out


def _groups(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_goal: dict[str, list[dict[str, Any]]] = {}
    by_pattern: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        for g in (r["intents"] or [r["goal"]]):
            by_goal.setdefault(g or "(no goal)", []).append(r)
        for p in r["patterns"]:
            by_pattern.setdefault(p, []).append(r)
    return {"overall": _aggregate(rows),
            "per_goal": {g: _aggregate(v) for g, v in sorted(by_goal.items())},
            "per_pattern": {p: _aggregate(v) for p, v in sorted(by_pattern.items())}}


def evaluate(engine: "Engine", paths: Iterable[str | Path]) -> dict[str, Any]:
    """Both modes over the scenarios under ``paths`` (after one warm-up pass). Returns {mode:
    {overall, per_goal, per_pattern, scenarios}} for ``single_pass`` and ``multi_round``, and
    ``one_round_scenarios``: both modes over the scenarios that take one round and carry one
    intent (their latency must not grow)."""
    scenarios = [load_scenario(p) for p in scenario_paths(paths)]
    for sc in scenarios:  # warm every cache once, so neither mode pays first-call costs
        run_scenario(engine, sc, record=False)
    out: dict[str, Any] = {}
    single = engine.sibling(index=engine.index, understander=None)  # its own hooks: the shared engine is untouched
    single.single_pass, single.rerank, single.query_writer = True, engine.rerank, engine.query_writer
    try:
        for mode, eng in (("single_pass", single), ("multi_round", engine)):
            rows = [score(sc, run_scenario(eng, sc, record=False)) for sc in scenarios]
            out[mode] = {**_groups(rows), "scenarios": rows}
    finally:
        single.close_pools()
    simple = {r["scenario"] for r in out["multi_round"]["scenarios"] if r["rounds"] == 1 and not r["intents"]}
    out["one_round_scenarios"] = {m: _aggregate([r for r in out[m]["scenarios"] if r["scenario"] in simple])
                                  for m in ("single_pass", "multi_round")}
    return out


__all__ = ["METRICS", "evaluate", "score"]
