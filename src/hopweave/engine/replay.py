"""Scenario replay for audit.

A scenario file (YAML) pins one case: the utterance, the authenticated session, the ``as_of``
and what the retrieval must (and must not) produce::

    name: ana_roaming_dispute
    utterance: I was charged $84 for roaming in Mexico, I want to dispute it.
    session_file: ../sessions/ana.json      # or session: {tenant_id: ..., customer_id: ...}
    as_of: "2026-05-12T10:00:00"
    options: {token_budget: 2000, pattern_overrides: {usage_history: {max_visited: 3}},
              faults: [search_unavailable]}
    expect:
      goal: RoamingChargeDispute  # null = no goal (clarify); omit to not check
      clarify: false
      sections: [Subscriber, Charge, Applicable policy, Precedent]
      facts: ["0 roaming credits used in 2026"]          # substrings of the context
      absent: ["Unlimited Basic customers"]              # must not appear
      chunks: [roaming-credit-plus-v3.pdf#2.1]           # chunk ids or document#section
      forbidden_chunks: [roaming-credit-plus-v2.pdf, roaming-credit-basic-v3.pdf#2.1]
      forbidden_metadata: {version: [superseded], plan: [Unlimited_Basic]}  # no context chunk may carry these
      documents: [roaming-credit-plus-v3.pdf]
      revisions: {roaming-credit-plus: v3}  # the context cites this document at this revision only
      found_by: [semantic, lexical]       # each `chunks` entry was ranked by these channels
      in_force: true                      # every retrieved chunk was in force at as_of
      precedent: [PREC_20001, PREC_20002]
      degraded: [search]            # stages that must report a degradation
      entities: {Plan: Unlimited_Plus}

:func:`replay` runs scenarios at their recorded ``as_of`` with deterministic budgets (a busy
machine must not truncate a walk by time) and checks each expectation; a failure names the
expectation and what was found instead. Same store + same as_of -> byte-identical context.
:func:`compare` runs scenarios before and after a change to the store (``hopweave review-pattern
--approve ID --scenarios DIR``) and diffs each pair of runs.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Sequence, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from hopweave.engine import record as trace_record
from hopweave.engine.engine import Engine, EngineConfig
from hopweave.engine.result import ChunkItem, RetrievalResult
from hopweave.errors import InputError, StoreUnavailableError
from hopweave.models.common import Session, parse_session
from hopweave.models.filters import FilterTree
from hopweave.models.ranking import RankingProfile, SearchResult
from hopweave.models.scenario import UNSET as _UNSET, Expect, Scenario, load_scenario
from hopweave.search.embedder import EmbeddingSpace
from hopweave.search.index_base import CollectionInfo
from hopweave.understand.models import Understanding

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.pins import AsRecorded

#: Replays are audits: wall-clock budgets are relaxed so timing never changes what is seen.
REPLAY_CONFIG = EngineConfig(budget_ms=60_000, pattern_budget_scale=100.0, round_latency_scale=100.0)


def budget_config(budget_ms: int) -> EngineConfig:
    """The budgets of a replay at ``budget_ms`` (``replay --budget-ms``, a scenario's
    ``options.budget_ms``): a request budget of ``budget_ms`` and every other budget as served
    (pattern budgets and round latencies unscaled), so the replay measures what a request at
    that budget sees. Raises InputError when ``budget_ms`` < 1."""
    if isinstance(budget_ms, bool) or not isinstance(budget_ms, int) or budget_ms < 1:
        raise InputError(f"a replay budget must be an int >= 1 ms, not {budget_ms!r}")
    return dataclasses.replace(EngineConfig(), budget_ms=budget_ms)


def scenario_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Expand files and folders (``*.yaml`` inside, sorted) into scenario files."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(q for q in p.glob("*.y*ml") if q.is_file()))
        elif p.is_file():
            out.append(p)
        else:
            raise InputError(f"no scenario file or folder at {p}")
    return out


class ScenarioOutcome(BaseModel):
    """One scenario's run: its verdict, the failed expectations, and what the run produced."""

    model_config = ConfigDict(frozen=True)

    scenario: str
    path: str
    passed: bool
    failures: tuple[str, ...] = ()
    trace_id: str = ""
    goal: Optional[str] = None
    confidence: float = 0.0
    context_hash: str = ""
    tokens: int = 0
    degraded: tuple[str, ...] = ()
    timings_ms: dict[str, float] = Field(default_factory=dict)


