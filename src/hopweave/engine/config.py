"""The engine's budgets and thresholds (:class:`EngineConfig`) and one request's run state."""

from __future__ import annotations

import time
from dataclasses import dataclass

from hopweave.engine.boundary import Request
from hopweave.engine.result import Degradation
from hopweave.models.domain import DomainSettings


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
    #: The record stage waits for the request's remaining budget, but at least this long.
    record_min_ms: int = 100
    max_workers: int = 8


@dataclass
class Run:
    """One request in flight: its validated inputs, domain, clock and what went wrong."""

    req: Request
    settings: DomainSettings
    t_start: float
    budget_ms: int
    degraded: list[Degradation]
    timings: dict[str, float]

    @property
    def deadline(self) -> float:
        return self.t_start + self.budget_ms / 1000.0

    def remaining(self) -> float:
        return max(self.deadline - time.perf_counter(), 0.0)


