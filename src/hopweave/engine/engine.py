"""The compositional engine's facade: :class:`Engine` opens the stores, owns the pools, caches,
admission (:mod:`~hopweave.engine.admission`) and warm-up (:mod:`~hopweave.engine.warmup`), and
hands each request to a :class:`~hopweave.engine.pipeline.Pipeline` (the stages, their fallbacks
and concurrency) over a :class:`~hopweave.engine.deps.StageDeps` snapshot of its parts.
:meth:`Engine.aretrieve` runs the synchronous core on a request pool of its own
(:mod:`~hopweave.engine.request_queue`), so the event loop never blocks."""

from __future__ import annotations

import functools
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from hopweave.engine import multi_intent
from hopweave.engine.admission import Admission
from hopweave.engine.boundary import Request, check_request
from hopweave.engine.config import EngineConfig, engine_config
from hopweave.engine.deps import GoalCache, StageDeps, UnderstanderCache
from hopweave.engine.facts import FactWriter
from hopweave.engine.opening import open_parts
from hopweave.engine.outcomes import OutcomeRecorder
from hopweave.engine.pipeline import Pipeline
from hopweave.engine.precedent import TraceVectorCache
from hopweave.engine.query_vectors import SharedEmbedder, shared_embedder
from hopweave.engine.request_queue import retrieve_queued
from hopweave.engine.result import RetrievalResult
from hopweave.engine.stages import DocumentIndex, default_embedder
from hopweave.engine.tokens import TokenCounter, default_counter
from hopweave.engine.trace_writer import GroupCommitter
from hopweave.engine.warmup import WarmUp, warm_parts
from hopweave.errors import ConfigError
from hopweave.graph.base import GraphStore
from hopweave.models.common import Session
from hopweave.models.domain import DomainRegistry, DomainSettings
from hopweave.search.embedder import Embedder
from hopweave.search.text_vectors import vectors_dir
from hopweave.stores.front import close_quietly
from hopweave.understand.understander import UnderstandingStage

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.round_query import QueryWriter
    from hopweave.models.store_settings import StoreSettings
    from hopweave.stores.front import Stores

__all__ = ["Engine", "EngineConfig"]