class _DownIndex:
    """Fault injection: a vector index whose server is down (a DocumentIndex)."""

    def search(self, tenant_id: str, query: str, profile: RankingProfile,
               where: FilterTree | Mapping[str, object] | None = None, limit: int = 10,
               query_vector: np.ndarray | None = None, query_space: EmbeddingSpace | None = None,
               include_superseded: bool = False, scope: Mapping[str, Sequence[object]] | None = None) -> SearchResult:
        raise StoreUnavailableError("the vector index is unreachable (scenario fault: search_unavailable)")

    def fetch(self, tenant_id: str, where: FilterTree | Mapping[str, object] | None = None,
              current_only: bool = False, limit: int | None = None) -> list[dict[str, object]]:
        raise StoreUnavailableError("the vector index is unreachable (scenario fault: search_unavailable)")

    def require_info(self) -> CollectionInfo:
        raise StoreUnavailableError("the vector index is unreachable (scenario fault: search_unavailable)")

    def close(self) -> None:
        pass


class _DownUnderstander:
    """Fault injection: an understanding stage that is unavailable (an UnderstandingStage)."""

    def understand(self, utterance: str, session: Session, as_of: datetime | str) -> Understanding:
        raise StoreUnavailableError("the understanding stage is unavailable (scenario fault)")

    def warmup(self) -> None:
        pass


def _engine_for(engine: Engine, faults: Sequence[str], budget_ms: int | None = None) -> Engine:
    if not faults and budget_ms is None:
        return engine
    return engine.sibling(index=_DownIndex() if "search_unavailable" in faults else engine.index,
                          understander=_DownUnderstander() if "understand_unavailable" in faults else None,
                          config=budget_config(budget_ms) if budget_ms is not None else None)


def run_scenario(engine: Engine, sc: Scenario, *, record: bool = True, budget_ms: int | None = None) -> RetrievalResult:
    """Run one scenario at its as_of (faults injected as declared). Its ``options.budget_ms``,
    else ``budget_ms``, replays it at that budget with served timings (:func:`budget_config`);
    with neither, at the engine's budgets (:data:`REPLAY_CONFIG` for ``hopweave replay``)."""
    budget = sc.options.budget_ms if sc.options.budget_ms is not None else budget_ms
    eng = _engine_for(engine, sc.options.faults, budget)
    try:
        return eng.retrieve(
            sc.utterance,
            session=sc.resolved_session(),
            as_of=sc.as_of,
            budget_ms=budget,
            profile=sc.options.profile,
            token_budget=sc.options.token_budget,
            record=record,
            pattern_overrides=sc.options.pattern_overrides or None,
        )
    finally:
        if eng is not engine:
            eng.close_pools()


def chunk_matches(chunk: ChunkItem, ref: str) -> bool:
    """A chunk reference is a chunk id, ``<document>#<section>`` (``roaming-credit-plus-v3.pdf#2.1``) or
    ``<document>`` alone (any section of that file)."""
    if ref == chunk.chunk_id:
        return True
    doc, _, section = ref.partition("#")
    return doc == chunk.document and (not section or section == chunk.section)


