"""One retrieval, top to bottom: plan -> (search || traverse, then precedent) -> procedure ->
rounds -> rerank -> assemble -> result -> record.

:meth:`Pipeline.run` is the whole retrieval of one admitted request; each stage is a method
returning a named frozen dataclass (or the typed model it produces), and each reads the engine's
parts through :class:`~hopweave.engine.deps.StageDeps`. The document search and the graph
branch run concurrently on the engine's stage pool.

Every stage runs through :meth:`StageDeps.run_stage <hopweave.engine.deps.StageDeps.run_stage>`,
which owns its timeout, its fallback and the typing of its errors (a TenantError always
propagates; anything else becomes a :class:`~hopweave.engine.result.Degradation`); nothing is
dropped silently:

============  ==========================================  =========================================
stage         failure / threshold                         fallback (listed in ``result.degraded``)
============  ==========================================  =========================================
understand    error, timeout, abstained or confidence      no goal: generic document search, no
              below ``min_confidence``                     patterns, ``clarify = True``
search        store down, error, timeout, a skipped        graph-only context (or lexical-only when
              channel                                      only the semantic channel is missing)
traverse      pattern over budget / max_visited / error,   the rows found so far, marked truncated
              stage timeout                                in the facts and in the context block
precedent     error                                        no precedent section lines
record        write failure or not done within the         result returned with ``recorded=False``
              request's remaining budget
engine        no request slot in time (admission)          a lower rung of the degradation ladder
                                                           (:mod:`~hopweave.engine.ladder`): the
                                                           ``facts_and_lexical`` rung in a ladder
                                                           slot, else the ``nothing`` rung
============  ==========================================  =========================================

The rung (``result.rung``) comes with the request's grant and decides what runs: same input and
same rung, the same output.

Inputs are checked once, before the pipeline (:func:`hopweave.engine.boundary.check_request`; an
omitted ``as_of`` is now, flagged ``as_of_defaulted``). Domain specifics (subject label,
identifiers, authoritative attributes...) come from the
:class:`~hopweave.models.domain.DomainRegistry` per tenant.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping

from hopweave.engine import record as trace_record
from hopweave.engine.admission import NO_SLOT_FALLBACK, Grant
from hopweave.engine.agentic import Rounds, rounds_for
from hopweave.engine.assemble import Assembly, assemble
from hopweave.engine.boundary import Request, check_session_attributes
from hopweave.engine.branches import (
    GraphOutcome,
    SearchOutcome,
    graph_branch,
    pattern_degradations,
    search_documents,
)
from hopweave.engine.config import Run, make_result
from hopweave.engine.deps import StageDeps
from hopweave.engine.ladder import LADDER, RungSpec
from hopweave.engine.plan import NEUTRAL_NOTE, Plan, agent_notes, build_plan, neutral_filter
from hopweave.engine.procedure import Case, case_for
from hopweave.engine.query_vectors import bound
from hopweave.engine.rerank_stage import rerank_chunks
from hopweave.engine.result import ChunkItem, Degradation, PrecedentItem, RetrievalResult
from hopweave.engine.stages import MIN_STAGE_S
from hopweave.errors import HopweaveError, InputError, PatternValidationError
from hopweave.models.common import Bindings, PatternResult
from hopweave.models.filters import FilterTree, IsEmpty
from hopweave.models.metagraph import GoalType, TraversalPattern
from hopweave.models.ranking import RankingProfile
from hopweave.understand.models import Understanding

#: What a request without a usable understanding falls back to.
UNDERSTAND_FALLBACK = NO_SLOT_FALLBACK


@dataclass(frozen=True)
class Found:
    """What the concurrent branches found: the document search's chunks and the profile that
    ranked them (None: no search ran), the patterns' results and the ranked precedent."""

    chunks: tuple[ChunkItem, ...]
    profile: RankingProfile | None
    facts: tuple[PatternResult, ...]
    precedent: tuple[PrecedentItem, ...]


