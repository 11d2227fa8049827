"""The engine's budgets and thresholds (:class:`EngineConfig`), one request's run state
(:class:`Run`) and the typed result it ends in (:func:`make_result`)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, fields
from typing import Mapping

from hopweave.engine import record as trace_record
from hopweave.engine.assemble import Assembly
from hopweave.engine.boundary import Request
from hopweave.engine.plan import Plan
from hopweave.engine.query_vectors import RequestVectors
from hopweave.engine.result import Degradation, RetrievalResult
from hopweave.errors import ConfigError
from hopweave.models.common import PatternResult
from hopweave.models.domain import DomainSettings
from hopweave.models.filters import to_display
from hopweave.models.ranking import RankingProfile


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
    #: Multiplier on each goal's ``escalation.latency_ms`` (the later rounds' wall-clock
    #: budget); replays use a large one so a slow vector store cannot stop a round by time.
    round_latency_scale: float = 1.0
    provenance_inline: bool = True
    record: bool = True
    #: The record stage waits for the request's remaining budget; a group write of queued traces
    #: waits at least this long for the store's lock (its callers may have stopped waiting).
    record_min_ms: int = 100
    max_workers: int = 8
    #: Threads running ``aretrieve`` requests (each mostly waits on its stages).
    max_requests: int = 64
    #: Requests doing work at once; the others wait for a slot (within their budget). With the
    #: search in its own process, 4 keep both the engine's GIL and the search process busy on 2
    #: cores; 8 only cut more requests short at the deadline (a burst of 100: 8 -> 0-6 late,
    #: fewer degraded; docs/BENCHMARKS.md, "A hundred agents at once"). Raise it for server stores, whose requests
    #: spend their time waiting on the network.
    max_active: int = 4
    #: Kept free at the end of the budget for what follows the stages (assembly, the result, the
    #: trace hand-off): stages stop waiting this long before the deadline, and a request that
    #: got no slot by then answers degraded at once.
    deadline_reserve_ms: int = 40
    #: Added to that reserve per request in flight (a burst wakes together near its deadline).
    reserve_per_request_ms: float = 1.5
    #: Wall-clock budget of one agent-tool call (a hybrid search: one encoder pass + the search;
    #: a 200 ms p99 is what a tool agents call in a loop can live with). A call that cannot get a tool
    #: slot in time to finish within it is shed (OverloadedError / HTTP 503 + Retry-After).
    tool_budget_ms: int = 200
    #: Agent-tool calls working at once, in slots of their own (a call is one encoder pass and
    #: one filtered hybrid search, so it neither takes one of the ``max_active`` request slots
    #: nor waits behind retrievals holding them); 0: tool calls share the request slots.
    tool_max_active: int = 4
    #: Requests answering on the degradation ladder's ``facts_and_lexical`` rung at once, in
    #: slots of their own (:mod:`hopweave.engine.ladder`): a request that gets no request slot in
    #: time takes one of these for understanding, the goal's facts and a lexical-only search
    #: before it is answered with nothing; 0: no ladder (such a request answers with nothing).
    ladder_max_active: int = 2
    #: Serve an embedded vector shard from a child process (``Engine.open`` on a store
    #: directory): qdrant-edge holds the GIL for a whole query, so in one process every search
    #: stops every other request's Python work (:mod:`hopweave.search.search_process`).
    search_process: bool = True

    def __post_init__(self) -> None:
        for f in fields(self):
            _check_field(f.name, str(f.type), getattr(self, f.name))

    def reserve_ms(self, budget_ms: float) -> float:
        """The end of a ``budget_ms`` budget kept for finishing: ``deadline_reserve_ms``, at most
        10% of the budget."""
        return min(float(self.deadline_reserve_ms), budget_ms * 0.1)


#: Fields that must be at least 1 (the others at least 0).
_AT_LEAST_ONE = frozenset({"budget_ms", "token_budget", "search_limit", "max_workers", "max_requests", "max_active",
                           "tool_budget_ms"})


def _check_field(name: str, kind: str, value: object) -> None:
    """Raise ConfigError unless ``value`` is of the field's ``kind`` (its annotation) and in range."""
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"EngineConfig.{name} must be True or False, not {value!r:.40}")
        return
    if kind.startswith("str"):
        if not (value is None or isinstance(value, str)):
            raise ConfigError(f"EngineConfig.{name} must be a name or None, not {value!r:.40}")
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind == "int" and not isinstance(value, int)):
        raise ConfigError(f"EngineConfig.{name} must be a {'whole number' if kind == 'int' else 'number'}, "
                          f"not {value!r:.40}")
    if not math.isfinite(value) or value < (1 if name in _AT_LEAST_ONE else 0):
        raise ConfigError(f"EngineConfig.{name} must be a finite number of at least "
                          f"{1 if name in _AT_LEAST_ONE else 0}, got {value!r}")


def engine_config(value: object) -> EngineConfig:
    """The EngineConfig ``value`` stands for: None -> the defaults, an EngineConfig as is, or a
    mapping of its fields (``{"budget_ms": 500}``). Raises ConfigError naming an unknown field
    or a value of the wrong type or range (NaN, infinity, a zero budget)."""
    if value is None:
        return EngineConfig()
    if isinstance(value, EngineConfig):
        return value
    if isinstance(value, Mapping):
        known = {f.name for f in fields(EngineConfig)}
        unknown = sorted(str(k) for k in value if k not in known)
        if unknown:
            raise ConfigError(f"EngineConfig has no field(s) {unknown}; its fields: {sorted(known)}")
        return EngineConfig(**value)
    raise ConfigError(f"config must be an EngineConfig or a mapping of its fields, not {type(value).__name__}")


@dataclass
class Run:
    """One request in flight: its validated inputs, domain, clock and what went wrong."""

    req: Request
    settings: DomainSettings
    t_start: float
    budget_ms: int
    degraded: list[Degradation]
    timings: dict[str, float]
    #: The request's query vectors (one encoder pass for the utterance, shared by the stages).
    vectors: RequestVectors = field(default_factory=RequestVectors)

    @property
    def deadline(self) -> float:
        return self.t_start + self.budget_ms / 1000.0

    def remaining(self, reserve_ms: float = 0.0) -> float:
        """Seconds left before the deadline (less ``reserve_ms``), at least 0."""
        return max(self.deadline - reserve_ms / 1000.0 - time.perf_counter(), 0.0)




def make_result(run: Run, plan: Plan, prof: RankingProfile | None, facts: list[PatternResult],
                assembly: Assembly, store_rev: str) -> RetrievalResult:
    """The typed result of a run (its trace id: a hash of the inputs and what was seen)."""
    req = run.req
    goal = None if plan.clarify else (plan.goal.name if plan.goal else None)
    trace_id = trace_record.trace_id_for(
        tenant_id=req.session.tenant_id, utterance=req.utterance, session=req.session, as_of=req.as_of,
        store_revision=store_rev, goal=goal, patterns=[(f.pattern, f.version) for f in facts],
        chunk_ids=[c.chunk_id for c in assembly.chunks if c.in_context], context_hash=assembly.block.hash,
        caller=req.caller,
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
