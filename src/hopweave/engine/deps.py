"""What the stages of one retrieval read: :class:`StageDeps`, a frozen snapshot of an engine's
parts (stores, models, budgets, pools, admission and the application's hooks) taken when a
request starts, and :class:`Goals`, the metagraph's goal types and patterns per revision.

The stage modules (:mod:`~hopweave.engine.pipeline`, :mod:`~hopweave.engine.agentic`,
:mod:`~hopweave.engine.rules`, :mod:`~hopweave.engine.rerank_stage`,
:mod:`~hopweave.engine.multi_intent`) take a ``StageDeps`` (or the pipeline holding one), never
the engine itself.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, TypeVar

from hopweave.engine.admission import Admission
from hopweave.engine.config import EngineConfig, Run
from hopweave.engine.precedent import TraceVectorCache
from hopweave.engine.result import Degradation, Stage
from hopweave.engine.round_query import QueryWriter
from hopweave.engine.stages import DocumentIndex, index_revision, run_stage
from hopweave.engine.tokens import TokenCounter
from hopweave.engine.trace_writer import GroupCommitter
from hopweave.graph.base import GraphStore
from hopweave.models.domain import DomainSettings
from hopweave.models.metagraph import GoalType, TraversalPattern
from hopweave.search.embedder import Embedder
from hopweave.understand.understander import UnderstandingStage

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.models.store_settings import StoreSettings
    from hopweave.understand.calibration import Calibration
    from hopweave.understand.classifier import ClassifierConfig

T = TypeVar("T")
D = TypeVar("D")


@dataclass(frozen=True)
class Goals:
    """The metagraph's goal types by name and their patterns by goal, at one revision."""

    revision: str
    goals: Mapping[str, GoalType]
    patterns: Mapping[str, list[TraversalPattern]]

    def goal(self, name: str | None) -> GoalType | None:
        """The goal type named ``name`` (None for None or an unknown name)."""
        return self.goals.get(name) if name else None


class UnderstanderCache:
    """One understanding stage per domain, built on first use (a classifier over the graph's
    goal types, with the classifier settings and calibration the store keeps for the domain).

    Args:
        graph: the graph store the classifier reads.
        embedder: the engine's embedder (called when a stage is built).
        settings: the store's settings (None: read from ``store_dir`` when given, else defaults).
        store_dir: the store directory, for an engine built by hand on one.
    """

    def __init__(self, graph: GraphStore, embedder: Callable[[], Embedder], settings: "StoreSettings | None",
                 store_dir: Path | None) -> None:
        self.graph = graph
        self.embedder = embedder
        self.settings = settings
        self.store_dir = store_dir
        self._stages: dict[str, UnderstandingStage] = {}
        self._lock = threading.Lock()

    def built(self) -> list[str]:
        """The domains whose stage was built, sorted."""
        return sorted(self._stages)

    def __call__(self, domain: DomainSettings) -> UnderstandingStage:
        """The understanding stage of ``domain`` (built once). Raises what building the
        classifier raises (ConfigError for unusable classifier settings, StoreError)."""
        stage = self._stages.get(domain.name)
        if stage is None:
            with self._lock:
                stage = self._stages.get(domain.name)
                if stage is None:
                    from hopweave.understand.understander import Understander

                    config, calibration = self._classifier_settings(domain.name)
                    stage = Understander(self.graph, self.embedder(), settings=domain, classifier_config=config,
                                         calibration=calibration)
                    self._stages[domain.name] = stage
        return stage

    def _classifier_settings(self, domain: str) -> tuple["ClassifierConfig | None", "Calibration | None"]:
        from hopweave.models.store_settings import read_store_settings
        from hopweave.understand.classifier import classifier_settings

        stored = self.settings
        if stored is None and self.store_dir is not None:  # an engine built by hand on a store directory
            stored = read_store_settings(self.store_dir)
        rec = stored.domains.get(domain) if stored is not None else None
        return classifier_settings(rec.classifier, rec.calibration) if rec is not None else (None, None)


class GoalCache:
    """:class:`Goals` read from ``graph`` once per metagraph revision (immutable in between);
    each goal's patterns are its active ones (a ``retired`` pattern is left out)."""

    def __init__(self, graph: GraphStore) -> None:
        self.graph = graph
        self._goals: Goals | None = None

    def __call__(self) -> Goals:
        """The goals at the graph's current metagraph revision. Raises what the store raises."""
        rev = self.graph.metagraph_revision()
        cached = self._goals
        if cached is None or cached.revision != rev:
            goals = {g.name: g for g in self.graph.goal_types()}
            pats: dict[str, list[TraversalPattern]] = {}
            for p in self.graph.patterns():
                if p.status != "retired":  # a retired pattern stays stored, its goal no longer runs it
                    pats.setdefault(p.goal, []).append(p)
            cached = Goals(rev, goals, pats)
            self._goals = cached
        return cached


@dataclass(frozen=True)
class StageDeps:
    """An engine's parts as one request's stages see them (taken when the request starts).

    Attributes:
        graph: the graph store (patterns, metagraph, traces).
        index: the document index (None: graph-only context).
        embedder: the request's embedder (shared query vectors).
        counter: the context's token counter.
        config: the engine's budgets and thresholds.
        trace_writer: the group commit of decision traces.
        goals: the goal lookup (:class:`Goals` at the current metagraph revision).
        query_writer: the application's writer of later rounds' queries (None: deterministic).
        rerank: the reranker for every goal (None: each goal's own ``rerank``).
        pool: the stage pool the concurrent stages run on.
        admission: request slots and reserves.
        trace_vectors: the precedent ranking's trace-vector cache.
        settings_for: the domain settings serving a tenant (raises TenantError / ConfigError).
        understander_for: a domain's understanding stage.
        warm_up: warms the engine once (returns the ms spent, None when it was warm).
        single_pass: no later rounds and no intent split.
    """

    graph: GraphStore
    index: DocumentIndex | None
    embedder: Embedder
    counter: TokenCounter
    config: EngineConfig
    trace_writer: GroupCommitter
    goals: Callable[[], Goals]
    query_writer: QueryWriter | None
    rerank: str | None
    pool: ThreadPoolExecutor
    admission: Admission
    trace_vectors: TraceVectorCache
    settings_for: Callable[[str], DomainSettings]
    understander_for: Callable[[DomainSettings], UnderstandingStage]
    warm_up: Callable[[], float | None]
    single_pass: bool = False

    def run_stage(self, degraded: list[Degradation], stage: Stage, work: Callable[[], T] | Future[T], *,
                  default: D, what: str, fallback: str, timeout: float | None = None) -> T | D:
        """:func:`~hopweave.engine.stages.run_stage` on the stage pool.

        Returns:
            The stage's value, or ``default`` after a :class:`Degradation` was appended.

        Raises:
            TenantError: a tenant problem is never a degraded result.
        """
        return run_stage(degraded, stage, work, default=default, what=what, fallback=fallback, timeout=timeout,
                         pool=self.pool)

    def reserve_ms(self, run: Run) -> float:
        """The end of the run's budget its stages leave for assembly
        (:meth:`~hopweave.engine.admission.Admission.reserve_ms`)."""
        return self.admission.reserve_ms(run.budget_ms)

    def store_revision(self) -> str:
        """Metagraph revision + the vector collection's identity (changes on re-ingest)."""
        return f"{self.goals().revision}:{index_revision(self.index)}"


__all__ = ["GoalCache", "Goals", "StageDeps", "UnderstanderCache"]