#: The branches of a request that found nothing.
NOTHING_FOUND = Found((), None, (), ())


class Pipeline:
    """The stages of one retrieval over one engine's parts.

    Args:
        deps: the parts the stages read (a snapshot taken when the request starts).
    """

    def __init__(self, deps: StageDeps) -> None:
        self.deps = deps

    # ---- the whole retrieval ---------------------------------------------------------------
    def retrieve(self, req: Request, t0: float | None = None, shed: bool = False,
                 grant: Grant | None = None) -> RetrievalResult:
        """One run of the pipeline for a checked request whose budget runs from ``t0`` (a
        ``time.perf_counter()`` instant; None: now). A cold engine warms up first, outside the
        budget.

        Args:
            req: the checked request (:func:`~hopweave.engine.boundary.check_request`).
            t0: when its budget started.
            shed: refuse (OverloadedError) rather than answer degraded without a slot.
            grant: the request slot the caller took for this run
                (:data:`~hopweave.engine.admission.REFUSED`: it got none in time); None: the
                run takes its own.

        Returns:
            The result; a failing stage is a degradation in it.

        Raises:
            TenantError: no domain serves the session's tenant, or a session attribute is not
                the domain's.
            InputError: a pattern override fails the pattern gates.
            OverloadedError: with ``shed``, no request slot in time.
        """
        deps = self.deps
        settings = deps.settings_for(req.session.tenant_id)
        check_session_attributes(req.session, settings)
        warm_ms = deps.warm_up()
        start = time.perf_counter() if t0 is None or warm_ms is not None else t0  # warm-up is outside budgets
        return self.run(Run(req, settings, start, req.budget_ms or deps.config.budget_ms, [], {}), grant=grant,
                        shed=shed, warm_ms=warm_ms)

    def run(self, run: Run, *, grant: Grant | None = None, shed: bool = False,
            warm_ms: float | None = None) -> RetrievalResult:
        """The whole retrieval of one request in flight: the stages that need a request slot
        (plan, search || traverse with precedent) inside it, then the procedure, the later
        rounds, the rerank, the assembly, the result and its trace.

        The grant's rung (:mod:`~hopweave.engine.ladder`) decides what runs: on
        ``facts_and_lexical`` the document search ranks with its lexical channel alone and no
        later round or rerank runs; on ``nothing`` no stage starts. The rung's note heads the
        context block's ``[Note]`` section.

        Args:
            run: the request in flight (its budget, clock and degradations).
            grant: as :meth:`retrieve`.
            shed: as :meth:`retrieve`.
            warm_ms: the warm-up this request paid for, reported in its timings.

        Returns:
            The result.

        Raises:
            InputError, OverloadedError: as :meth:`retrieve`.
        """
        admission = self.deps.admission
        with admission.in_flight():
            if grant is None:
                grant = admission.admit(run, shed)
            elif not grant.granted:
                grant = admission.step_down(run, shed)
            spec = LADDER[grant.rung]
            run.degraded.extend(admission.degradations(spec.name))  # what a lower rung leaves out
            try:
                plan = self.plan(run)
                found = self.search_and_traverse(run, plan, lexical_only=not spec.semantic)
            finally:
                admission.release(grant)
            t_finish = time.perf_counter()
            case = self.procedure(run, plan, found.facts)
            rounds = self.rounds(run, plan, found.chunks, case.facts, spec)
            chunks = self.rerank(run, plan, rounds.chunks) if spec.rerank else rounds.chunks
            note = spec.note()
            assembly = self.assemble(run, plan, case, chunks, found.precedent, rounds.notes,
                                     (note,) if note else ())
            run.timings["assemble"] = _ms(t_finish)  # every stage after the slot up to here
            result = make_result(run, plan, found.profile, list(case.facts), assembly, self.deps.store_revision())
            if spec.name != "full":  # the trace records the rung too
                result = result.model_copy(update={"rung": spec.name})
            recorded = self.record_if_asked(run, result) if spec.record else False
            run.timings["total"] = _ms(run.t_start)
            admission.finished(_ms(t_finish))
            return self.finish(run, plan, result, rounds, recorded, warm_ms)

    # ---- the stages ------------------------------------------------------------------------
    def plan(self, run: Run) -> Plan:
        """Understand (within its share of the budget) and plan.

        Returns:
            The plan (the no-goal plan, flagged, when the understanding failed or abstained).

        Raises:
            InputError: a pattern override fails the pattern gates.
        """
        deps, req = self.deps, run.req
        t = time.perf_counter()
        stage = deps.understander_for(run.settings)
        u: Understanding | None = deps.run_stage(
            run.degraded, "understand", bound(run.vectors, lambda: stage.understand(req.utterance, req.session,
                                                                                     req.as_of), run.deadline),
            default=None, what="goal and entities", fallback=UNDERSTAND_FALLBACK,
            timeout=min(run.budget_ms * deps.config.understand_share / 1000.0, run.remaining(deps.reserve_ms(run))))
        goals = deps.goals()
        plan, why = build_plan(u, dict(goals.goals), dict(goals.patterns), utterance=req.utterance,
                               min_confidence=deps.config.min_confidence, profile=req.profile,
                               default_profile=deps.config.default_profile)
        if u is None:
            plan.filter, plan.documents_at = self._neutral_filter(run)
            plan.notes = (*plan.notes, NEUTRAL_NOTE)
        if why:
            run.degraded.append(Degradation(stage="understand", what="goal", reason=why,
                                            fallback=UNDERSTAND_FALLBACK))
        plan.patterns = [self._override(p, req.pattern_overrides.get(p.name), plan.goal) for p in plan.patterns]
        if deps.config.pattern_budget_scale != 1.0:
            scale = deps.config.pattern_budget_scale
            plan.patterns = [p.model_copy(update={"budget_ms": max(1, int(p.budget_ms * scale))}) for p in plan.patterns]
        run.timings["understand"] = _ms(t)
        return plan

    def search_and_traverse(self, run: Run, plan: Plan, lexical_only: bool = False) -> Found:
        """The document search and the graph branch (patterns, then precedent ranking over their
        rows), concurrently on the stage pool, each within the budget; ``lexical_only``: the
        search ranks with its lexical channel alone, over the same filter.

        Returns:
            What they found (nothing, both flagged, when the budget was spent before they
            could start).
        """
        deps = self.deps
        t = time.perf_counter()
        tenant = run.req.session.tenant_id
        if run.remaining(deps.reserve_ms(run)) < MIN_STAGE_S:  # out of time: nothing is started
            return self._out_of_time(run, plan, t)
        f_search = None if deps.index is None else deps.pool.submit(bound(run.vectors, functools.partial(
            search_documents, deps.index, deps.embedder, tenant, plan, deps.config.search_limit, run.req.utterance,
            lexical_only), run.deadline))
        bindings = Bindings(session=run.req.session, as_of=run.req.as_of,
                            goal=plan.goal.name if plan.goal else None, entities=dict(plan.entity_values))
        f_graph = None if not plan.patterns else deps.pool.submit(bound(run.vectors, functools.partial(
            graph_branch, deps.graph, deps.embedder, deps.trace_vectors, plan, bindings, run.req.utterance,
            deps.config.max_workers), run.deadline))
        chunks: tuple[ChunkItem, ...] = ()
        prof: RankingProfile | None = None
        if f_search is None:
            run.degraded.append(Degradation(stage="search", what="policy chunks", reason="no vector index is configured",
                                            fallback="graph-only context"))
        else:
            found: SearchOutcome | None = deps.run_stage(
                run.degraded, "search", f_search, default=None, what="policy chunks", fallback="graph-only context",
                timeout=run.remaining(deps.reserve_ms(run)))
            if found is not None:
                chunks, prof, run.timings["search"] = found.chunks, found.profile, found.elapsed_ms
                run.degraded.extend(Degradation(stage="search", what=w, reason=r,
                                                fallback="the other channel ranks alone") for w, r in found.skipped)
            else:
                run.timings["search"] = _ms(t)
        facts: tuple[PatternResult, ...] = ()
        prec_items: tuple[PrecedentItem, ...] = ()
        if f_graph is not None:
            branch: GraphOutcome | None = deps.run_stage(
                run.degraded, "traverse", f_graph, default=None, what="all patterns",
                fallback="context without graph facts", timeout=run.remaining(deps.reserve_ms(run)))
            if branch is not None:
                facts, prec_items, run.timings["precedent"] = branch.facts, branch.precedent, branch.precedent_ms
                run.degraded.extend(branch.degraded)
            run.timings["traverse"] = round(max((f.elapsed_ms for f in facts), default=0.0), 3)
        run.degraded.extend(pattern_degradations(list(facts)))
        run.timings["search_and_traverse"] = _ms(t)
        return Found(chunks, prof, facts, prec_items)

    def procedure(self, run: Run, plan: Plan, facts: tuple[PatternResult, ...]) -> Case:
        """The goal's procedure applied to the case (:func:`~hopweave.engine.procedure.case_for`)."""
        return case_for(self.deps, run, plan, list(facts))

    def rounds(self, run: Run, plan: Plan, chunks: tuple[ChunkItem, ...],
               facts: tuple[PatternResult, ...], spec: RungSpec = LADDER["full"]) -> Rounds:
        """Later retrieval rounds under the goal's escalation policy (a single-pass goal, or a
        rung without later rounds: its first pass as the only round, at no cost;
        :func:`~hopweave.engine.agentic.rounds_for`)."""
        deps = self.deps if spec.later_rounds else dataclasses.replace(self.deps, single_pass=True)
        return rounds_for(deps, run, plan, chunks, facts)

    def rerank(self, run: Run, plan: Plan, chunks: tuple[ChunkItem, ...]) -> tuple[ChunkItem, ...]:
        """``chunks`` reranked when the engine or the goal asks for it
        (:func:`~hopweave.engine.rerank_stage.rerank_chunks`).

        Raises:
            ConfigError: an unknown reranker name.
        """
        return rerank_chunks(self.deps, run, plan, chunks)

    def assemble(self, run: Run, plan: Plan, case: Case, chunks: tuple[ChunkItem, ...],
                 precedent: tuple[PrecedentItem, ...], round_notes: tuple[str, ...],
                 rung_notes: tuple[str, ...] = ()) -> Assembly:
        """The context block within the token budget (:func:`~hopweave.engine.assemble.assemble`);
        ``rung_notes`` (what a lower rung left out) head its ``[Note]`` section."""
        deps, req = self.deps, run.req
        return assemble(
            plan.sections, list(case.facts), chunks, list(precedent), as_of=req.as_of, entities=dict(case.values),
            budget_tokens=req.token_budget or deps.config.token_budget, counter=deps.counter,
            provenance=deps.config.provenance_inline, notes=[*rung_notes, *agent_notes(plan), *round_notes],
        )

    def record_if_asked(self, run: Run, result: RetrievalResult) -> bool:
        """:meth:`record` when the request (or else the config) asks for a trace; its time goes
        to ``timings["record"]``. Returns whether the trace is durable."""
        t = time.perf_counter()
        asked = self.deps.config.record if run.req.record is None else run.req.record
        recorded = self.record(run, result) if asked else False
        run.timings["record"] = _ms(t)
        return recorded

    def record(self, run: Run, result: RetrievalResult) -> bool:
        """Queue the trace on the group commit and wait for it to be durable within the
        request's remaining budget.

        Returns:
            True once durable; False (and a Degradation) when it failed or is still queued (it
            is written when the queue drains, but never claimed).
        """
        deps = self.deps
        session, subject = run.req.session, run.settings.subject
        timeout = run.remaining(deps.admission.load_reserve_ms(run.budget_ms))
        # the request's arrival on the wall clock (the run's clock is monotonic)
        asked_at = datetime.now(timezone.utc) - timedelta(seconds=time.perf_counter() - run.t_start)
        fut = deps.trace_writer.submit(
            result.tenant_id,
            lambda: trace_record.build(result, session, deps.graph, subject, run.req.caller, asked_at=asked_at),
            run.deadline)
        if timeout < MIN_STAGE_S:  # queued, but no time to wait for it: never claimed
            run.degraded.append(Degradation(stage="record", what="decision trace", reason=(
                "the request's budget was spent; the trace is queued and written when the queue drains"),
                fallback="result returned without a recorded trace (recorded=False)"))
            return False
        recorded: bool = deps.run_stage(
            run.degraded, "record", fut, default=False, what="decision trace",
            fallback="result returned without a recorded trace (recorded=False)", timeout=timeout)
        return recorded

    def finish(self, run: Run, plan: Plan, result: RetrievalResult, rounds: Rounds, recorded: bool,
               warm_ms: float | None) -> RetrievalResult:
        """``result`` with the run's timings, degradations, rounds, escalation and whether it
        was recorded."""
        if warm_ms is not None:
            run.timings["warmup"] = warm_ms
        return result.model_copy(update={"timings_ms": {k: round(v, 3) for k, v in run.timings.items()},
                                         "degraded": tuple(run.degraded), "recorded": recorded,
                                         "rounds": rounds.rounds, "escalation": _escalation(plan)})

    # ---- helpers ---------------------------------------------------------------------------
    def _neutral_filter(self, run: Run) -> tuple[FilterTree, str | None]:
        """The failed understanding's fallback filter (:func:`~hopweave.engine.plan.neutral_filter`)
        and the instant its documents are in force at (None: current revisions); when even the
        filter mapping cannot be read, one that matches no document (fail closed)."""
        from hopweave.understand.filter_map import instant, read_filter_mapping

        graph = self.deps.graph
        try:
            mapping = read_filter_mapping(graph, run.req.session.tenant_id)
            tree = neutral_filter(mapping, run.req.session, [a.entity for a in run.settings.authoritative],
                                  graph, run.req.as_of)
            return tree, instant(run.req.as_of) if mapping.in_force is not None else None
        except HopweaveError as exc:
            run.degraded.append(Degradation(stage="search", what="segment scoping", reason=str(exc),
                                            fallback="no policy documents"))
            return IsEmpty(field="tenant_id"), None  # every chunk has a tenant: nothing matches

    def _override(self, p: TraversalPattern, fields: Mapping[str, Any] | None,
                  goal: GoalType | None) -> TraversalPattern:
        """``p`` with a what-if override, checked by the same gates as a stored pattern."""
        if not fields:
            return p
        from hopweave.graph.gates import validate_pattern

        try:
            return validate_pattern({**p.model_dump(), **dict(fields)}, self.deps.graph.schema, goal)
        except PatternValidationError as exc:
            raise InputError(f"pattern_overrides[{p.name!r}] fails the pattern gates: {exc}") from None

    def _out_of_time(self, run: Run, plan: Plan, t: float) -> Found:
        """The branches of a request whose budget is spent before they start: both flagged."""
        reason = "the request's budget was spent before the stage could start"
        run.degraded.append(Degradation(stage="search", what="policy chunks", reason=reason,
                                        fallback="graph-only context"))
        if plan.patterns:
            run.degraded.append(Degradation(stage="traverse", what="all patterns", reason=reason,
                                            fallback="context without graph facts"))
        run.timings["search_and_traverse"] = _ms(t)
        return NOTHING_FOUND


def _escalation(plan: Plan) -> str:
    policy = plan.goal.escalation if plan.goal is not None else None
    return policy.mode if policy is not None else "single"


def _ms(t: float) -> float:
    return round((time.perf_counter() - t) * 1000, 3)


__all__ = ["NOTHING_FOUND", "UNDERSTAND_FALLBACK", "Found", "Pipeline"]