def check(sc: Scenario, r: RetrievalResult) -> list[str]:
    """Failed expectations of ``sc`` on result ``r`` (empty = pass)."""
    e = sc.expect
    f: list[str] = []
    text = r.context.text
    if e.goal is not _UNSET and r.goal != e.goal:
        f.append(f"goal: expected {e.goal!r}, got {r.goal!r} (confidence {r.confidence:.2f})")
    if e.clarify is not None and r.clarify != e.clarify:
        f.append(f"clarify: expected {e.clarify}, got {r.clarify}")
    if e.min_confidence is not None and r.confidence < e.min_confidence:
        f.append(f"confidence {r.confidence:.3f} < {e.min_confidence}")
    for s in e.sections:
        if s not in r.context.sections:
            f.append(f"section {s!r} missing (sections: {list(r.context.sections)})")
    for s in e.facts:
        if s not in text:
            f.append(f"fact {s!r} not in the context")
    for s in e.absent:
        if s in text:
            f.append(f"text {s!r} must not be in the context")
    in_ctx = [c for c in r.chunks if c.in_context]
    for ref in e.chunks:
        if not any(chunk_matches(x, ref) for x in in_ctx):
            got = next((x for x in r.chunks if chunk_matches(x, ref)), None)
            why = f"retrieved but left out ({got.omitted_reason})" if got else "not retrieved"
            f.append(f"chunk {ref} not in the context: {why}")
    for ref in e.forbidden_chunks:
        if any(chunk_matches(x, ref) for x in in_ctx):
            f.append(f"forbidden chunk {ref} is in the context")
    for field_, bad in e.forbidden_metadata.items():
        for c in in_ctx:
            v = c.metadata.get(field_)
            vals = v if isinstance(v, list) else [v]
            if any(x in bad for x in vals) and not (isinstance(v, list) and any(x not in bad for x in vals)):
                f.append(f"chunk {c.chunk_id} has forbidden {field_}={v!r}")
    docs = {c.document for c in in_ctx}
    for d in e.documents:
        if d not in docs:
            f.append(f"document {d} not cited (cited: {sorted(docs)})")
    prec_ids = {p.trace_id for p in r.precedent if p.in_context}
    for t in e.precedent:
        if t not in prec_ids:
            f.append(f"precedent {t} not in the context (got {sorted(prec_ids)})")
    for t in e.forbidden_precedent:
        if t in prec_ids:
            f.append(f"precedent {t} must not be in the context")
    stages = {d.stage for d in r.degraded}
    for s in e.degraded:
        if s not in stages and not any(s in f"{d.stage}:{d.what}" for d in r.degraded):
            f.append(f"expected a degradation of {s!r}, got {sorted(stages)}")
    if e.not_degraded and r.degraded:
        f.append("expected no degradation, got " + "; ".join(f"{d.stage}: {d.what}: {d.reason}" for d in r.degraded))
    ents = {x.type: x.value for x in r.entities}
    for k, v in e.entities.items():
        if ents.get(k) != v:
            f.append(f"entity {k}: expected {v!r}, got {ents.get(k)!r}")
    if e.max_tokens is not None and r.context.tokens > e.max_tokens:
        f.append(f"context has {r.context.tokens} tokens > {e.max_tokens}")
    trunc = {p.pattern for p in r.facts if p.truncated}
    for p in e.truncated_patterns:
        if p not in trunc:
            f.append(f"pattern {p} should be truncated (truncated: {sorted(trunc)})")
    return f + _time_checks(e, r, in_ctx) + _check_rounds(e, r)


def _time_checks(e: Expect, r: RetrievalResult, in_ctx: Sequence[ChunkItem]) -> list[str]:
    """The issue-14 expectations: ``revisions``, ``found_by``, ``in_force``."""
    from hopweave.models.filters import matches
    from hopweave.understand.filter_map import InForce, instant

    f: list[str] = []
    for doc_id, rev in e.revisions.items():
        seen = sorted({c.revision for c in in_ctx if c.document_id == doc_id})
        if seen != [rev]:
            f.append(f"document {doc_id}: expected revision {rev} only, the context cites {seen or 'none'}")
    for ref in e.chunks:
        for c in (x for x in r.chunks if chunk_matches(x, ref)):
            got = {ch.channel for ch in c.channels}
            missing = [ch for ch in e.found_by if ch not in got]
            if missing:
                f.append(f"chunk {ref} was not ranked by the {', '.join(missing)} channel (ranked by {sorted(got)})")
    if e.in_force:
        clause = InForce(status="status").clause(instant(r.as_of))
        for c in r.chunks:
            if not matches(clause, c.metadata):
                f.append(f"chunk {c.chunk_id} ({c.revision}) was not in force at {r.as_of}: valid "
                         f"{c.metadata.get('valid_from')} .. {c.metadata.get('valid_until') or 'open'}, "
                         f"status {c.metadata.get('status')}")
    return f


