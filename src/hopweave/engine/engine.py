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
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence, TypeVar

from hopweave.engine import precedent
from hopweave.engine import record as trace_record
from hopweave.engine.admission import NO_SLOT_FALLBACK, REFUSED, Admission, Grant, Ticket
from hopweave.engine.assemble import assemble
from hopweave.engine.boundary import Request, check_request, check_session_attributes
from hopweave.engine.branches import graph_branch, pattern_degradations, search_documents
from hopweave.engine.config import EngineConfig, Run, engine_config, make_result
from hopweave.engine.plan import NEUTRAL_NOTE, Plan, agent_notes, build_plan, neutral_filter
from hopweave.engine.rerank_stage import rerank_chunks
from hopweave.engine.rules import case_for
from hopweave.engine.query_vectors import SharedEmbedder, bound
from hopweave.search.text_vectors import TextVectorCache, vectors_dir
from hopweave.stores.front import close_quietly
from hopweave.engine.result import ChunkItem, Degradation, RetrievalResult, Stage
from hopweave.engine.stages import (
    MIN_STAGE_S,
    DocumentIndex,
    default_embedder,
    index_revision,
    run_stage,
)
from hopweave.engine.tokens import TokenCounter, default_counter
from hopweave.engine.trace_writer import GroupCommitter
from hopweave.engine.warmup import WarmUp, warm_parts
from hopweave.errors import ConfigError, HopweaveError, InputError, PatternValidationError
from hopweave.graph.base import GraphStore
from hopweave.models.common import Bindings, PatternResult, Session
from hopweave.models.filters import FilterTree, IsEmpty
from hopweave.models.domain import DomainRegistry, DomainSettings
from hopweave.models.metagraph import GoalType, TraversalPattern
from hopweave.models.ranking import RankingProfile
from hopweave.search.embedder import Embedder
from hopweave.understand.models import Understanding
from hopweave.understand.understander import UnderstandingStage

T = TypeVar("T")
D = TypeVar("D")
__all__ = ["Engine", "EngineConfig"]
_UNDERSTAND_FALLBACK = NO_SLOT_FALLBACK


