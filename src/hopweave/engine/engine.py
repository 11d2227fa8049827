"""The compositional engine: understand -> (search || traverse) -> precedent -> assemble -> record.

One source of truth for concurrency: :meth:`Engine.retrieve` is a synchronous core; the document
search and the graph patterns run concurrently on the engine's thread pool; :meth:`aretrieve`
runs the same core on a separate request pool (``loop.run_in_executor``), so the event loop never
blocks and a burst of requests cannot occupy every stage worker while waiting for its own stages.

Every stage runs through :meth:`Engine._run_stage`, which owns its timeout, its fallback and the
typing of its errors (a TenantError always propagates; anything else becomes a
:class:`~hopweave.engine.result.Degradation`); nothing is dropped silently:

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
============  ==========================================  =========================================

Inputs are checked once (:func:`hopweave.engine.boundary.check_request`; an omitted ``as_of`` is
now, flagged ``as_of_defaulted``). Domain specifics (subject label, identifiers, authoritative
attributes...) come from the :class:`~hopweave.models.domain.DomainRegistry` per tenant.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, TYPE_CHECKING, TypeVar

from hopweave.engine import precedent
from hopweave.engine import record as trace_record
from hopweave.engine.assemble import Assembly, assemble
from hopweave.engine.boundary import Request, check_request, check_session_attributes
from hopweave.engine.branches import graph_branch, pattern_degradations, search_documents
from hopweave.engine.config import EngineConfig, Run
from hopweave.engine.plan import Plan, agent_notes, build_plan
from hopweave.engine.result import ChunkItem, Degradation, RetrievalResult, Stage
from hopweave.engine.stages import (
    DocumentIndex,
    default_embedder,
    index_revision,
    open_graph,
    open_index,
    run_stage,
    store_domains,
    warm_index,
)
from hopweave.engine.tokens import TokenCounter, default_counter
from hopweave.errors import ConfigError, InputError, PatternValidationError
from hopweave.graph.base import GraphStore
from hopweave.models.common import Bindings, PatternResult
from hopweave.models.domain import DomainRegistry, DomainSettings
from hopweave.models.filters import to_display
from hopweave.models.metagraph import GoalType, TraversalPattern
from hopweave.models.ranking import RankingProfile
from hopweave.search.embedder import Embedder
from hopweave.understand.models import Understanding
from hopweave.understand.understander import UnderstandingStage

T = TypeVar("T")
__all__ = ["Engine", "EngineConfig"]
_UNDERSTAND_FALLBACK = "generic retrieval without patterns; clarify"


if TYPE_CHECKING:  # pragma: no cover
    from hopweave.understand.calibration import Calibration
    from hopweave.understand.classifier import ClassifierConfig

class Engine:
    """Compositional retrieval over one graph store and one vector index.

    The constructor does no I/O. Use :meth:`open` for a store directory (the embedded default),
    or pass server-backed stores (any :class:`GraphStore` / :class:`DocumentIndex`) directly.
    ``domains`` says which domain serves each tenant; ``understander`` (optional) replaces the
    per-domain :class:`~hopweave.understand.understander.Understander` for every domain.
    """

    def __init__(
        self,
        graph: GraphStore,
        index: DocumentIndex | None = None,
        *,
        domains: DomainRegistry | None = None,
        embedder: Embedder | None = None,
        understander: UnderstandingStage | None = None,
        config: EngineConfig | None = None,
        counter: TokenCounter | None = None,
        store_dir: str | Path | None = None,
    ) -> None:
        self.graph = graph
        self.index = index
        self.domains = domains
        self._embedder = embedder
        self._understander = understander
        self._understanders: dict[str, UnderstandingStage] = {}
        self.config = config or EngineConfig()
        self._counter = counter
        self.store_dir = Path(store_dir) if store_dir is not None else None
        self._pool = ThreadPoolExecutor(max_workers=self.config.max_workers, thread_name_prefix="hopweave-engine")
        # aretrieve's requests run here, never on _pool: a request blocks on its stage futures, so
        # requests on the stage pool would starve it (issue 7: 100 concurrent aretrieve = timeouts).
        self._request_pool = ThreadPoolExecutor(max_workers=self.config.max_workers,
                                                thread_name_prefix="hopweave-request")
        # Trace writes wait on the store's write lock: their own pool, so a stuck writer can
        # hold at most these workers (queued writes are cancelled when their deadline passes).
        self._record_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hopweave-record")
        self._lock = threading.Lock()
        self._goal_cache: tuple[str, dict[str, GoalType], dict[str, list[TraversalPattern]]] | None = None
        self._trace_vectors = precedent.TraceVectorCache()
        self._closed = False
        self._warm = False
        self._warm_lock = threading.Lock()

    # ---- construction ------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        store_dir: str | Path | None = None,
        *,
        graph: GraphStore | None = None,
        index: DocumentIndex | None = None,
        domains: DomainRegistry | None = None,
        embedder: Embedder | None = None,
        understander: UnderstandingStage | None = None,
        config: EngineConfig | None = None,
    ) -> "Engine":
        """Open the embedded store in ``store_dir`` (``<dir>/graph``, ``<dir>/vectors``), or use
        the given ``graph`` / ``index`` instances (server stores). The domains (which pack serves
        which tenant, its settings and classifier) come from the store's settings file written by
        ``hopweave load PACK``, unless given. Raises StoreError / StoreCorruptError for an
        unreadable store, InputError when neither is given."""
        if graph is None:
            if store_dir is None:
                raise InputError("Engine.open needs a store directory or a GraphStore instance")
            graph = open_graph(store_dir)
        if domains is None and store_dir is not None:
            domains = store_domains(store_dir)
        if index is None and store_dir is not None:
            index = open_index(store_dir)
        return cls(graph, index, domains=domains, embedder=embedder, understander=understander, config=config,
                   store_dir=store_dir)

    def sibling(self, *, index: DocumentIndex | None, understander: UnderstandingStage | None) -> "Engine":
        """An engine on the same graph, domains, caches and config with another index and/or
        understanding stage (fault injection in replays). Close it with :meth:`close_pools`."""
        e = Engine(self.graph, index, domains=self.domains, embedder=self._embedder,
                   understander=understander or self._understander, config=self.config, counter=self._counter,
                   store_dir=self.store_dir)
        e._understanders = self._understanders
        e._goal_cache = self._goal_cache
        e._trace_vectors = self._trace_vectors
        e._warm = self._warm
        return e

    def close_pools(self) -> None:
        """Stop this engine's thread pools without closing its (shared) stores."""
        for pool in (self._pool, self._request_pool, self._record_pool):
            pool.shutdown(wait=False, cancel_futures=True)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder()
        return self._embedder

    def settings_for(self, tenant_id: str) -> DomainSettings:
        """The domain settings serving ``tenant_id``. Raises TenantError (no domain serves it)
        or ConfigError (the engine was built without domain settings)."""
        if self.domains is None:
            raise ConfigError("the engine has no domain settings: pass domains=DomainRegistry(...) to Engine / "
                              "Engine.open, or load the store with `hopweave load PACK`")
        return self.domains.for_tenant(tenant_id)

    def understander_for(self, settings: DomainSettings) -> UnderstandingStage:
        """The understanding stage of one domain (built once, on first use)."""
        if self._understander is not None:
            return self._understander
        stage = self._understanders.get(settings.name)
        if stage is None:
            with self._lock:
                stage = self._understanders.get(settings.name)
                if stage is None:
                    from hopweave.understand.understander import Understander

                    config, calibration = self._classifier_settings(settings.name)
                    stage = Understander(self.graph, self.embedder, settings=settings, classifier_config=config,
                                         calibration=calibration)
                    self._understanders[settings.name] = stage
        return stage

    def _classifier_settings(self, domain: str) -> tuple["ClassifierConfig | None", "Calibration | None"]:
        """The domain's classifier settings and calibration as the store keeps them (None: the
        defaults)."""
        from hopweave.models.store_settings import read_store_settings
        from hopweave.understand.classifier import classifier_settings

        stored = read_store_settings(self.store_dir) if self.store_dir is not None else None
        rec = stored.domains.get(domain) if stored is not None else None
        return classifier_settings(rec.classifier, rec.calibration) if rec is not None else (None, None)

    @property
    def counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = default_counter()
        return self._counter

    def _ensure_warm(self) -> float | None:
        """Warm up once per engine, outside any request's budget (a cold process would otherwise
        spend its first budget loading models). Returns the ms spent, or None if already warm."""
        if self._warm:
            return None
        with self._warm_lock:
            if self._warm:
                return None
            t = time.perf_counter()
            try:
                self.warmup()
            except Exception:  # a failing stage is reported by the request itself
                pass
            self._warm = True
            return _ms(t)

    def warmup(self) -> dict[str, float]:
        """Load the models and caches now (first-call costs), returning their timings in ms."""
        self._warm = True
        out: dict[str, float] = {}
        t = time.perf_counter()
        self.embedder.embed(["warm up"])
        out["embedder"] = _ms(t)
        t = time.perf_counter()
        stages = [self._understander] if self._understander is not None else [
            self.understander_for(s) for s in (self.domains.domains() if self.domains else [])]
        for stage in stages:
            stage.warmup()
        out["understander"] = _ms(t)
        if self.index is not None:
            t = time.perf_counter()
            warm_index(self.index, self.embedder)
            out["vector_index"] = _ms(t)
        t = time.perf_counter()
        self.counter.count("warm up")
        self._goals()
        out["tokenizer_and_metagraph"] = _ms(t)
        return {k: round(v, 1) for k, v in out.items()}

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.close_pools()
        for s in (self.index, self.graph):
            try:
                if s is not None:
                    s.close()
            except Exception:  # pragma: no cover - closing must not raise
                pass

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- caches (immutable per metagraph revision) -------------------------------------
    def _goals(self) -> tuple[str, dict[str, GoalType], dict[str, list[TraversalPattern]]]:
        rev = self.graph.metagraph_revision()
        cache = self._goal_cache
        if cache is None or cache[0] != rev:
            goals = {g.name: g for g in self.graph.goal_types()}
            pats: dict[str, list[TraversalPattern]] = {}
            for p in self.graph.patterns():
                pats.setdefault(p.goal, []).append(p)
            cache = (rev, goals, pats)
            self._goal_cache = cache
        return cache

    def store_revision(self) -> str:
        """Metagraph revision + the vector collection's identity (changes on re-ingest)."""
        return f"{self._goals()[0]}:{index_revision(self.index)}"

    # ---- the pipeline --------------------------------------------------------------------
    def retrieve(
        self,
        utterance: str,
        *,
        session: Any,
        as_of: Any = None,
        budget_ms: int | None = None,
        profile: str | None = None,
        token_budget: int | None = None,
        record: bool | None = None,
        pattern_overrides: Any = None,
    ) -> RetrievalResult:
        """Retrieve the working set for one utterance of an authenticated session.

        Args:
            utterance: what the customer (or agent) said (at most 4,000 characters).
            session: the authenticated session (a Session or a mapping of its fields); its
                tenant scopes everything and selects the domain.
            as_of: the instant the case is evaluated at (ISO string, date or datetime). Pass it
                for replayable runs; None = now (recorded, flagged).
            budget_ms: wall-clock budget (default ``config.budget_ms``), >= 1.
            profile: a published ranking profile name for the document search.
            token_budget: the context block's token budget, >= 1.
            record: write a DecisionTrace (default ``config.record``).
            pattern_overrides: per-pattern field overrides (e.g. ``{"recent_payments":
                {"max_visited": 3}}``) for what-if replays; each overridden pattern must pass
                the gates.

        Returns:
            RetrievalResult. Never raises for a failing stage (see the module docstring).

        Raises:
            InputError for a malformed argument (see :mod:`hopweave.engine.boundary`);
            TenantError for a missing/malformed/unserved tenant; ConfigError without domains.
        """
        req = check_request(utterance, session=session, as_of=as_of, budget_ms=budget_ms, profile=profile,
                            token_budget=token_budget, record=record, pattern_overrides=pattern_overrides)
        return self._retrieve(req)

    async def aretrieve(self, utterance: str, **kwargs: Any) -> RetrievalResult:
        """Async :meth:`retrieve` (same boundary and core, run on the engine's request pool)."""
        req = check_request(utterance, **kwargs)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._request_pool, functools.partial(self._retrieve, req))

    def _retrieve(self, req: Request) -> RetrievalResult:
        settings = self.settings_for(req.session.tenant_id)
        check_session_attributes(req.session, settings)
        warm_ms = self._ensure_warm()
        run = Run(req, settings, time.perf_counter(), req.budget_ms or self.config.budget_ms, [], {})
        plan = self._plan(run)
        chunks, prof, facts, prec_items = self._search_and_traverse(run, plan)
        t = time.perf_counter()
        assembly = assemble(
            plan.sections, facts, chunks, prec_items, as_of=req.as_of, entities=plan.entity_values,
            budget_tokens=req.token_budget or self.config.token_budget, counter=self.counter,
            provenance=self.config.provenance_inline, notes=agent_notes(plan),
        )
        run.timings["assemble"] = _ms(t)
        result = self._result(run, plan, prof, facts, assembly)
        t = time.perf_counter()
        recorded = self._record(run, result) if (self.config.record if req.record is None else req.record) else False
        run.timings["record"] = _ms(t)
        run.timings["total"] = _ms(run.t_start)
        if warm_ms is not None:
            run.timings["warmup"] = warm_ms
        return result.model_copy(update={"timings_ms": {k: round(v, 3) for k, v in run.timings.items()},
                                         "degraded": tuple(run.degraded), "recorded": recorded})

    def _run_stage(self, degraded: list[Degradation], stage: Stage, work: Callable[[], T] | Future[T], *,
                   default: T, what: str, fallback: str, timeout: float | None = None,
                   pool: ThreadPoolExecutor | None = None) -> T:
        """:func:`~hopweave.engine.stages.run_stage` on this engine's stage pool (or ``pool``)."""
        return run_stage(degraded, stage, work, default=default, what=what, fallback=fallback, timeout=timeout,
                         pool=pool or self._pool)

    # ---- stages --------------------------------------------------------------------------
    def _plan(self, run: Run) -> Plan:
        """Understand (within its share of the budget) and plan. Raises InputError for a
        pattern override that fails the gates."""
        t = time.perf_counter()
        req = run.req
        stage = self.understander_for(run.settings)
        u: Understanding | None = self._run_stage(
            run.degraded, "understand", lambda: stage.understand(req.utterance, req.session, req.as_of),
            default=None, what="goal and entities", fallback=_UNDERSTAND_FALLBACK,
            timeout=run.budget_ms * self.config.understand_share / 1000.0)
        _, goals, pats = self._goals()
        plan, why = build_plan(u, goals, pats, utterance=req.utterance, min_confidence=self.config.min_confidence,
                               profile=req.profile, default_profile=self.config.default_profile)
        if why:
            run.degraded.append(Degradation(stage="understand", what="goal", reason=why,
                                            fallback=_UNDERSTAND_FALLBACK))
        plan.patterns = [self._override(p, req.pattern_overrides.get(p.name), plan.goal) for p in plan.patterns]
        if self.config.pattern_budget_scale != 1.0:
            scale = self.config.pattern_budget_scale
            plan.patterns = [p.model_copy(update={"budget_ms": max(1, int(p.budget_ms * scale))}) for p in plan.patterns]
        run.timings["understand"] = _ms(t)
        return plan

    def _override(self, p: TraversalPattern, fields: Any, goal: GoalType | None) -> TraversalPattern:
        """``p`` with a what-if override, checked by the same gates as a stored pattern."""
        if not fields:
            return p
        from hopweave.graph.gates import validate_pattern

        try:
            return validate_pattern({**p.model_dump(), **dict(fields)}, self.graph.schema, goal)
        except PatternValidationError as exc:
            raise InputError(f"pattern_overrides[{p.name!r}] fails the pattern gates: {exc}") from None

    def _search_and_traverse(
        self, run: Run, plan: Plan
    ) -> tuple[tuple[ChunkItem, ...], RankingProfile | None, list[PatternResult], list[precedent.PrecedentItem]]:
        """The document search and the graph branch, concurrently, each within the budget."""
        t = time.perf_counter()
        tenant = run.req.session.tenant_id
        f_search = None if self.index is None else self._pool.submit(
            search_documents, self.index, self.embedder, tenant, plan, self.config.search_limit)
        bindings = Bindings(session=run.req.session, as_of=run.req.as_of,
                            goal=plan.goal.name if plan.goal else None, entities=dict(plan.entity_values))
        f_graph = None if not plan.patterns else self._pool.submit(
            graph_branch, self.graph, self.embedder, self._trace_vectors, plan, bindings, run.req.utterance,
            self.config.max_workers)
        chunks: tuple[ChunkItem, ...] = ()
        prof: RankingProfile | None = None
        if f_search is None:
            run.degraded.append(Degradation(stage="search", what="policy chunks", reason="no vector index is configured",
                                            fallback="graph-only context"))
        else:
            found = self._run_stage(run.degraded, "search", f_search, default=None, what="policy chunks",
                                    fallback="graph-only context", timeout=run.remaining())
            if found is not None:
                chunks, prof, skipped, run.timings["search"] = found
                run.degraded.extend(Degradation(stage="search", what=w, reason=r,
                                                fallback="the other channel ranks alone") for w, r in skipped)
            else:
                run.timings["search"] = _ms(t)
        facts: list[PatternResult] = []
        prec_items: list[precedent.PrecedentItem] = []
        if f_graph is not None:
            slack = (max(p.budget_ms for p in plan.patterns) + 250) / 1000.0
            branch = self._run_stage(run.degraded, "traverse", f_graph, default=None, what="all patterns",
                                     fallback="context without graph facts", timeout=run.remaining() + slack)
            if branch is not None:
                facts, prec_items, prec_degraded, run.timings["precedent"] = branch
                run.degraded.extend(prec_degraded)
            run.timings["traverse"] = round(max((f.elapsed_ms for f in facts), default=0.0), 3)
        run.degraded.extend(pattern_degradations(facts))
        run.timings["search_and_traverse"] = _ms(t)
        return chunks, prof, facts, prec_items

    def _result(self, run: Run, plan: Plan, prof: RankingProfile | None, facts: list[PatternResult],
                assembly: Assembly) -> RetrievalResult:
        req = run.req
        store_rev = self.store_revision()
        goal = None if plan.clarify else (plan.goal.name if plan.goal else None)
        trace_id = trace_record.trace_id_for(
            tenant_id=req.session.tenant_id, utterance=req.utterance, session=req.session, as_of=req.as_of,
            store_revision=store_rev, goal=goal, patterns=[(f.pattern, f.version) for f in facts],
            chunk_ids=[c.chunk_id for c in assembly.chunks if c.in_context], context_hash=assembly.block.hash,
        )
        return RetrievalResult(
            trace_id=trace_id, tenant_id=req.session.tenant_id, utterance=req.utterance, as_of=req.as_of,
            as_of_defaulted=req.as_of_defaulted, goal=goal,
            goal_version=plan.goal.version if plan.goal and not plan.clarify else None,
            confidence=round(plan.confidence, 6), clarify=plan.clarify, entities=plan.entities,
            mentions=plan.mentions, notes=plan.notes, domain=run.settings.name,
            filter=plan.filter.model_dump(mode="json") if plan.filter is not None else None,
            filter_display=to_display(plan.filter), search_query=plan.dense_query,
            ranking_profile=prof.name if prof else plan.profile,
            ranking_profile_version=prof.version if prof else None,
            chunks=assembly.chunks, facts=tuple(facts), precedent=assembly.precedent, context=assembly.block,
            degraded=tuple(run.degraded), store_revision=store_rev, metagraph_revision=store_rev.split(":")[0],
        )

    def _record(self, run: Run, result: RetrievalResult) -> bool:
        """Write the trace within the request's remaining budget (at least ``record_min_ms``).
        Returns True once written; False (and a Degradation) when it failed or timed out."""
        timeout = max(run.remaining(), self.config.record_min_ms / 1000.0)
        session, subject = run.req.session, run.settings.subject
        return self._run_stage(
            run.degraded, "record", lambda: trace_record.record(self.graph, result, session, subject), default=False,
            what="decision trace", fallback="result returned without a recorded trace (recorded=False)",
            timeout=timeout, pool=self._record_pool)


def _ms(t: float) -> float:
    return round((time.perf_counter() - t) * 1000, 3)