def _check_rounds(e: Expect, r: RetrievalResult) -> list[str]:
    f: list[str] = []
    n = len(r.rounds)
    if e.rounds is not None and n != e.rounds:
        f.append(f"expected {e.rounds} retrieval round(s), got {n}: " + "; ".join(x.action for x in r.rounds))
    if e.min_rounds is not None and n < e.min_rounds:
        f.append(f"expected at least {e.min_rounds} retrieval rounds, got {n}")
    actions = " | ".join(x.action for x in r.rounds[1:])
    f += [f"no later round did {a!r} (rounds: {actions or 'none'})" for a in e.round_actions if a not in actions]
    if e.intents and [p.goal for p in r.parts] != e.intents:
        f.append(f"expected intents {e.intents}, got {[p.goal for p in r.parts]}")
    return f


def replay(engine: Engine, paths: Iterable[str | Path], *, record: bool = True,
           budget_ms: int | None = None) -> list[ScenarioOutcome]:
    """Run and check every scenario under ``paths`` (files or folders); ``budget_ms``: replay
    those without their own ``options.budget_ms`` at that budget (:func:`run_scenario`)."""
    if budget_ms is not None:
        budget_config(budget_ms)  # refuse a bad budget before the first scenario
    out: list[ScenarioOutcome] = []
    for p in scenario_paths(paths):
        sc = load_scenario(p)
        r = run_scenario(engine, sc, record=record, budget_ms=budget_ms)
        fails = check(sc, r)
        out.append(ScenarioOutcome(
            scenario=sc.name, path=str(p), passed=not fails, failures=tuple(fails), trace_id=r.trace_id,
            goal=r.goal, confidence=r.confidence, context_hash=r.context.hash, tokens=r.context.tokens,
            degraded=tuple(f"{d.stage}: {d.what}" for d in r.degraded), timings_ms=r.timings_ms,
        ))
    return out


class ScenarioChange(BaseModel):
    """One scenario run before and after a change to the store (:func:`compare`): each run's
    verdict, failures, context hash and trace id, the :class:`~hopweave.engine.record.TraceDiff`
    from the first to the second (plan, patterns and versions, what was seen, the context) and
    ``rows``: per pattern whose rows differ, the row node ids ``added`` and ``removed``."""

    model_config = ConfigDict(frozen=True)

    scenario: str
    path: str
    before: ScenarioOutcome
    after: ScenarioOutcome
    diff: trace_record.TraceDiff
    rows: dict[str, dict[str, list[str]]] = Field(default_factory=dict)

    @property
    def changed(self) -> bool:
        """Whether the context, the plan or what was seen differ."""
        return not self.diff.same_context or bool(self.diff.changes) or bool(self.rows)

    def render(self) -> str:
        """``name: PASS -> FAIL, context changed`` and, when anything changed, the diff lines."""
        verdict = f"{'PASS' if self.before.passed else 'FAIL'} -> {'PASS' if self.after.passed else 'FAIL'}"
        if not self.changed:
            return f"{self.scenario}: {verdict}, identical context and plan"
        head = f"{self.scenario}: {verdict}, {'same context' if self.diff.same_context else 'context changed'}"
        lines = [head] + [f"    - {f}" for f in self.after.failures if f not in self.before.failures]
        for name, d in self.rows.items():
            lines += [f"    rows {name}: - {i}" for i in d["removed"]] + [f"    rows {name}: + {i}" for i in d["added"]]
        body = self.diff.render().splitlines()[2:]  # without the ---/+++ trace-id header
        return "\n".join(lines + [f"    {x}" for x in body])


def _rows(r: RetrievalResult) -> dict[str, list[str]]:
    return {f.pattern: [x.node_id for x in f.rows] for f in r.facts}


def _row_changes(a: Mapping[str, Sequence[str]], b: Mapping[str, Sequence[str]]) -> dict[str, dict[str, list[str]]]:
    out = {}
    for name in sorted(set(a) | set(b)):
        old, new = list(a.get(name, ())), list(b.get(name, ()))
        if old != new:
            out[name] = {"added": [i for i in new if i not in old], "removed": [i for i in old if i not in new]}
    return out


def _outcome(engine: Engine, sc: Scenario, path: Path, r: RetrievalResult) -> tuple[ScenarioOutcome, "trace_record.RecordedTrace"]:
    fails = check(sc, r)
    out = ScenarioOutcome(scenario=sc.name, path=str(path), passed=not fails, failures=tuple(fails), trace_id=r.trace_id,
                  goal=r.goal, confidence=r.confidence, context_hash=r.context.hash, tokens=r.context.tokens,
                  degraded=tuple(f"{d.stage}: {d.what}" for d in r.degraded))
    session = sc.resolved_session()
    nodes, _ = trace_record.build(r, session, engine.graph, engine.settings_for(session.tenant_id).subject)
    props = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in nodes[0].props.items()}
    return out, trace_record.from_props(r.trace_id, props)