class Engine:
    """Compositional retrieval over one graph store and one vector index. The constructor does
    no I/O: use :meth:`open` for stores named by URI, or pass stores built by hand.

    Args:
        graph: the graph store. index: the document index (None: graph-only context).
        domains: which domain serves each tenant. embedder: default the bundled model.
        understander: one understanding stage for every domain (default: one per domain).
        config: budgets and thresholds (an EngineConfig or a mapping of its fields).
        counter: the token counter. store_dir: the embedded store directory. settings: the
            store's settings (classifier settings and calibration per domain).

    Raises:
        ConfigError: ``config`` names an unknown field or an invalid value.
    """

    #: An application's writer of later rounds' queries (e.g. its LLM); None: deterministic.
    query_writer: "QueryWriter | None" = None
    #: True: no later rounds and no intent split (the single-pass baseline of `eval scenarios`).
    single_pass: bool = False
    #: Reranker for every goal ("bi_encoder", "cross_encoder", "none"); None: each goal's own.
    rerank: str | None = None

    def __init__(self, graph: GraphStore, index: DocumentIndex | None = None, *,
                 domains: DomainRegistry | None = None, embedder: Embedder | None = None,
                 understander: UnderstandingStage | None = None, config: EngineConfig | None = None,
                 counter: TokenCounter | None = None, store_dir: str | Path | None = None,
                 settings: "StoreSettings | None" = None) -> None:
        self.graph, self.index, self.domains, self.config = graph, index, domains, engine_config(config)
        self._embedder, self._understander, self._counter = embedder, understander, counter
        self.store_dir = Path(store_dir) if store_dir is not None else None
        self.store_settings = settings  #: classifier settings and calibration per domain; None: defaults
        #: Every request's concurrent stages; ``aretrieve``'s requests (a request blocks on its stages).
        self.stage_pool = ThreadPoolExecutor(max_workers=self.config.max_workers, thread_name_prefix="hopweave-engine")
        self.request_pool = ThreadPoolExecutor(max_workers=self.config.max_requests,
                                               thread_name_prefix="hopweave-request")
        self.trace_writer = GroupCommitter(graph, min_write_s=self.config.record_min_ms / 1000.0)
        self.admission = Admission(self.config)  #: request slots, reserves and clocks
        self.warming = WarmUp()  #: whether the engine is warm
        self.goals = GoalCache(graph)  #: ``goals()``: the metagraph's goal types and patterns
        self.understanders = UnderstanderCache(graph, lambda: self.embedder, settings, self.store_dir)
        self.outcomes = OutcomeRecorder(graph, lambda: self.goals().goals, lambda t: self.settings_for(t).subject,
                                        self.trace_writer)  #: recorded outcomes (the trace group commit)
        self.record_outcome = self.outcomes.record  #: what was decided (:meth:`OutcomeRecorder.record`)
        self.write_facts = FactWriter(graph, self.trace_writer).write  #: run-time facts (:meth:`FactWriter.write`)
        self._trace_vectors = TraceVectorCache(vectors_dir(self.store_dir) if self.store_dir is not None else None)
        self._closed = False

    @classmethod
    def open(cls, stores: "str | Path | Stores | None" = None, *, graph: "GraphStore | str | None" = None,
             vectors: "str | Path | None" = None, index: DocumentIndex | None = None,
             domains: DomainRegistry | None = None, embedder: Embedder | None = None,
             understander: UnderstandingStage | None = None, config: EngineConfig | None = None) -> "Engine":
        """Open an engine on stores named by URI (see :func:`hopweave.open`): a store directory,
        ``graph="neo4j://db:7687", vectors="http://qdrant:6333"``, or none ($HOPWEAVE_GRAPH).

        Args:
            stores: a store directory or graph URI, or open :class:`~hopweave.stores.Stores`.
            graph: a graph URI, or a :class:`GraphStore` (with ``index``: stores built by hand).
            vectors: the vectors URI (default as :func:`hopweave.open`). index: overrides it.
            domains: which domain serves each tenant (default: the store's own settings).
            embedder, understander, config: as the constructor.

        Returns:
            The engine (close it, or use it as a context manager).

        Raises:
            InputError: conflicting arguments. StoreNotLoadedError: a server store never loaded
            from a pack, without ``domains``. The errors of :func:`hopweave.open`.
        """
        cfg = engine_config(config)
        p = open_parts(stores, graph, vectors, index, domains, cfg, prefetch_encoder=embedder is None)
        return cls(p.graph, p.index, domains=p.domains, embedder=embedder, understander=understander, config=cfg,
                   store_dir=p.store_dir, settings=p.settings)

    def sibling(self, *, index: DocumentIndex | None, understander: UnderstandingStage | None,
                config: EngineConfig | None = None) -> "Engine":
        """An engine on the same graph, domains and caches with another index and/or
        understanding stage (fault injection in replays), with its own pools and request slots.

        Args:
            index: its vector index. understander: its understanding stage (None: this one's).
            config: its budgets (None: this engine's).

        Returns:
            The sibling; close it with :meth:`close_pools` (the stores stay open).

        Raises:
            ConfigError: ``config`` is a mapping with an unknown field or an invalid value.
        """
        e = Engine(self.graph, index, domains=self.domains, embedder=self._embedder,
                   understander=understander or self._understander, config=config or self.config,
                   counter=self._counter, store_dir=self.store_dir, settings=self.store_settings)
        e.understanders, e.goals, e._trace_vectors = self.understanders, self.goals, self._trace_vectors
        e.trace_writer, e.outcomes = self.trace_writer, self.outcomes
        e.record_outcome, e.write_facts = self.record_outcome, self.write_facts
        if self.warming.warm:
            e.warming.mark_warm()
        return e

    def close_pools(self) -> None:
        """Stop this engine's thread pools without closing its (shared) stores. Never raises."""
        for pool in (self.stage_pool, self.request_pool):
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Write the queued traces, stop the pools and close the stores (idempotent).
        Never raises: a store that fails to close is left as it is."""
        if not self._closed:
            self._closed = True
            self.trace_writer.close()  # queued traces are written before the store closes
            self.close_pools()
            close_quietly(self.index, self.graph)

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def embedder(self) -> Embedder:
        """The embedder behind the request memo and the store's cached question vectors (the
        bundled model, loaded on first use, when none was given; EmbedderError if it cannot be)."""
        if not isinstance(self._embedder, SharedEmbedder):
            self._embedder = shared_embedder(self._embedder or default_embedder(), self.store_dir)
        return self._embedder

    @functools.cached_property
    def counter(self) -> TokenCounter:
        """The context's token counter (the bundled WordPiece counter when none was given)."""
        return default_counter() if self._counter is None else self._counter

    def settings_for(self, tenant_id: str) -> DomainSettings:
        """The domain settings serving a tenant.

        Args:
            tenant_id: the tenant of a session.

        Returns:
            The settings of the domain that serves it.

        Raises:
            TenantError: no domain serves it. ConfigError: the engine has no domain settings.
        """
        if self.domains is None:
            raise ConfigError("the engine has no domain settings: pass domains=DomainRegistry(...) to Engine / "
                              "Engine.open, or load the store with `hopweave load PACK`")
        return self.domains.for_tenant(tenant_id)

    def understander_for(self, settings: DomainSettings) -> UnderstandingStage:
        """The understanding stage of one domain (given its settings, :meth:`settings_for`).

        Args:
            settings: the domain's settings.

        Returns:
            The engine-wide stage when one was given, else the domain's own (built once).

        Raises:
            ConfigError: the domain's classifier settings are unusable.
        """
        return self._understander if self._understander is not None else self.understanders(settings)

    def pipeline(self) -> Pipeline:
        """What one request runs on.

        Returns:
            A pipeline over a snapshot of this engine's parts (its hooks ``query_writer``,
            ``rerank`` and ``single_pass`` are read now).

        Raises:
            EmbedderError: the bundled embedding model cannot be loaded.
        """
        return Pipeline(StageDeps(
            graph=self.graph, index=self.index, embedder=self.embedder, counter=self.counter, config=self.config,
            trace_writer=self.trace_writer, goals=self.goals, query_writer=self.query_writer, rerank=self.rerank,
            pool=self.stage_pool, admission=self.admission, trace_vectors=self._trace_vectors,
            settings_for=self.settings_for, understander_for=self.understander_for,
            warm_up=lambda: self.warming.ensure(self.warmup), single_pass=self.single_pass))

    def warmup(self) -> dict[str, float]:
        """Load the models and caches now, side by side.

        Returns:
            Each part's wall time in ms (:func:`~hopweave.engine.warmup.warm_parts`).

        Raises:
            HopweaveError: what a part raises while loading (a missing model, a store error).
        """
        self.warming.mark_warm()
        stages = [self._understander] if self._understander is not None else [
            self.understanders(s) for s in (self.domains.domains() if self.domains else [])]
        return warm_parts(lambda: self.embedder, stages, self.graph, self.index, self.counter, self.goals)

    def retrieve(self, utterance: str, *, session: Session | Mapping[str, Any],
                 as_of: datetime | date | str | None = None, budget_ms: int | None = None,
                 profile: str | None = None, token_budget: int | None = None, record: bool | None = None,
                 pattern_overrides: Mapping[str, Mapping[str, Any]] | None = None,
                 caller: str | None = None) -> RetrievalResult:
        """Retrieve the working set for one utterance of an authenticated session.

        Args:
            utterance: what the customer (or agent) said (at most 4,000 characters).
            session: the authenticated session (a Session or a mapping of its fields); its
                tenant scopes everything and selects the domain.
            as_of: the instant the case is evaluated at (ISO string, date or datetime); pass it
                for replayable runs (None: now, flagged ``as_of_defaulted``).
            budget_ms: wall-clock budget (default ``config.budget_ms``), >= 1.
            profile: a published ranking profile. token_budget: the context's tokens, >= 1.
            record: write a DecisionTrace (default ``config.record``).
            pattern_overrides: per-pattern field overrides for what-if replays (e.g.
                ``{"recent_payments": {"max_visited": 3}}``), each checked by the gates.
            caller: who asked (a verified token subject or key id, never a credential),
                recorded on the decision trace and part of its id; None in process.

        Returns:
            RetrievalResult; a failing stage is a degradation in it, never an exception.

        Raises:
            InputError: a malformed argument (see :mod:`hopweave.engine.boundary`).
            TenantError: a missing, malformed or unserved tenant. ConfigError: no domain settings.
        """
        t0 = time.perf_counter()  # the budget runs from the call, whatever waits after it
        req = check_request(utterance, session=session, as_of=as_of, budget_ms=budget_ms, profile=profile,
                            token_budget=token_budget, record=record, pattern_overrides=pattern_overrides,
                            caller=caller)
        return multi_intent.retrieve(self.pipeline(), req, t0)

    async def aretrieve(self, utterance: str, *, arrived: float | None = None, shed: bool = False,
                        **kwargs: Any) -> RetrievalResult:
        """Async :meth:`retrieve` on the request pool. Time queued counts: a request still queued
        at its finish reserve is answered degraded at once (or refused, with ``shed``).

        Args:
            utterance: as :meth:`retrieve`. **kwargs: its other arguments.
            arrived: when the caller's request arrived (``time.perf_counter()``; default now).
            shed: refuse rather than answer degraded without a worker or slot in time.

        Returns:
            RetrievalResult, as :meth:`retrieve`.

        Raises:
            OverloadedError: with ``shed``. InputError, TenantError, ConfigError: as :meth:`retrieve`.
        """
        t0 = time.perf_counter() if arrived is None else arrived
        req = check_request(utterance, **kwargs)
        return await retrieve_queued(self.pipeline, self.request_pool, self.admission, req, t0, shed=shed,
                                     warm=self.warming.warm)

    def retrieve_request(self, req: Request, t0: float, shed: bool = False) -> RetrievalResult:
        """:meth:`retrieve` of a request already checked, e.g. after an engine pool's hand-off.

        Args:
            req: the checked request (:func:`~hopweave.engine.boundary.check_request`).
            t0: when its budget started (``time.perf_counter()``).
            shed: refuse rather than answer degraded without a request slot in time.

        Returns:
            RetrievalResult, as :meth:`retrieve`.

        Raises:
            OverloadedError: with ``shed``, no request slot in time. As :meth:`retrieve`.
        """
        return multi_intent.retrieve(self.pipeline(), req, t0, shed)

    def finish_reserve_ms(self, budget_ms: float) -> float:
        """The end of a budget kept for finishing a request that did no work (:meth:`Admission.
        finish_reserve_ms <hopweave.engine.admission.Admission.finish_reserve_ms>`). Never raises.

        Args:
            budget_ms: the request's budget.

        Returns:
            The reserve in ms (more while more requests are in flight).
        """
        return self.admission.finish_reserve_ms(budget_ms)

    def admitted(self, budget_ms: int | None = None, *, arrived: float | None = None,
                 kind: str = "call") -> AbstractContextManager[float]:
        """One request slot for work outside :meth:`retrieve` (the agent tool's search), under the
        same admission (:meth:`Admission.admitted <hopweave.engine.admission.Admission.admitted>`);
        a cold engine warms up first, outside the budget.

        Args:
            budget_ms: the call's budget. arrived: when it arrived. kind: its kind of work.

        Returns:
            A context manager holding the slot; it yields the call's deadline (perf_counter).

        Raises:
            OverloadedError: no slot freed up in time (the caller retries), on entering it.
        """
        if self.warming.ensure(self.warmup) is not None:  # a cold engine warms outside any budget
            arrived = None
        return self.admission.admitted(budget_ms, arrived=arrived, kind=kind)