if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.agentic import QueryWriter
    from hopweave.engine.facts import FactWriteResult
    from hopweave.engine.outcomes import OutcomeRecord, OutcomeRecorder
    from hopweave.understand.calibration import Calibration
    from hopweave.understand.classifier import ClassifierConfig
    from hopweave.models.store_settings import StoreSettings
    from hopweave.stores.front import Stores

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
        settings: "StoreSettings | None" = None,
    ) -> None:
        self.graph = graph
        self.index = index
        self.domains = domains
        self._embedder = embedder
        self._understander = understander
        self._understanders: dict[str, UnderstandingStage] = {}
        self.config = engine_config(config)
        self._counter = counter
        self.store_dir = Path(store_dir) if store_dir is not None else None
        #: The store's settings (classifier settings and calibration per domain); None: defaults.
        self.store_settings = settings
        self._pool = ThreadPoolExecutor(max_workers=self.config.max_workers, thread_name_prefix="hopweave-engine")
        # aretrieve's requests run here, never on _pool: a request blocks on its stage futures, so
        # requests on the stage pool would starve it (issue 7: 100 concurrent aretrieve = timeouts).
        self._request_pool = ThreadPoolExecutor(max_workers=self.config.max_requests,
                                                thread_name_prefix="hopweave-request")
        # Trace writes go through one group commit (engine/trace_writer.py), off the request path.
        self._trace_writer: GroupCommitter | None = None
        self._lock = threading.Lock()
        #: The request slots, reserves and clocks (:class:`~hopweave.engine.admission.Admission`).
        self.admission = Admission(self.config)
        #: Whether the engine is warm (:class:`~hopweave.engine.warmup.WarmUp`).
        self.warming = WarmUp()
        self._goal_cache: tuple[str, dict[str, GoalType], dict[str, list[TraversalPattern]]] | None = None
        self._trace_vectors = precedent.TraceVectorCache(
            vectors_dir(self.store_dir) if self.store_dir is not None else None)
        self._closed = False

    # ---- construction ------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        stores: "str | Path | Stores | None" = None,
        *,
        graph: "GraphStore | str | None" = None,
        vectors: "str | Path | None" = None,
        index: DocumentIndex | None = None,
        domains: DomainRegistry | None = None,
        embedder: Embedder | None = None,
        understander: UnderstandingStage | None = None,
        config: EngineConfig | None = None,
    ) -> "Engine":
        """Open an engine on stores named by URI (see :func:`hopweave.open`)::

            Engine.open(".hopweave/store")                       # the embedded store directory
            Engine.open(graph="neo4j://db:7687", vectors="http://qdrant:6333")
            Engine.open(hopweave.open(graph=..., vectors=...))   # stores opened beforehand
            Engine.open()                                         # $HOPWEAVE_GRAPH / $HOPWEAVE_VECTORS

        ``stores`` is a store directory or graph URI (then ``vectors`` defaults as in
        :func:`hopweave.open`), or an open :class:`~hopweave.stores.Stores`. ``graph`` may also
        be a :class:`GraphStore` instance (with ``index``: stores built by hand). The domains
        (which pack serves which tenant, its settings and classifier) come from the store's own
        settings written by ``hopweave load PACK``, unless given. Raises the errors of
        :func:`hopweave.open`, and StoreNotLoadedError for a server store never loaded from a
        pack when no ``domains`` are given."""
        from hopweave.errors import StoreNotLoadedError
        from hopweave.search.embedder import prefetch_default_encoder
        from hopweave.stores.front import Stores, open_stores
        from hopweave.understand.text import prefetch_spacy

        prefetch_spacy()  # its import (pure Python) overlaps the stores' reads and hashing
        if embedder is None:
            prefetch_default_encoder()  # so does the encoder session's (file reads, native set-up)
        if isinstance(graph, GraphStore):
            if isinstance(stores, Stores):
                raise InputError("Engine.open: give either a Stores or a GraphStore instance, not both")
            opened = None
            if stores is not None:  # a store directory supplying the index and the settings
                opened = open_stores(stores, vectors)
                opened.graph.close()
            return cls(graph, index if index is not None else (opened.index if opened else None),
                       domains=domains if domains is not None else (opened.domains() if opened else None),
                       embedder=embedder, understander=understander, config=config,
                       settings=opened.settings if opened else None)
        if isinstance(stores, Stores):
            if graph is not None or vectors is not None:
                raise InputError("Engine.open: the Stores are already open; do not pass graph= or vectors= too")
            opened = stores
        else:
            if stores is not None and graph is not None:
                raise InputError(f"Engine.open: give the graph once (got {stores!r} and graph={graph!r})")
            opened = open_stores(graph if graph is not None else stores, vectors,
                                 search_process=engine_config(config).search_process)
        if domains is None and opened.settings is None and opened.graph_uri.kind not in ("embedded", "memory"):
            opened.close()
            raise StoreNotLoadedError(f"{opened.graph_uri.display} holds no hopweave store settings (never loaded "
                                      f"from a pack): run `hopweave load PACK --graph {opened.graph_uri.display}`, "
                                      "or pass domains= to Engine.open")
        return cls(opened.graph, index if index is not None else opened.index,
                   domains=domains if domains is not None else opened.domains(), embedder=embedder,
                   understander=understander, config=config, store_dir=opened.store_dir, settings=opened.settings)

    def sibling(self, *, index: DocumentIndex | None, understander: UnderstandingStage | None,
                config: EngineConfig | None = None) -> "Engine":
        """An engine on the same graph, domains and caches with another index and/or
        understanding stage (fault injection in replays), and its own request slots.

        Args:
            index: the sibling's vector index (None: no document search).
            understander: its understanding stage (None: this engine's).
            config: its budgets (None: this engine's).

        Returns:
            The sibling engine; close it with :meth:`close_pools` (the stores stay open).
        """
        e = Engine(self.graph, index, domains=self.domains, embedder=self._embedder,
                   understander=understander or self._understander, config=config or self.config,
                   counter=self._counter, store_dir=self.store_dir, settings=self.store_settings)
        e._understanders = self._understanders
        e._goal_cache = self._goal_cache
        e._trace_vectors = self._trace_vectors
        e._trace_writer = self.trace_writer
        if self.warming.warm:
            e.warming.mark_warm()
        return e

    def close_pools(self) -> None:
        """Stop this engine's thread pools without closing its (shared) stores."""
        for pool in (self._pool, self._request_pool):
            pool.shutdown(wait=False, cancel_futures=True)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder()
        if not isinstance(self._embedder, SharedEmbedder):
            self._embedder = SharedEmbedder(self._embedder, TextVectorCache(
                vectors_dir(self.store_dir) if self.store_dir is not None else None, "questions"))
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
        from hopweave.understand.classifier import classifier_settings

        stored = self.store_settings
        if stored is None and self.store_dir is not None:  # an engine built by hand on a store directory
            stored = _read_settings(self.store_dir)
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
        return self.warming.ensure(self.warmup)

    def warmup(self) -> dict[str, float]:
        """Load the models and caches now (first-call costs), side by side.

        Returns:
            Each part's own wall time in ms (:func:`~hopweave.engine.warmup.warm_parts`).

        Raises:
            What a part raises (a request's own warm-up leaves it to the stage that meets it).
        """
        self.warming.mark_warm()
        stages = [self._understander] if self._understander is not None else [
            self.understander_for(s) for s in (self.domains.domains() if self.domains else [])]
        return warm_parts(lambda: self.embedder, stages, self.graph, self.index, self.counter, self._goals)

    @property
    def trace_writer(self) -> GroupCommitter:
        """The group commit of this engine's decision traces (one per graph store, shared with
        siblings)."""
        if self._trace_writer is None:
            with self._lock:
                if self._trace_writer is None:
                    self._trace_writer = GroupCommitter(self.graph, min_write_s=self.config.record_min_ms / 1000.0)
        return self._trace_writer

    # ---- living memory: recorded outcomes (engine/outcomes.py) ------------------------------
    @property
    def outcomes(self) -> "OutcomeRecorder":
        """The outcome recorder of this engine (its writes share the trace group commit)."""
        from hopweave.engine.outcomes import OutcomeRecorder

        rec = self.__dict__.get("_outcomes")
        if not isinstance(rec, OutcomeRecorder):
            writer = self.trace_writer  # (takes self._lock itself)
            with self._lock:
                rec = self.__dict__.get("_outcomes")
                if not isinstance(rec, OutcomeRecorder):
                    rec = self.__dict__["_outcomes"] = OutcomeRecorder(
                        self.graph, lambda: self._goals()[1], lambda t: self.settings_for(t).subject, writer)
        return rec

    def record_outcome(self, trace_id: str, *, session: Any, outcome: str, decided_by: str | None = None,
                       rationale: str | None = None, cited: Sequence[str] = (), as_of: Any = None) -> "OutcomeRecord":
        """Record what was decided on the retrieval ``trace_id``
        (:meth:`hopweave.engine.outcomes.OutcomeRecorder.record`: gates, idempotence, versions)."""
        return self.outcomes.record(trace_id, session=session, outcome=outcome, decided_by=decided_by,
                                    rationale=rationale, cited=cited, as_of=as_of)

    def write_facts(self, tenant: str, nodes: Sequence[Any] = (), edges: Sequence[Any] = (), *,
                    source: str) -> "FactWriteResult":
        """Upsert a system of record's nodes and edges for ``tenant`` (all or nothing, stamped
        ``recorded_at`` / ``recorded_by``; :meth:`hopweave.engine.facts.FactWriter.write`)."""
        from hopweave.engine.facts import FactWriter

        return FactWriter(self.graph, self.trace_writer).write(tenant, nodes, edges, source=source)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._trace_writer is not None:
            self._trace_writer.close()  # queued traces are written before the store closes
        self.close_pools()
        close_quietly(self.index, self.graph)

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
        session: Session | Mapping[str, Any],
        as_of: datetime | date | str | None = None,
        budget_ms: int | None = None,
        profile: str | None = None,
        token_budget: int | None = None,
        record: bool | None = None,
        pattern_overrides: Mapping[str, Mapping[str, Any]] | None = None,
        caller: str | None = None,
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
            caller: who asked (a verified token subject or key id, never a credential),
                recorded on the decision trace and part of its id; None in process.

        Returns:
            RetrievalResult. Never raises for a failing stage (see the module docstring).

        Raises:
            InputError for a malformed argument (see :mod:`hopweave.engine.boundary`);
            TenantError for a missing/malformed/unserved tenant; ConfigError without domains.
        """
        t0 = time.perf_counter()  # the budget runs from the call, whatever waits after it
        req = check_request(utterance, session=session, as_of=as_of, budget_ms=budget_ms, profile=profile,
                            token_budget=token_budget, record=record, pattern_overrides=pattern_overrides,
                            caller=caller)
        return self._retrieve(req, t0)

    async def aretrieve(self, utterance: str, *, arrived: float | None = None, shed: bool = False,
                        **kwargs: Any) -> RetrievalResult:
        """Async :meth:`retrieve` (same boundary and core, run on the engine's request pool). The
        budget runs from this call, or from ``arrived`` (a ``time.perf_counter()`` instant: when
        the caller's request arrived, e.g. at an HTTP server): time spent queued counts, so a
        burst returns degraded results within budget rather than late ones. A request still
        queued for a worker when only its finish reserve (:meth:`finish_reserve_ms`) is left is
        answered degraded at once, or, with ``shed``, refused: OverloadedError, as is a request
        that got no request slot before its deadline (nothing is recorded for it; the caller
        retries). Other errors as :meth:`retrieve`."""
        t0 = time.perf_counter() if arrived is None else arrived
        req = check_request(utterance, **kwargs)
        loop = asyncio.get_running_loop()
        ticket = Ticket()
        work = loop.run_in_executor(self._request_pool, ticket.wrap(functools.partial(self._retrieve, req, t0, shed)))
        if self.warming.warm:  # (the first request warms the engine, outside any budget)
            budget_s = (req.budget_ms or self.config.budget_ms) / 1000.0
            wait = budget_s - self.finish_reserve_ms(budget_s * 1000) / 1000.0 - (time.perf_counter() - t0)
            done, _ = await asyncio.wait({work}, timeout=max(wait, 0.0))
            if not done and ticket.abandon():  # still queued for a worker: answer degraded (or shed), now
                if shed:
                    raise self.admission.overloaded(req.budget_ms, "no worker took the request before its deadline")
                return self._retrieve(req, t0)
        result = await work  # started: its stages end at its deadline
        assert result is not None  # only an abandoned ticket returns None, and that was not awaited
        return result

    def finish_reserve_ms(self, budget_ms: float) -> float:
        """The end of a budget kept for finishing a request that did no work
        (:meth:`~hopweave.engine.admission.Admission.finish_reserve_ms`).

        Args:
            budget_ms: the request's budget.

        Returns:
            The reserve in ms; a request not started by then is answered degraded (or shed).
        """
        return self.admission.finish_reserve_ms(budget_ms)

    def retrieve_request(self, req: Request, t0: float, shed: bool = False) -> RetrievalResult:
        """:meth:`retrieve` of a request already checked (:func:`~hopweave.engine.boundary.check_request`)
        whose budget runs from ``t0`` (``time.perf_counter()`` clock): a request that waited
        elsewhere first, e.g. in an engine pool's hand-off (:mod:`hopweave.adapters.pool`).
        ``shed``: OverloadedError when no request slot freed up before the deadline."""
        return self._retrieve(req, t0, shed)

    def _retrieve(self, req: Request, t0: float | None = None, shed: bool = False) -> RetrievalResult:
        """One request: split into parts when it carries several intents
        (:mod:`hopweave.engine.multi_intent`), else one run of the pipeline. ``shed``: raise
        OverloadedError rather than answer when no request slot freed up before the deadline.

        A request that may carry several intents takes its request slot before the split (whose
        encoder pass a burst would otherwise run for requests that never get a slot after it)
        and keeps it for the pipeline when it has one intent; the parts of a split request
        each take a slot of their own."""
        from hopweave.engine.multi_intent import may_split, retrieve_parts, split_intents

        if self.single_pass or not may_split(req.utterance):
            return self._retrieve_one(req, t0, shed)
        if self._ensure_warm() is not None or t0 is None:  # warm-up is outside budgets
            t0 = time.perf_counter()
        budget_ms = req.budget_ms or self.config.budget_ms
        end = t0 + (budget_ms - self.config.reserve_ms(budget_ms)) / 1000.0
        grant = self.admission.take(end, shed=shed, budget_ms=req.budget_ms)
        if not grant.granted:
            return self._retrieve_one(req, t0, shed, grant=REFUSED)
        try:
            parts = split_intents(self, req)
        except BaseException:
            self.admission.release(grant)
            raise
        if not parts:  # one intent: the pipeline runs in the slot the split ran in
            return self._retrieve_one(req, t0, shed, grant=grant)
        self.admission.release(grant)
        # the parts share the request's one budget, which runs from the call
        return retrieve_parts(self, req, parts, t0)

    def _retrieve_one(self, req: Request, t0: float | None = None, shed: bool = False,
                      grant: Grant | None = None) -> RetrievalResult:
        """One run of the pipeline. ``grant``: the request slot the caller took for this run
        (:data:`~hopweave.engine.admission.REFUSED`: it got none in time); None: the run takes
        its own here."""
        settings = self.settings_for(req.session.tenant_id)
        check_session_attributes(req.session, settings)
        warm_ms = self._ensure_warm()
        start = time.perf_counter() if t0 is None or warm_ms is not None else t0  # warm-up is outside budgets
        run = Run(req, settings, start, req.budget_ms or self.config.budget_ms, [], {})
        with self.admission.in_flight():
            if grant is None:
                grant = self.admission.admit(run, shed)
            elif not grant.granted:
                self.admission.refuse(run, shed)
            try:
                plan = self._plan(run)
                chunks, prof, facts, prec_items = self._search_and_traverse(run, plan)
            finally:
                self.admission.release(grant)
            return self._finish(run, plan, chunks, prof, facts, prec_items, warm_ms)

    def _finish(self, run: Run, plan: Plan, chunks: tuple[ChunkItem, ...], prof: RankingProfile | None,
                facts: list[PatternResult], prec_items: list[precedent.PrecedentItem],
                warm_ms: float | None) -> RetrievalResult:
        """Assemble, make the result, hand the trace to the group commit."""
        req = run.req
        t = t_finish = time.perf_counter()
        facts, template_values = case_for(self, run, plan, facts)  # the procedure applied to the case
        chunks, rounds, round_notes = self._rounds(run, plan, chunks, facts)
        chunks = rerank_chunks(self, run, plan, chunks)
        assembly = assemble(
            plan.sections, facts, chunks, prec_items, as_of=req.as_of, entities=template_values,
            budget_tokens=req.token_budget or self.config.token_budget, counter=self.counter,
            provenance=self.config.provenance_inline, notes=agent_notes(plan) + round_notes,
        )
        run.timings["assemble"] = _ms(t)
        result = make_result(run, plan, prof, facts, assembly, self.store_revision())
        t = time.perf_counter()
        recorded = self._record(run, result) if (self.config.record if req.record is None else req.record) else False
        run.timings["record"] = _ms(t)
        run.timings["total"] = _ms(run.t_start)
        self.admission.finished(_ms(t_finish))
        if warm_ms is not None:
            run.timings["warmup"] = warm_ms
        return result.model_copy(update={"timings_ms": {k: round(v, 3) for k, v in run.timings.items()},
                                         "degraded": tuple(run.degraded), "recorded": recorded,
                                         "rounds": tuple(rounds), "escalation": _escalation(plan)})

    def _reserve_ms(self, run: Run) -> float:
        """The end of the run's budget kept for assembly (:meth:`Admission.reserve_ms`)."""
        return self.admission.reserve_ms(run.budget_ms)

    def expected_wait_ms(self) -> float:
        """How long a request arriving now would wait for a request slot.

        Returns:
            The expected wait in ms (:meth:`~hopweave.engine.admission.Admission.expected_wait_ms`;
            0 before any slot hold was measured).
        """
        return self.admission.expected_wait_ms()

    @contextmanager
    def admitted(self, budget_ms: int | None = None, *, arrived: float | None = None,
                 kind: str = "call") -> Iterator[float]:
        """One of the ``config.max_active`` request slots for work outside :meth:`retrieve` (the
        agent tool's search), under the same admission; a cold engine warms up first, outside
        the budget.

        Args:
            budget_ms: the call's budget (default ``config.budget_ms``).
            arrived: when the call arrived (a ``time.perf_counter()`` instant; default now).
            kind: the kind of work (each kind's recent time in a slot is kept for it).

        Yields:
            The call's deadline (``time.perf_counter()`` clock).

        Raises:
            OverloadedError: no slot freed up in time (the caller retries).
        """
        if self._ensure_warm() is not None:  # a cold engine warms outside any budget, as retrieve does
            arrived = None
        with self.admission.admitted(budget_ms, arrived=arrived, kind=kind) as deadline:
            yield deadline

    def _run_stage(self, degraded: list[Degradation], stage: Stage, work: Callable[[], T] | Future[T], *,
                   default: D, what: str, fallback: str, timeout: float | None = None,
                   pool: ThreadPoolExecutor | None = None) -> T | D:
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
            run.degraded, "understand", bound(run.vectors, lambda: stage.understand(req.utterance, req.session,
                                                                                     req.as_of), run.deadline),
            default=None, what="goal and entities", fallback=_UNDERSTAND_FALLBACK,
            timeout=min(run.budget_ms * self.config.understand_share / 1000.0, run.remaining(self._reserve_ms(run))))
        _, goals, pats = self._goals()
        plan, why = build_plan(u, goals, pats, utterance=req.utterance, min_confidence=self.config.min_confidence,
                               profile=req.profile, default_profile=self.config.default_profile)
        if u is None:
            plan.filter, plan.documents_at = self._neutral_filter(run)
            plan.notes = (*plan.notes, NEUTRAL_NOTE)
        if why:
            run.degraded.append(Degradation(stage="understand", what="goal", reason=why,
                                            fallback=_UNDERSTAND_FALLBACK))
        plan.patterns = [self._override(p, req.pattern_overrides.get(p.name), plan.goal) for p in plan.patterns]
        if self.config.pattern_budget_scale != 1.0:
            scale = self.config.pattern_budget_scale
            plan.patterns = [p.model_copy(update={"budget_ms": max(1, int(p.budget_ms * scale))}) for p in plan.patterns]
        run.timings["understand"] = _ms(t)
        return plan

    def _neutral_filter(self, run: Run) -> tuple[FilterTree, str | None]:
        """The failed understanding's fallback filter (:func:`~hopweave.engine.plan.neutral_filter`)
        and the instant its documents are in force at (None: current revisions); when even the
        filter mapping cannot be read, one that matches no document (fail closed)."""
        from hopweave.understand.filter_map import instant, read_filter_mapping

        try:
            mapping = read_filter_mapping(self.graph, run.req.session.tenant_id)
            tree = neutral_filter(mapping, run.req.session, [a.entity for a in run.settings.authoritative],
                                  self.graph, run.req.as_of)
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
            return validate_pattern({**p.model_dump(), **dict(fields)}, self.graph.schema, goal)
        except PatternValidationError as exc:
            raise InputError(f"pattern_overrides[{p.name!r}] fails the pattern gates: {exc}") from None

    def _search_and_traverse(
        self, run: Run, plan: Plan
    ) -> tuple[tuple[ChunkItem, ...], RankingProfile | None, list[PatternResult], list[precedent.PrecedentItem]]:
        """The document search and the graph branch, concurrently, each within the budget."""
        t = time.perf_counter()
        tenant = run.req.session.tenant_id
        if run.remaining(self._reserve_ms(run)) < MIN_STAGE_S:  # out of time: nothing is started
            return self._out_of_time(run, plan, t)
        f_search = None if self.index is None else self._pool.submit(bound(run.vectors, functools.partial(
            search_documents, self.index, self.embedder, tenant, plan, self.config.search_limit, run.req.utterance),
            run.deadline))
        bindings = Bindings(session=run.req.session, as_of=run.req.as_of,
                            goal=plan.goal.name if plan.goal else None, entities=dict(plan.entity_values))
        f_graph = None if not plan.patterns else self._pool.submit(bound(run.vectors, functools.partial(
            graph_branch, self.graph, self.embedder, self._trace_vectors, plan, bindings, run.req.utterance,
            self.config.max_workers), run.deadline))
        chunks: tuple[ChunkItem, ...] = ()
        prof: RankingProfile | None = None
        if f_search is None:
            run.degraded.append(Degradation(stage="search", what="policy chunks", reason="no vector index is configured",
                                            fallback="graph-only context"))
        else:
            found = self._run_stage(run.degraded, "search", f_search, default=None, what="policy chunks",
                                    fallback="graph-only context", timeout=run.remaining(self._reserve_ms(run)))
            if found is not None:
                chunks, prof, skipped, run.timings["search"] = found
                run.degraded.extend(Degradation(stage="search", what=w, reason=r,
                                                fallback="the other channel ranks alone") for w, r in skipped)
            else:
                run.timings["search"] = _ms(t)
        facts: list[PatternResult] = []
        prec_items: list[precedent.PrecedentItem] = []
        if f_graph is not None:
            branch = self._run_stage(run.degraded, "traverse", f_graph, default=None, what="all patterns",
                                     fallback="context without graph facts",
                                     timeout=run.remaining(self._reserve_ms(run)))
            if branch is not None:
                facts, prec_items, prec_degraded, run.timings["precedent"] = branch
                run.degraded.extend(prec_degraded)
            run.timings["traverse"] = round(max((f.elapsed_ms for f in facts), default=0.0), 3)
        run.degraded.extend(pattern_degradations(facts))
        run.timings["search_and_traverse"] = _ms(t)
        return chunks, prof, facts, prec_items

    #: An application's writer of later rounds' queries (e.g. its LLM); None = the
    #: deterministic planner. See :mod:`hopweave.engine.agentic`.
    query_writer: "QueryWriter | None" = None
    #: True: no later rounds and no intent split (the single-pass baseline of `eval scenarios`).
    single_pass: bool = False
    #: Reranker for every goal ("bi_encoder", "cross_encoder", "none"); None = each goal's own
    #: ``rerank`` (default off). See :mod:`hopweave.engine.rerank_stage`.
    rerank: str | None = None

    def _rounds(self, run: Run, plan: Plan, chunks: tuple[ChunkItem, ...],
                facts: list[PatternResult]) -> tuple[tuple[ChunkItem, ...], list[Any], list[str]]:
        """Later retrieval rounds under the goal's escalation policy (a single-pass goal: its
        first pass as the only round, at no cost). See :func:`hopweave.engine.agentic.rounds_for`."""
        from hopweave.engine.agentic import rounds_for

        return rounds_for(self, run, plan, chunks, facts)

    def _out_of_time(self, run: Run, plan: Plan, t: float) -> tuple[tuple[ChunkItem, ...], None, list[PatternResult],
                                                                       list[precedent.PrecedentItem]]:
        """The branches of a request whose budget is spent before they start: both flagged."""
        reason = "the request's budget was spent before the stage could start"
        run.degraded.append(Degradation(stage="search", what="policy chunks", reason=reason,
                                        fallback="graph-only context"))
        if plan.patterns:
            run.degraded.append(Degradation(stage="traverse", what="all patterns", reason=reason,
                                            fallback="context without graph facts"))
        run.timings["search_and_traverse"] = _ms(t)
        return (), None, [], []

    def _record(self, run: Run, result: RetrievalResult) -> bool:
        """Queue the trace on the group commit and wait for it to be durable within the request's
        remaining budget. Returns True once durable; False (and a Degradation) when it failed or is
        still queued (it is written when the queue drains, but never claimed)."""
        session, subject = run.req.session, run.settings.subject
        timeout = run.remaining(self.admission.load_reserve_ms(run.budget_ms))
        fut = self.trace_writer.submit(
            result.tenant_id, lambda: trace_record.build(result, session, self.graph, subject, run.req.caller), run.deadline)
        if timeout < MIN_STAGE_S:  # queued, but no time to wait for it: never claimed
            run.degraded.append(Degradation(stage="record", what="decision trace", reason=(
                "the request's budget was spent; the trace is queued and written when the queue drains"),
                fallback="result returned without a recorded trace (recorded=False)"))
            return False
        return self._run_stage(
            run.degraded, "record", fut, default=False, what="decision trace",
            fallback="result returned without a recorded trace (recorded=False)", timeout=timeout)


def _escalation(plan: Plan) -> str:
    policy = plan.goal.escalation if plan.goal is not None else None
    return policy.mode if policy is not None else "single"


def _read_settings(store_dir: str | Path) -> "StoreSettings | None":
    from hopweave.models.store_settings import read_store_settings

    return read_store_settings(store_dir)


def _ms(t: float) -> float:
    return round((time.perf_counter() - t) * 1000, 3)