T = TypeVar("T")


def compare(engine: Engine, paths: Iterable[str | Path], change: Callable[[], T]) -> tuple[T, list[ScenarioChange]]:
    """Run every scenario under ``paths`` (not recorded), call ``change()`` (e.g. approve a
    pattern proposal), run them again and diff each run against its first: what the change does
    to the scenarios. Returns (what ``change`` returned, one ScenarioChange per scenario, in
    path order). Raises InputError for a missing scenario path or a bad scenario file before
    anything runs, and what ``change`` raises (the scenarios' second runs do not happen then)."""
    loaded = [(p, load_scenario(p)) for p in scenario_paths(paths)]
    if not loaded:
        raise InputError("no scenario files under the given paths")
    results = [run_scenario(engine, sc, record=False) for _p, sc in loaded]
    first = [_outcome(engine, sc, p, r) for (p, sc), r in zip(loaded, results)]
    got = change()
    out = []
    for (p, sc), (b, bt), br in zip(loaded, first, results):
        ar = run_scenario(engine, sc, record=False)
        a, at = _outcome(engine, sc, p, ar)
        out.append(ScenarioChange(scenario=sc.name, path=str(p), before=b, after=a, diff=trace_record.diff(bt, at),
                                  rows=_row_changes(_rows(br), _rows(ar))))
    return got, out


def as_recorded(engine: Engine, tenant_id: str, trace_id: str) -> "AsRecorded":
    """The context of a recorded retrieval rebuilt from what its trace pinned (chunk texts from
    the index by id and text hash, the rest from the trace) and checked against its hash: it
    does not re-run anything, so later document, pattern or metagraph changes cannot alter it.

    Raises:
        NotFoundError: unknown trace (or another tenant's). InputError: a trace without pins.
    """
    from hopweave.engine.pins import rebuild

    return rebuild(trace_record.load(engine.graph, tenant_id, trace_id), engine.index, engine.graph, tenant_id)


def replay_trace(
    engine: Engine, tenant_id: str, trace_id: str, *, record: bool = True, as_of: Any = None
) -> tuple[RetrievalResult, trace_record.TraceDiff]:
    """Re-run a recorded retrieval (its utterance and session, at its as_of or at ``as_of`` when
    given: ``replay --as-of-now``) on the store as it is now and diff it against the recording.
    Returns (new result, TraceDiff); the diff is empty when nothing changed. Raises
    NotFoundError for an unknown trace (or another tenant's)."""
    old = trace_record.load(engine.graph, tenant_id, trace_id)
    if not old.utterance or not old.as_of:
        raise InputError(f"trace {trace_id} has no utterance/as_of recorded: it cannot be replayed")
    session = parse_session(old.session or {"tenant_id": tenant_id}, f"trace {trace_id}: session")
    r = engine.retrieve(old.utterance, session=session, as_of=as_of if as_of is not None else old.as_of,
                        record=record)
    if record and r.recorded:
        new = trace_record.load(engine.graph, tenant_id, r.trace_id)
    else:  # compare against the result itself without writing it
        nodes, _ = trace_record.build(r, session, engine.graph, engine.settings_for(tenant_id).subject)
        props = nodes[0].props
        new = old.model_copy(update={
            "trace_id": r.trace_id, "as_of": r.as_of.isoformat(), "goal": r.goal, "goal_version": r.goal_version,
            "chunk_ids": props["chunk_ids"],
            "fact_ids": props["fact_ids"], "precedent_ids": props["precedent_ids"],
            "patterns": props["patterns_json"], "context_hash": r.context.hash, "context_text": r.context.text,
            "tokens": r.context.tokens, "store_revision": r.store_revision,
            "metagraph_revision": r.metagraph_revision, "filter": r.filter or {}, "pins": props["pins_json"],
            "context_skeleton": props.get("context_skeleton")})
    return r, trace_record.diff(old, new)
