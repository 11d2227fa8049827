"""The compositional engine: understand -> (search || traverse) -> precedent -> assemble -> record.

One source of truth for concurrency: :meth:`Engine.retrieve` is a synchronous core; the document
search and the graph patterns run concurrently on the engine's thread pool; :meth:`aretrieve`
runs the same core on a separate request pool (``loop.run_in_executor``), so the event loop never
blocks and a burst of requests cannot occupy every stage worker while waiting for its own stages.

:class:`Engine` is the facade: it opens the stores, owns the pools, the caches, the admission
(:class:`~hopweave.engine.admission.Admission`) and the warm-up (:mod:`hopweave.engine.warmup`),
and hands each request to a :class:`~hopweave.engine.pipeline.Pipeline` over a
:class:`~hopweave.engine.deps.StageDeps` snapshot of its parts. Every stage runs through
:meth:`StageDeps.run_stage <hopweave.engine.deps.StageDeps.run_stage>`, which owns its timeout,
its fallback and the typing of its errors (a TenantError always propagates; anything else becomes a
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
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from hopweave.engine import multi_intent
from hopweave.engine.admission import Admission, Ticket
from hopweave.engine.boundary import Request, check_request
from hopweave.engine.config import EngineConfig, engine_config
from hopweave.engine.deps import GoalCache, StageDeps, UnderstanderCache
from hopweave.engine.pipeline import Pipeline
from hopweave.engine.precedent import TraceVectorCache
from hopweave.engine.query_vectors import SharedEmbedder
from hopweave.engine.result import RetrievalResult
from hopweave.engine.stages import DocumentIndex, default_embedder
from hopweave.engine.tokens import TokenCounter, default_counter
from hopweave.engine.trace_writer import GroupCommitter
from hopweave.engine.warmup import WarmUp, warm_parts
from hopweave.errors import ConfigError, InputError
from hopweave.graph.base import GraphStore
from hopweave.models.common import Session
from hopweave.models.domain import DomainRegistry, DomainSettings
from hopweave.search.embedder import Embedder
from hopweave.search.text_vectors import TextVectorCache, vectors_dir
from hopweave.stores.front import close_quietly
from hopweave.understand.understander import UnderstandingStage

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.facts import FactWriteResult
    from hopweave.engine.outcomes import OutcomeRecord
    from hopweave.engine.round_query import QueryWriter
    from hopweave.models.store_settings import StoreSettings
    from hopweave.stores.front import Stores

__all__ = ["Engine", "EngineConfig"]


class Engine:
    """Compositional retrieval over one graph store and one vector index.

    The constructor does no I/O. Use :meth:`open` for a store directory (the embedded default),
    or pass server-backed stores (any :class:`GraphStore` / :class:`DocumentIndex`) directly.

    Args:
        graph: the graph store.
        index: the document index (None: graph-only context).
        domains: which domain serves each tenant.
        embedder: the embedder (default: the bundled model, loaded on first use).
        understander: one understanding stage for every domain (default: a per-domain
            :class:`~hopweave.understand.understander.Understander`, built on first use).
        config: budgets and thresholds.
        counter: the context's token counter (default: the offline WordPiece counter).
        store_dir: the embedded store directory (its vector caches and settings).
        settings: the store's settings (classifier settings and calibration per domain).
    """

    #: An application's writer of later rounds' queries (e.g. its LLM); None = the
    #: deterministic planner. See :mod:`hopweave.engine.agentic`.
    query_writer: "QueryWriter | None" = None
    #: True: no later rounds and no intent split (the single-pass baseline of `eval scenarios`).
    single_pass: bool = False
    #: Reranker for every goal ("bi_encoder", "cross_encoder", "none"); None = each goal's own
    #: ``rerank`` (default off). See :mod:`hopweave.engine.rerank_stage`.
    rerank: str | None = None

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
        self.config = engine_config(config)
        self._counter = counter
        self.store_dir = Path(store_dir) if store_dir is not None else None
        #: The store's settings (classifier settings and calibration per domain); None: defaults.
        self.store_settings = settings
        #: The stage pool: the concurrent stages of every request.
        self.stage_pool = ThreadPoolExecutor(max_workers=self.config.max_workers, thread_name_prefix="hopweave-engine")
        #: ``aretrieve``'s requests (never on the stage pool: a request blocks on its stage
        #: futures, so requests there would starve it).
        self.request_pool = ThreadPoolExecutor(max_workers=self.config.max_requests,
                                               thread_name_prefix="hopweave-request")
        #: The group commit of this engine's decision traces (shared with siblings).
        self.trace_writer = GroupCommitter(graph, min_write_s=self.config.record_min_ms / 1000.0)
        #: The request slots, reserves and clocks (:class:`~hopweave.engine.admission.Admission`).
        self.admission = Admission(self.config)
        #: Whether the engine is warm (:class:`~hopweave.engine.warmup.WarmUp`).
        self.warming = WarmUp()
        #: The goal lookup: ``goals()`` is the metagraph's :class:`~hopweave.engine.deps.Goals`.
        self.goals = GoalCache(graph)
        #: The per-domain understanding stages (``understanders.built()``: the domains built).
        self.understanders = UnderstanderCache(graph, lambda: self.embedder, settings, self.store_dir)
        self._trace_vectors = TraceVectorCache(vectors_dir(self.store_dir) if self.store_dir is not None else None)
        from hopweave.engine.outcomes import OutcomeRecorder

        #: The outcome recorder (its writes share the trace group commit).
        self.outcomes = OutcomeRecorder(graph, lambda: self.goals().goals, lambda t: self.settings_for(t).subject,
                                        self.trace_writer)
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

        Args:
            stores: a store directory or graph URI (then ``vectors`` defaults as in
                :func:`hopweave.open`), or an open :class:`~hopweave.stores.Stores`.
            graph: a graph URI, or a :class:`GraphStore` instance (with ``index``: stores built
                by hand; ``stores`` may then name the store directory supplying the index and
                the settings).
            vectors: the vectors URI.
            index: a vector index instance (overrides the opened one).
            domains: which domain serves which tenant (default: the store's own settings,
                written by ``hopweave load PACK``).
            embedder: the embedder (default: the bundled model, loaded on first use).
            understander: one understanding stage for every domain (default: one per domain).
            config: budgets and thresholds (default :class:`EngineConfig`).

        Returns:
            The engine (close it, or use it as a context manager).

        Raises:
            InputError: conflicting arguments (Stores and a GraphStore, the graph twice...).
            StoreNotLoadedError: a server store never loaded from a pack, without ``domains``.
            The errors of :func:`hopweave.open` (URIs, missing or corrupt stores).
        """
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
        understanding stage (fault injection in replays), and its own pools and request slots.

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
        e.understanders = self.understanders
        e.goals = self.goals
        e._trace_vectors = self._trace_vectors
        e.trace_writer = self.trace_writer
        e.outcomes = self.outcomes
        if self.warming.warm:
            e.warming.mark_warm()
        return e

    def close_pools(self) -> None:
        """Stop this engine's thread pools without closing its (shared) stores."""
        for pool in (self.stage_pool, self.request_pool):
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Write the queued traces, stop the pools and close the stores (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self.trace_writer.close()  # queued traces are written before the store closes
        self.close_pools()
        close_quietly(self.index, self.graph)

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- parts ---------------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        """The embedder (the default one is created on first use), sharing the query vectors
        of a request and the store's cached question vectors."""
        if self._embedder is None:
            self._embedder = default_embedder()
        if not isinstance(self._embedder, SharedEmbedder):
            self._embedder = SharedEmbedder(self._embedder, TextVectorCache(
                vectors_dir(self.store_dir) if self.store_dir is not None else None, "questions"))
        return self._embedder

    @property
    def counter(self) -> TokenCounter:
        """The context's token counter (the default one is created on first use)."""
        if self._counter is None:
            self._counter = default_counter()
        return self._counter

    def settings_for(self, tenant_id: str) -> DomainSettings:
        """The domain settings serving a tenant.

        Args:
            tenant_id: the session's tenant.

        Returns:
            The domain's settings.

        Raises:
            TenantError: no domain serves the tenant.
            ConfigError: the engine was built without domain settings.
        """
        if self.domains is None:
            raise ConfigError("the engine has no domain settings: pass domains=DomainRegistry(...) to Engine / "
                              "Engine.open, or load the store with `hopweave load PACK`")
        return self.domains.for_tenant(tenant_id)

    def understander_for(self, settings: DomainSettings) -> UnderstandingStage:
        """The understanding stage of one domain.

        Args:
            settings: the domain's settings.

        Returns:
            The engine-wide ``understander`` when one was given, else the domain's own (built
            once, on first use).

        Raises:
            ConfigError: the store's classifier settings for the domain are unusable.
        """
        return self._understander if self._understander is not None else self.understanders(settings)

    def pipeline(self) -> Pipeline:
        """A pipeline over a snapshot of this engine's parts (:class:`~hopweave.engine.deps.StageDeps`):
        what one request runs on. The hooks (``query_writer``, ``rerank``, ``single_pass``) are
        read now.

        Returns:
            The pipeline (cheap: build one per request).
        """
        return Pipeline(StageDeps(
            graph=self.graph, index=self.index, embedder=self.embedder, counter=self.counter, config=self.config,
            trace_writer=self.trace_writer, goals=self.goals, query_writer=self.query_writer, rerank=self.rerank,
            pool=self.stage_pool, admission=self.admission, trace_vectors=self._trace_vectors,
            settings_for=self.settings_for, understander_for=self.understander_for,
            warm_up=lambda: self.warming.ensure(self.warmup), single_pass=self.single_pass))

    def warmup(self) -> dict[str, float]:
        """Load the models and caches now (first-call costs), side by side.

        Returns:
            Each part's own wall time in ms (:func:`~hopweave.engine.warmup.warm_parts`).

        Raises:
            What a part raises (a request's own warm-up leaves it to the stage that meets it).
        """
        self.warming.mark_warm()
        stages = [self._understander] if self._understander is not None else [
            self.understanders(s) for s in (self.domains.domains() if self.domains else [])]
        return warm_parts(lambda: self.embedder, stages, self.graph, self.index, self.counter, self.goals)

    # ---- retrieval -----------------------------------------------------------------------
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
            InputError: a malformed argument (see :mod:`hopweave.engine.boundary`).
            TenantError: a missing, malformed or unserved tenant.
            ConfigError: the engine has no domain settings.
        """
        t0 = time.perf_counter()  # the budget runs from the call, whatever waits after it
        req = check_request(utterance, session=session, as_of=as_of, budget_ms=budget_ms, profile=profile,
                            token_budget=token_budget, record=record, pattern_overrides=pattern_overrides,
                            caller=caller)
        return multi_intent.retrieve(self.pipeline(), req, t0)

    async def aretrieve(self, utterance: str, *, arrived: float | None = None, shed: bool = False,
                        **kwargs: Any) -> RetrievalResult:
        """Async :meth:`retrieve` (same boundary and core, run on the engine's request pool).

        Time spent queued counts, so a burst returns degraded results within budget rather than
        late ones: a request still queued for a worker when only its finish reserve
        (:meth:`finish_reserve_ms`) is left is answered degraded at once (or, with ``shed``,
        refused).

        Args:
            utterance: as :meth:`retrieve`.
            arrived: when the caller's request arrived (a ``time.perf_counter()`` instant, e.g.
                at an HTTP server); the budget runs from it (default: this call).
            shed: refuse rather than answer degraded when no worker or request slot is free in
                time (nothing is recorded for it; the caller retries).
            **kwargs: the other arguments of :meth:`retrieve`.

        Returns:
            RetrievalResult, as :meth:`retrieve`.

        Raises:
            OverloadedError: with ``shed``, no worker or request slot in time.
            InputError, TenantError, ConfigError: as :meth:`retrieve`.
        """
        t0 = time.perf_counter() if arrived is None else arrived
        req = check_request(utterance, **kwargs)
        loop = asyncio.get_running_loop()
        ticket = Ticket()
        work = loop.run_in_executor(self.request_pool, ticket.wrap(
            functools.partial(multi_intent.retrieve, self.pipeline(), req, t0, shed)))
        if self.warming.warm:  # (the first request warms the engine, outside any budget)
            budget_s = (req.budget_ms or self.config.budget_ms) / 1000.0
            wait = budget_s - self.finish_reserve_ms(budget_s * 1000) / 1000.0 - (time.perf_counter() - t0)
            done, _ = await asyncio.wait({work}, timeout=max(wait, 0.0))
            if not done and ticket.abandon():  # still queued for a worker: answer degraded (or shed), now
                if shed:
                    raise self.admission.overloaded(req.budget_ms, "no worker took the request before its deadline")
                return multi_intent.retrieve(self.pipeline(), req, t0)
        result = await work  # started: its stages end at its deadline
        assert result is not None  # only an abandoned ticket returns None, and that was not awaited
        return result

    def record_outcome(self, trace_id: str, *, session: Any, outcome: str, decided_by: str | None = None,
                       rationale: str | None = None, cited: Sequence[str] = (), as_of: Any = None) -> "OutcomeRecord":
        """Record what was decided on a retrieval
        (:meth:`hopweave.engine.outcomes.OutcomeRecorder.record`: gates, idempotence, versions).

        Args:
            trace_id: the retrieval's trace id.
            session: the deciding session (its tenant must own the trace).
            outcome: one of the goal's declared outcomes.
            decided_by: who decided.
            rationale: why.
            cited: the ids the decision cites (among what the trace saw).
            as_of: when it was decided (default now).

        Returns:
            The recorded outcome.

        Raises:
            What :meth:`~hopweave.engine.outcomes.OutcomeRecorder.record` raises (InputError,
            TenantError, an unknown trace or outcome).
        """
        return self.outcomes.record(trace_id, session=session, outcome=outcome, decided_by=decided_by,
                                    rationale=rationale, cited=cited, as_of=as_of)

    def write_facts(self, tenant: str, nodes: Sequence[Any] = (), edges: Sequence[Any] = (), *,
                    source: str) -> "FactWriteResult":
        """Upsert a system of record's nodes and edges (:meth:`hopweave.engine.facts.FactWriter.write`).

        Args:
            tenant: the tenant the records belong to.
            nodes: the nodes to upsert.
            edges: the edges to upsert.
            source: the system of record (stamped ``recorded_by``; ``recorded_at`` is now).

        Returns:
            What was written (all or nothing).

        Raises:
            What :meth:`~hopweave.engine.facts.FactWriter.write` raises (a record that fails the
            schema or the write rules; nothing is written then).
        """
        from hopweave.engine.facts import FactWriter

        return FactWriter(self.graph, self.trace_writer).write(tenant, nodes, edges, source=source)

    def retrieve_request(self, req: Request, t0: float, shed: bool = False) -> RetrievalResult:
        """:meth:`retrieve` of a request already checked, whose budget runs from ``t0``: a
        request that waited elsewhere first, e.g. in an engine pool's hand-off
        (:mod:`hopweave.adapters.pool`).

        Args:
            req: the checked request (:func:`~hopweave.engine.boundary.check_request`).
            t0: when its budget started (``time.perf_counter()`` clock).
            shed: refuse rather than answer degraded when no request slot freed up in time.

        Returns:
            RetrievalResult, as :meth:`retrieve`.

        Raises:
            OverloadedError: with ``shed``, no request slot before the deadline.
            TenantError, ConfigError: as :meth:`retrieve`.
        """
        return multi_intent.retrieve(self.pipeline(), req, t0, shed)

    def finish_reserve_ms(self, budget_ms: float) -> float:
        """The end of a budget kept for finishing a request that did no work
        (:meth:`~hopweave.engine.admission.Admission.finish_reserve_ms`).

        Args:
            budget_ms: the request's budget.

        Returns:
            The reserve in ms; a request not started by then is answered degraded (or shed).
        """
        return self.admission.finish_reserve_ms(budget_ms)

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
        if self.warming.ensure(self.warmup) is not None:  # a cold engine warms outside any budget
            arrived = None
        with self.admission.admitted(budget_ms, arrived=arrived, kind=kind) as deadline:
            yield deadline
