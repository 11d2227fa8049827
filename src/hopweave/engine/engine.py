"""The compositional engine's facade: :class:`Engine` opens the stores, owns the pools, caches,
admission (:mod:`hopweave.engine.admission`) and warm-up (:mod:`hopweave.engine.warmup`), and hands
each request to a :class:`~hopweave.engine.pipeline.Pipeline` over a
:class:`~hopweave.engine.deps.StageDeps` snapshot of its parts (the stages, their fallbacks and
the concurrency are described in :mod:`hopweave.engine.pipeline`). :meth:`Engine.retrieve` is a
synchronous core; :meth:`Engine.aretrieve` runs it on a separate request pool, so the event loop
never blocks and a burst cannot occupy every stage worker while waiting for its own stages.
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
from hopweave.engine.opening import open_parts
from hopweave.engine.pipeline import Pipeline
from hopweave.engine.precedent import TraceVectorCache
from hopweave.engine.query_vectors import SharedEmbedder
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
    """Compositional retrieval over one graph store and one vector index. The constructor does
    no I/O: use :meth:`open` for stores named by URI, or pass stores built by hand.

    Args:
        graph: the graph store. index: the document index (None: graph-only context).
        domains: which domain serves each tenant. embedder: default the bundled model.
        understander: one understanding stage for every domain (default: one per domain).
        config: budgets and thresholds (an EngineConfig or a mapping of its fields).
        counter: the context's token counter. store_dir: the embedded store directory.
        settings: the store's settings (classifier settings and calibration per domain).

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
        from hopweave.engine.outcomes import OutcomeRecorder

        self.graph, self.index, self.domains, self.config = graph, index, domains, engine_config(config)
        self._embedder, self._understander, self._counter = embedder, understander, counter
        self.store_dir = Path(store_dir) if store_dir is not None else None
        self.store_settings = settings  #: classifier settings and calibration per domain; None: defaults
        #: The stage pool (every request's concurrent stages) and the pool ``aretrieve`` runs
        #: requests on (never the stage pool: a request blocks on its stage futures).
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
        self._trace_vectors = TraceVectorCache(vectors_dir(self.store_dir) if self.store_dir is not None else None)
        self._closed = False

    @classmethod
    def open(cls, stores: "str | Path | Stores | None" = None, *, graph: "GraphStore | str | None" = None,
             vectors: "str | Path | None" = None, index: DocumentIndex | None = None,
             domains: DomainRegistry | None = None, embedder: Embedder | None = None,
             understander: UnderstandingStage | None = None, config: EngineConfig | None = None) -> "Engine":
        """Open an engine on stores named by URI (see :func:`hopweave.open`)::

            Engine.open(".hopweave/store")                             # the embedded store directory
            Engine.open(graph="neo4j://db:7687", vectors="http://qdrant:6333")
            Engine.open()                                               # $HOPWEAVE_GRAPH / $HOPWEAVE_VECTORS

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
        """
        e = Engine(self.graph, index, domains=self.domains, embedder=self._embedder,
                   understander=understander or self._understander, config=config or self.config,
                   counter=self._counter, store_dir=self.store_dir, settings=self.store_settings)
        e.understanders, e.goals, e._trace_vectors = self.understanders, self.goals, self._trace_vectors
        e.trace_writer, e.outcomes = self.trace_writer, self.outcomes
        if self.warming.warm:
            e.warming.mark_warm()
        return e

    def close_pools(self) -> None:
        """Stop this engine's thread pools without closing its (shared) stores."""
        for pool in (self.stage_pool, self.request_pool):
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Write the queued traces, stop the pools and close the stores (idempotent)."""
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
        """The embedder (the default one built on first use), sharing a request's query vectors
        and the store's cached question vectors."""
        if self._embedder is None:
            self._embedder = default_embedder()
        if not isinstance(self._embedder, SharedEmbedder):
            self._embedder = SharedEmbedder(self._embedder, TextVectorCache(
                vectors_dir(self.store_dir) if self.store_dir is not None else None, "questions"))
        return self._embedder

    @property
    def counter(self) -> TokenCounter:
        """The context's token counter (the default one built on first use)."""
        if self._counter is None:
            self._counter = default_counter()
        return self._counter

    def settings_for(self, tenant_id: str) -> DomainSettings:
        """The domain settings serving ``tenant_id``.

        Raises:
            TenantError: no domain serves it. ConfigError: the engine has no domain settings.
        """
        if self.domains is None:
            raise ConfigError("the engine has no domain settings: pass domains=DomainRegistry(...) to Engine / "
                              "Engine.open, or load the store with `hopweave load PACK`")
        return self.domains.for_tenant(tenant_id)

    def understander_for(self, settings: DomainSettings) -> UnderstandingStage:
        """The understanding stage of one domain: the engine-wide one when given, else the
        domain's own (built once). Raises ConfigError for unusable classifier settings."""
        return self._understander if self._understander is not None else self.understanders(settings)

    def pipeline(self) -> Pipeline:
        """A pipeline over a snapshot of this engine's parts (its hooks ``query_writer``,
        ``rerank`` and ``single_pass`` read now): what one request runs on."""
        return Pipeline(StageDeps(
            graph=self.graph, index=self.index, embedder=self.embedder, counter=self.counter, config=self.config,
            trace_writer=self.trace_writer, goals=self.goals, query_writer=self.query_writer, rerank=self.rerank,
            pool=self.stage_pool, admission=self.admission, trace_vectors=self._trace_vectors,
            settings_for=self.settings_for, understander_for=self.understander_for,
            warm_up=lambda: self.warming.ensure(self.warmup), single_pass=self.single_pass))

    def warmup(self) -> dict[str, float]:
        """Load the models and caches now, side by side. Returns each part's wall time in ms
        (:func:`~hopweave.engine.warmup.warm_parts`); raises what a part raises."""
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
            profile: a published ranking profile name for the document search.
            token_budget: the context block's token budget, >= 1.
            record: write a DecisionTrace (default ``config.record``).
            pattern_overrides: per-pattern field overrides for what-if replays (e.g.
                ``{"recent_payments": {"max_visited": 3}}``), each checked by the gates.
            caller: who asked (a verified token subject or key id, never a credential),
                recorded on the decision trace and part of its id; None in process.

        Returns:
            RetrievalResult; a failing stage is a degradation in it, never an exception.

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
        """Async :meth:`retrieve` (same boundary and core, on the request pool). Time queued
        counts: a request still queued when only its finish reserve (:meth:`finish_reserve_ms`)
        is left is answered degraded at once (or refused, with ``shed``).

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

    def retrieve_request(self, req: Request, t0: float, shed: bool = False) -> RetrievalResult:
        """:meth:`retrieve` of a request already checked whose budget runs from ``t0``
        (``time.perf_counter()``), e.g. after an engine pool's hand-off.

        Raises:
            OverloadedError: with ``shed``, no request slot in time. As :meth:`retrieve`.
        """
        return multi_intent.retrieve(self.pipeline(), req, t0, shed)

    def finish_reserve_ms(self, budget_ms: float) -> float:
        """The end of ``budget_ms`` kept for finishing a request that did no work, in ms
        (:meth:`Admission.finish_reserve_ms <hopweave.engine.admission.Admission.finish_reserve_ms>`)."""
        return self.admission.finish_reserve_ms(budget_ms)

    @contextmanager
    def admitted(self, budget_ms: int | None = None, *, arrived: float | None = None,
                 kind: str = "call") -> Iterator[float]:
        """One request slot for work outside :meth:`retrieve` (the agent tool's search), under
        the same admission (:meth:`Admission.admitted <hopweave.engine.admission.Admission.admitted>`);
        a cold engine warms up first, outside the budget.

        Args:
            budget_ms: the call's budget. arrived: when it arrived. kind: its kind of work.

        Yields:
            The call's deadline (``time.perf_counter()`` clock).

        Raises:
            OverloadedError: no slot freed up in time (the caller retries).
        """
        if self.warming.ensure(self.warmup) is not None:  # a cold engine warms outside any budget
            arrived = None
        with self.admission.admitted(budget_ms, arrived=arrived, kind=kind) as deadline:
            yield deadline

    def record_outcome(self, trace_id: str, *, session: Any, outcome: str, decided_by: str | None = None,
                       rationale: str | None = None, cited: Sequence[str] = (), as_of: Any = None) -> "OutcomeRecord":
        """Record what was decided on the retrieval ``trace_id`` (gated, idempotent, amendable:
        :meth:`OutcomeRecorder.record <hopweave.engine.outcomes.OutcomeRecorder.record>`, whose
        arguments these are). Returns the recorded outcome; raises what it raises."""
        return self.outcomes.record(trace_id, session=session, outcome=outcome, decided_by=decided_by,
                                    rationale=rationale, cited=cited, as_of=as_of)

    def write_facts(self, tenant: str, nodes: Sequence[Any] = (), edges: Sequence[Any] = (), *,
                    source: str) -> "FactWriteResult":
        """Upsert a system of record's nodes and edges for ``tenant``, all or nothing, stamped
        ``recorded_at`` / ``recorded_by`` = ``source`` (:meth:`FactWriter.write
        <hopweave.engine.facts.FactWriter.write>`). Returns what was written; raises what it raises."""
        from hopweave.engine.facts import FactWriter

        return FactWriter(self.graph, self.trace_writer).write(tenant, nodes, edges, source=source)
