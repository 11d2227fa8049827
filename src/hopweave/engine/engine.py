"""The compositional engine: understand -> (search || traverse) -> precedent -> assemble -> record.

One source of truth for concurrency: :meth:`Engine.retrieve` is a synchronous core; the document
search and the graph patterns run concurrently on the engine's thread pool; :meth:`aretrieve`
runs the same core on a separate request pool (``loop.run_in_executor``), so the event loop never
blocks and a burst of requests cannot occupy every stage worker while waiting for its own stages.

Every stage has a timeout, a fallback and a threshold, and nothing is dropped silently:

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
record        write failure                                result returned, trace not recorded
============  ==========================================  =========================================

``as_of``: a replayable run needs an explicit ``as_of``. When omitted, the engine uses the current
UTC time truncated to the second, records it on the result and the trace, and sets
``as_of_defaulted`` so callers know to pass it back to reproduce the run.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from hopweave.engine import precedent as prec
from hopweave.engine import record as rec
from hopweave.engine import stack
from hopweave.engine.assemble import assemble
from hopweave.engine.plan import Plan, build_plan, case_text_for, chunk_items, precedent_patterns
from hopweave.engine.result import ChunkItem, Degradation, RetrievalResult
from hopweave.engine.tokens import TokenCounter, default_counter
from hopweave.errors import HopweaveError, InputError, TenantError
from hopweave.graph.base import GraphStore
from hopweave.models.common import Bindings, PatternResult, Session, to_datetime
from hopweave.models.filters import to_display
from hopweave.models.metagraph import GoalType, TraversalPattern

@dataclass(frozen=True)
class EngineConfig:
    """Budgets and thresholds (plain data; every field can be overridden per request)."""

    #: Wall-clock budget of one retrieval, split across stages below.
    budget_ms: int = 800
    #: Fraction of the budget the understanding stage may take.
    understand_share: float = 0.35
    #: Minimum goal confidence to run the goal's plan (else the fallback plan + clarify). Stricter
    #: than the classifier's own abstain threshold: running a wrong goal's patterns pulls
    #: unrelated customer facts into the context (see docs/benchmarks/engine.md).
    min_confidence: float = 0.75
    token_budget: int = 2000
    search_limit: int = 10
    #: Ranking profile used when neither the request nor the goal names one.
    default_profile: str | None = None
    #: Multiplier on each pattern's own budget_ms (replays use a large one so a busy machine
    #: cannot truncate a walk by time; max_visited cuts stay deterministic).
    pattern_budget_scale: float = 1.0
    provenance_inline: bool = True
    record: bool = True
    max_workers: int = 8


class Engine:
    """Compositional retrieval over one graph store and one vector index.

    The constructor does no I/O. Use :meth:`open` for a store directory (the embedded default),
    or pass server-backed stores (any :class:`GraphStore` / ``VectorIndex``) directly.
    """

    def __init__(
        self,
        graph: GraphStore,
        index: Any | None = None,
        *,
        embedder: Any | None = None,
        understander: Any | None = None,
        config: EngineConfig | None = None,
        counter: TokenCounter | None = None,
        store_dir: str | Path | None = None,
    ) -> None:
        self.graph = graph
        self.index = index
        self._embedder = embedder
        self._understander = understander
        self.config = config or EngineConfig()
        self._counter = counter
        self.store_dir = Path(store_dir) if store_dir is not None else None
        self._pool = ThreadPoolExecutor(max_workers=self.config.max_workers, thread_name_prefix="hopweave-engine")
        # aretrieve's requests run here, never on _pool: a request blocks on its stage futures, so
        # requests on the stage pool would starve it (issue 7: 100 concurrent aretrieve = timeouts).
        self._request_pool = ThreadPoolExecutor(max_workers=self.config.max_workers,
                                                thread_name_prefix="hopweave-request")
        self._lock = threading.Lock()
        self._goal_cache: tuple[str, dict[str, GoalType], dict[str, list[TraversalPattern]]] | None = None
        self._trace_vectors = prec.TraceVectorCache()
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
        index: Any | None = None,
        embedder: Any | None = None,
        understander: Any | None = None,
        config: EngineConfig | None = None,
    ) -> "Engine":
        """Open the embedded store in ``store_dir`` (``<dir>/graph``, ``<dir>/vectors``), or use
        the given ``graph`` / ``index`` instances (server stores). Raises StoreError /
        StoreCorruptError for an unreadable store, InputError when neither is given."""
        if graph is None:
            if store_dir is None:
                raise InputError("Engine.open needs a store directory or a GraphStore instance")
            graph = stack.open_graph(store_dir)
        if index is None and store_dir is not None:
            index = stack.open_index(store_dir, graph.schema)
        return cls(graph, index, embedder=embedder, understander=understander, config=config, store_dir=store_dir)

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            self._embedder = stack.default_embedder()
        return self._embedder

    @property
    def understander(self) -> Any:
        if self._understander is None:
            with self._lock:
                if self._understander is None:
                    self._understander = stack.make_understander(self.graph, self.embedder)
        return self._understander

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
        out["embedder"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        stack.warm_understander(self.understander)
        out["understander"] = (time.perf_counter() - t) * 1000
        if self.index is not None:
            t = time.perf_counter()
            stack.warm_index(self.index, self.embedder)
            out["vector_index"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        self.counter.count("warm up")
        self._goals()
        out["tokenizer_and_metagraph"] = (time.perf_counter() - t) * 1000
        return {k: round(v, 1) for k, v in out.items()}

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._request_pool.shutdown(wait=False, cancel_futures=True)
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
        rev = self._goals()[0]
        return f"{rev}:{stack.index_revision(self.index)}"

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
    ) -> RetrievalResult:
        """Retrieve the working set for one utterance of an authenticated session.

        Args:
            utterance: what the customer (or agent) said.
            session: the authenticated session (its tenant scopes everything).
            as_of: the instant the case is evaluated at (relative times in patterns, precedent
                cut-off). Pass it for replayable runs; None = now (recorded, flagged).
            budget_ms: wall-clock budget (default ``config.budget_ms``).
            profile: ranking profile name for the document search.
            token_budget: the context block's token budget.
            record: write a DecisionTrace (default ``config.record``).
            pattern_overrides: per-pattern field overrides (e.g. ``{"recent_payments":
                {"max_visited": 3}}``) for what-if replays; recorded via pattern versions only.

        Returns:
            RetrievalResult. Never raises for a failing stage (see the module docstring).

        Raises:
            InputError for an empty utterance or a malformed session / as_of; TenantError.
        """
        if not isinstance(utterance, str) or not utterance.strip():
            raise InputError("utterance must be a non-empty string")
        warm_ms = self._ensure_warm()
        t_start = time.perf_counter()
        sess = session if isinstance(session, Session) else _session(session)
        as_of_dt = to_datetime(as_of) if as_of is not None else datetime.now(timezone.utc).replace(
            tzinfo=None, microsecond=0)
        assert as_of_dt is not None
        budget = budget_ms or self.config.budget_ms
        deadline = t_start + budget / 1000.0
        degraded: list[Degradation] = []
        timings: dict[str, float] = {}

        # 1. understand --------------------------------------------------------------------
        t = time.perf_counter()
        plan = self._understand(utterance, sess, as_of_dt, t + budget * self.config.understand_share / 1000.0,
                                degraded, profile)
        timings["understand"] = _ms(t)
        if pattern_overrides:
            plan.patterns = [p.model_copy(update=dict(pattern_overrides[p.name])) if p.name in pattern_overrides
                             else p for p in plan.patterns]
        if self.config.pattern_budget_scale != 1.0:
            plan.patterns = [p.model_copy(update={"budget_ms": max(1, int(p.budget_ms * self.config.pattern_budget_scale))})
                             for p in plan.patterns]
        bindings = Bindings(session=sess, as_of=as_of_dt, goal=plan.goal.name if plan.goal else None,
                            entities={k: v for k, v in plan.entity_values.items() if isinstance(v, (str, int, float, bool))})

        # 2. search || traverse -------------------------------------------------------------
        t = time.perf_counter()
        f_search: Future[Any] | None = None
        if self.index is not None:
            f_search = self._pool.submit(self._search, sess.tenant_id, plan)
        else:
            degraded.append(Degradation(stage="search", what="policy chunks", reason="no vector index is configured",
                                        fallback="graph-only context"))
        f_trav: Future[tuple[list[PatternResult], list[Any], list[Degradation], float]] | None = None
        if plan.patterns:
            f_trav = self._pool.submit(self._graph_branch, sess.tenant_id, plan, bindings, utterance, as_of_dt)
        chunks: tuple[ChunkItem, ...] = ()
        search_meta: dict[str, Any] = {}
        facts: list[PatternResult] = []
        precedent_items: list[Any] = []
        if f_search is not None:
            try:
                chunks, search_meta = f_search.result(timeout=max(deadline - time.perf_counter(), 0.001))
                for reason in search_meta.get("skipped", []):
                    degraded.append(Degradation(stage="search", what=reason[0], reason=reason[1],
                                                fallback="the other channel ranks alone"))
            except FutureTimeout:
                f_search.cancel()
                degraded.append(Degradation(stage="search", what="policy chunks",
                                            reason=f"search did not finish within the {budget} ms budget",
                                            fallback="graph-only context"))
            except TenantError:
                raise
            except Exception as exc:  # store down, backend error: degrade, never fail
                degraded.append(Degradation(stage="search", what="policy chunks",
                                            reason=f"{type(exc).__name__}: {exc}", fallback="graph-only context"))
            timings["search"] = search_meta.get("elapsed_ms", _ms(t))
        if f_trav is not None:
            try:
                max_pat = max(p.budget_ms for p in plan.patterns)
                stage_timeout = max(deadline - time.perf_counter(), 0.0) + (max_pat + 250) / 1000.0
                facts, precedent_items, prec_degraded, prec_ms = f_trav.result(timeout=stage_timeout)
                degraded.extend(prec_degraded)
                timings["precedent"] = prec_ms
            except FutureTimeout:
                degraded.append(Degradation(stage="traverse", what="all patterns",
                                            reason="the traversal stage did not finish in time",
                                            fallback="context without graph facts"))
            except TenantError:
                raise
            except Exception as exc:
                degraded.append(Degradation(stage="traverse", what="all patterns",
                                            reason=f"{type(exc).__name__}: {exc}", fallback="context without graph facts"))
            timings["traverse"] = round(max((f.elapsed_ms for f in facts), default=0.0), 3)
        for f in facts:
            # "limit" is the pattern's own design (most recent N); time/size cuts and errors are not.
            if f.error or (f.truncated and f.truncated_reason != "limit"):
                degraded.append(Degradation(
                    stage="traverse", what=f"pattern {f.pattern}@{f.version}",
                    reason=f.error or f"truncated: {f.truncated_reason}",
                    fallback="rows found so far, flagged in the context" if f.rows else "section shows it is incomplete"))
        timings["search_and_traverse"] = _ms(t)

        # 3. assemble -------------------------------------------------------------------------
        t = time.perf_counter()
        notes = []
        if plan.clarify:
            notes.append(
                f"Goal unclear (best guess {plan.best or 'none'}, confidence "
                f"{plan.confidence:.2f}): ask the customer what they need before acting."
            )
        assembly = assemble(
            plan.sections, facts, chunks, precedent_items, as_of=as_of_dt, entities=plan.entity_values,
            budget_tokens=token_budget or self.config.token_budget, counter=self.counter,
            provenance=self.config.provenance_inline, notes=notes,
        )
        timings["assemble"] = _ms(t)

        # 4. record ---------------------------------------------------------------------------
        store_rev = self.store_revision()
        goal_for_trace = None if plan.clarify else (plan.goal.name if plan.goal else None)
        trace_id = rec.trace_id_for(
            tenant_id=sess.tenant_id, utterance=utterance, session=sess, as_of=as_of_dt, store_revision=store_rev,
            goal=goal_for_trace, patterns=[(f.pattern, f.version) for f in facts],
            chunk_ids=[c.chunk_id for c in assembly.chunks if c.in_context], context_hash=assembly.block.hash,
        )
        prof = search_meta.get("profile")
        result = RetrievalResult(
            trace_id=trace_id,
            tenant_id=sess.tenant_id,
            utterance=utterance,
            as_of=as_of_dt,
            as_of_defaulted=as_of is None,
            goal=goal_for_trace,
            goal_version=plan.goal.version if plan.goal and not plan.clarify else None,
            confidence=round(plan.confidence, 6),
            clarify=plan.clarify,
            entities=plan.entities,
            filter=plan.filter.model_dump(mode="json") if plan.filter is not None else None,
            filter_display=to_display(plan.filter),
            search_query=plan.dense_query,
            ranking_profile=prof.name if prof else plan.profile,
            ranking_profile_version=prof.version if prof else None,
            chunks=assembly.chunks,
            facts=tuple(facts),
            precedent=assembly.precedent,
            context=assembly.block,
            degraded=tuple(degraded),
            timings_ms={},
            store_revision=store_rev,
            metagraph_revision=store_rev.split(":")[0],
        )
        do_record = self.config.record if record is None else record
        t = time.perf_counter()
        if do_record:
            try:
                rec.record(self.graph, result, sess)
            except TenantError:
                raise
            except HopweaveError as exc:
                degraded.append(Degradation(stage="record", what="decision trace", reason=f"{type(exc).__name__}: {exc}",
                                            fallback="result returned without a recorded trace"))
        timings["record"] = _ms(t)
        timings["total"] = _ms(t_start)
        if warm_ms is not None:
            timings["warmup"] = warm_ms
        return result.model_copy(update={"timings_ms": {k: round(v, 3) for k, v in timings.items()},
                                         "degraded": tuple(degraded)})

    async def aretrieve(self, utterance: str, **kwargs: Any) -> RetrievalResult:
        """Async :meth:`retrieve` (same core, run on the engine's request pool)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._request_pool, functools.partial(self.retrieve, utterance, **kwargs))

    # ---- stages --------------------------------------------------------------------------
    def _understand(self, utterance: str, sess: Session, as_of: datetime, deadline: float,
                    degraded: list[Degradation], profile: str | None) -> Plan:
        _, goals, pats = self._goals()
        u = None
        f = self._pool.submit(stack.understand, self.understander, utterance, sess, as_of)
        try:
            u = f.result(timeout=max(deadline - time.perf_counter(), 0.001))
        except FutureTimeout:
            degraded.append(Degradation(stage="understand", what="goal and entities",
                                        reason="understanding did not finish in time",
                                        fallback="generic retrieval without patterns; clarify"))
        except TenantError:
            raise
        except Exception as exc:
            degraded.append(Degradation(stage="understand", what="goal and entities",
                                        reason=f"{type(exc).__name__}: {exc}",
                                        fallback="generic retrieval without patterns; clarify"))
        view = stack.understanding_view(u, utterance)
        plan, why = build_plan(view, goals, pats, utterance=utterance, min_confidence=self.config.min_confidence,
                               profile=profile, default_profile=self.config.default_profile)
        if u is not None and why:
            degraded.append(Degradation(stage="understand", what="goal", reason=why,
                                        fallback="generic retrieval without patterns; clarify"))
        return plan

    def _search(self, tenant_id: str, plan: Plan) -> tuple[tuple[ChunkItem, ...], dict[str, Any]]:
        t = time.perf_counter()
        profile = stack.profile(plan.profile)
        vec = None
        space = None
        if profile.uses_semantic:
            vec = self.embedder.embed([plan.dense_query])[0]
            space = self.embedder.space
        res = self.index.search(tenant_id, plan.lexical_query, profile, where=plan.filter,
                                limit=self.config.search_limit, query_vector=vec, query_space=space)
        skipped = []
        if res.coverage.semantic_skipped_reason and profile.uses_semantic:
            skipped.append(("semantic channel", res.coverage.semantic_skipped_reason))
        if res.coverage.lexical_skipped_reason and profile.uses_lexical:
            skipped.append(("lexical channel", res.coverage.lexical_skipped_reason))
        return chunk_items(res.hits), {"profile": profile, "skipped": skipped, "elapsed_ms": _ms(t)}

    def _graph_branch(
        self, tenant_id: str, plan: Plan, bindings: Bindings, utterance: str, as_of: datetime
    ) -> tuple[list[PatternResult], list[prec.PrecedentItem], list[Degradation], float]:
        """The graph branch (concurrent with the document search): the goal's patterns in
        parallel, then precedent ranking over the precedent patterns' rows.
        Returns (facts, precedent, degradations, precedent ms)."""
        from hopweave.graph.traverse import run_goal_patterns

        facts = run_goal_patterns(self.graph, tenant_id, plan.patterns, bindings, max_workers=self.config.max_workers)
        t = time.perf_counter()
        degraded: list[Degradation] = []
        items: list[prec.PrecedentItem] = []
        names = precedent_patterns(plan.sections, plan.patterns)
        if names:
            try:
                cands = prec.candidates(facts, names, as_of, fetch=functools.partial(self._props, tenant_id))
                case_text = case_text_for(utterance, plan, facts, as_of)
                try:
                    items = prec.rank(cands, case_text, self.embedder, self._trace_vectors)
                except TenantError:
                    raise
                except Exception as exc:  # the embedder failed: rank by BM25 alone
                    degraded.append(Degradation(stage="precedent", what="semantic similarity",
                                                reason=f"{type(exc).__name__}: {exc}", fallback="BM25 ranking only"))
                    items = prec.rank(cands, case_text, None)
            except TenantError:
                raise
            except Exception as exc:
                degraded.append(Degradation(stage="precedent", what="precedent ranking",
                                            reason=f"{type(exc).__name__}: {exc}", fallback="no precedent lines"))
        return facts, items, degraded, _ms(t)

    def _props(self, tenant_id: str, node_id: str) -> dict[str, Any] | None:
        node = self.graph.get_node(tenant_id, node_id)
        return dict(node.props) if node is not None else None


def _session(data: Mapping[str, Any]) -> Session:
    try:
        return Session.model_validate(dict(data))
    except TenantError:
        raise
    except Exception as exc:
        raise InputError(f"malformed session: {exc}") from exc


def _ms(t: float) -> float:
    return round((time.perf_counter() - t) * 1000, 3)

