"""Multi-round retrieval under the goal's escalation policy.

The first round is the ordinary pipeline pass. When the goal declares ``escalation: {mode:
multi_round}``, an assessment step checks the working set against the goal's needs — a required
policy section empty, no chunk at or above the score cliff (``min_score``), a pattern truncated,
an entity the goal needs unbound — and plans the next round from the goal's declared ``steps``:
``expand`` (the lexical query widened with vocabulary from the first round: the titles of the
chunks it found, string fact values, the utterance's content words) or ``relax:<field>`` (the
filter's clauses on that chunk field dropped; an always-on scope clause is never relaxed, the
refusal is reported). The loop stops when the needs are met, the steps run out, or a budget
(rounds, tokens of added policy text, wall-clock time) is spent. Every round is listed with
what it asked, why and what it added.

Deterministic by default (no model: replays stay byte-identical). An application may set
``Engine.query_writer`` to a :data:`QueryWriter` — e.g. its LLM — that writes the next round's
query from a :class:`RoundRequest`; whoever writes it, every query goes through the same scope
(:func:`hopweave.engine.scope.scope_for`: the record's authoritative values such as tier and
product, tenant, identity, always-on clauses), and a writer may relax only the fields the goal
declares relaxable: relaxing an authoritative field drops the utterance's narrowing on it, never
the record's clause.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from hopweave.engine.plan import Plan
from hopweave.engine.result import ChunkItem, RoundItem
from hopweave.engine.round_query import QueryWriter, RoundQuery, RoundRequest
from hopweave.models.common import PatternResult
from hopweave.models.escalation import EscalationPolicy
from hopweave.models.filters import And, FilterTree, and_, clause_field, to_display
from hopweave.understand.text import content_words

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.config import Run
    from hopweave.engine.deps import StageDeps

#: A later round starts only with at least this many seconds of the request's budget left.
MIN_ROUND_S = 0.03
#: Terms a round's expansion adds at most.
MAX_EXPANSION_TERMS = 8


#: search(plan, reuse_request_vector) -> the plan's chunks (raises what the index raises).
Search = Callable[[Plan, bool], Sequence[ChunkItem]]


@dataclass(frozen=True)
class LoopInputs:
    policy: EscalationPolicy
    plan: Plan
    utterance: str
    facts: tuple[PatternResult, ...]
    #: Fields of the session's always-on clauses (never relaxed).
    scope_fields: frozenset[str]
    #: The session's scope applied to a filter (hopweave.engine.scope.scope_for, Scope.narrow).
    rescope: Callable[[FilterTree | None], FilterTree]
    search: Search
    count: Callable[[str], int]
    stop_words: frozenset[str]
    writer: QueryWriter | None = None
    #: Seconds the request has left for later rounds (its deadline less the assembly reserve).
    time_left: Callable[[], float] = lambda: float("inf")
    #: Multiplier on ``policy.latency_ms`` (``EngineConfig.round_latency_scale``; replays: large).
    latency_scale: float = 1.0


def first_round(plan: Plan, chunks: Sequence[ChunkItem], unmet: Sequence[str] = ()) -> RoundItem:
    """The first pass as a round."""
    return RoundItem(round=1, action="first pass", lexical_query=plan.lexical_query, dense_query=plan.dense_query,
                     filter_display=to_display(plan.filter), added=tuple(c.chunk_id for c in chunks),
                     unmet=tuple(unmet))


def assess(policy: EscalationPolicy, plan: Plan, chunks: Sequence[ChunkItem],
           facts: Sequence[PatternResult]) -> list[str]:
    """The goal's unmet needs, in words (empty: met). Search can fix the first two kinds."""
    unmet: list[str] = []
    chunk_sections = [s for s in plan.sections if s.source == "chunks"]
    if any(s.required for s in chunk_sections) or (chunk_sections and not any(s.required for s in plan.sections)):
        if not chunks:
            unmet.append("required policy section empty: no chunk passed the filter")
        elif policy.min_score is not None and best_score(chunks) < policy.min_score:
            unmet.append(f"no chunk above the score cliff (best {best_score(chunks):.3f} < {policy.min_score})")
    for f in facts:
        if f.error or (f.truncated and f.truncated_reason != "limit"):
            unmet.append(f"pattern {f.pattern} truncated ({f.error or f.truncated_reason})")
    for e in policy.needs_entities:
        if e not in plan.entity_values:
            unmet.append(f"entity {e} unbound")
    return unmet


def best_score(chunks: Sequence[ChunkItem]) -> float:
    """The best chunk's semantic (cosine) score — comparable across queries, unlike the fused
    score, which a profile may normalise per query; the fused score when no chunk has one."""
    sem = [ch.score for c in chunks for ch in c.channels if ch.channel == "semantic"]
    return max(sem) if sem else max((c.score for c in chunks), default=0.0)


def _searchable(unmet: Iterable[str]) -> bool:
    return any(u.startswith(("required policy section", "no chunk above")) for u in unmet)


def run_rounds(inp: LoopInputs, chunks: Sequence[ChunkItem]) -> tuple[tuple[ChunkItem, ...], list[RoundItem], list[str]]:
    """The loop after the first pass. Returns (the candidate chunks of every round, first pass
    first; the rounds; notes for the context). Raises what ``search`` raises only through the
    caller's stage wrapper (a failing round ends the loop there)."""
    pool = list(chunks)
    unmet = assess(inp.policy, inp.plan, pool, inp.facts)
    rounds = [first_round(inp.plan, pool, unmet)]
    if not inp.policy.multi_round or not _searchable(unmet):
        return tuple(pool), rounds, []
    t0 = time.perf_counter()
    plan, spent = inp.plan, 0
    steps = list(inp.policy.steps)
    notes: list[str] = []
    while len(rounds) < inp.policy.max_rounds and _searchable(unmet):
        if (time.perf_counter() - t0) * 1000 >= inp.policy.latency_ms * inp.latency_scale \
                or inp.time_left() < MIN_ROUND_S:
            notes.append(f"Retrieval stopped after round {len(rounds)}: latency budget spent "
                         f"({inp.policy.latency_ms} ms for later rounds, or the request's own budget)")
            break
        nxt = _next_query(inp, plan, steps, pool, unmet, len(rounds) + 1, notes)
        if nxt is None:
            break
        plan, action, writer = nxt
        plan = dataclasses.replace(plan, filter=inp.rescope(_without(plan.filter, inp.scope_fields)))  # every query
        found = inp.search(plan, plan.dense_query == inp.plan.dense_query)
        seen = {c.chunk_id for c in pool}
        added: list[ChunkItem] = []
        for c in sorted((c for c in found if c.chunk_id not in seen), key=lambda c: (-c.score, c.chunk_id)):
            cost = inp.count(c.text)
            if spent + cost > inp.policy.token_budget:
                notes.append(f"Round {len(rounds) + 1} stopped at the loop's token budget "
                             f"({inp.policy.token_budget} tokens)")
                break
            spent += cost
            added.append(c)
        pool.extend(added)
        why = tuple(unmet)
        unmet = assess(inp.policy, plan, pool, inp.facts)
        rounds.append(RoundItem(round=len(rounds) + 1, action=action, why=why, writer=writer,
                                lexical_query=plan.lexical_query, dense_query=plan.dense_query,
                                filter_display=to_display(plan.filter), added=tuple(c.chunk_id for c in added),
                                tokens=sum(inp.count(c.text) for c in added), unmet=tuple(unmet)))
        if spent >= inp.policy.token_budget:
            break
    if len(rounds) > 1:
        notes.insert(0, _summary(rounds))
        pool = comparable(pool)
    return tuple(pool), rounds, notes


def _features(c: ChunkItem) -> float:
    """What the ranking profile's features (document type, recency, section, scope) added to a
    chunk's fused score: the score minus its channels' contributions (0 after a reranker, whose
    score has no such parts)."""
    if any(ch.channel == "rerank" for ch in c.channels):
        return 0.0
    contributions = [ch.contribution for ch in c.channels]
    if not contributions or any(x is None for x in contributions):
        return 0.0
    return c.score - sum(x for x in contributions if x is not None)


#: A later round fetches this many times the search limit, so that ``search_limit`` distinct
#: passages survive once near-copies are collapsed (:func:`distinct_passages`).
COPY_FETCH = 3
#: A hit is a copy of a better-ranked one when this share of its word 3-grams occur in it.
COPY_CONTAINMENT = 0.6


def distinct_passages(chunks: Sequence[ChunkItem], limit: int) -> tuple[ChunkItem, ...]:
    """The first ``limit`` hits (in rank order) that are not copies of a better-ranked kept hit:
    most of a copy's word 3-grams occur in that hit (a FAQ, note or template quoting a passage,
    with a greeting or a reworded verb, which the assembler's Jaccard test lets through). A
    relaxed later round otherwise spends its whole hit budget on restatements of one passage."""
    from hopweave.engine.context_lines import shingles

    kept: list[ChunkItem] = []
    seen: list[frozenset[tuple[str, ...]]] = []
    for c in chunks:
        if len(kept) >= limit:
            break
        sh = shingles(c.text)
        if sh and any(len(sh & k) >= COPY_CONTAINMENT * len(sh) for k in seen):
            continue
        kept.append(c)
        seen.append(sh)
    return tuple(kept)


def comparable(chunks: Sequence[ChunkItem]) -> list[ChunkItem]:
    """Chunks of several rounds with comparable scores: each round's fused score is normalised
    per query, so a pool of several rounds is ranked by the semantic (cosine) score where a
    chunk has one (its fused score otherwise), plus what the profile's features added to it:
    those do not depend on the round's normalisation, and dropping them would let a restatement
    outrank the authoritative passage the profile put first."""
    out = []
    for c in chunks:
        sem = next((ch.score for ch in c.channels if ch.channel == "semantic"), None)
        out.append(c if sem is None else c.model_copy(update={"score": round(sem + _features(c), 6)}))
    return out


def _summary(rounds: Sequence[RoundItem]) -> str:
    later = "; ".join(f"round {r.round} {r.action} (+{len(r.added)} chunk{'' if len(r.added) == 1 else 's'})"
                      for r in rounds[1:])
    return f"Retrieved in {len(rounds)} rounds ({rounds[1].why[0] if rounds[1].why else 'needs unmet'}): {later}"


def _next_query(inp: LoopInputs, plan: Plan, steps: list[str], pool: Sequence[ChunkItem], unmet: Sequence[str],
                n: int, notes: list[str]) -> tuple[Plan, str, str] | None:
    """The next round's plan, its action in words and its writer; None when nothing is left."""
    relaxable = tuple(s.split(":", 1)[1] for s in inp.policy.steps if s.startswith("relax:"))
    if inp.writer is not None:
        q = inp.writer(RoundRequest(utterance=inp.utterance, goal=plan.goal.name if plan.goal else "", round=n,
                                    unmet=tuple(unmet), lexical_query=plan.lexical_query, dense_query=plan.dense_query,
                                    relaxable=relaxable, chunks=tuple(pool), facts=inp.facts))
        if q is None:
            return None
        return _written(inp, plan, q, relaxable, notes)
    while steps:
        step = steps.pop(0)
        if step == "expand":
            terms = expansion_terms(pool, inp.facts, inp.utterance, plan.lexical_query, inp.stop_words)
            if terms:
                return (dataclasses.replace(plan, lexical_query=f"{plan.lexical_query} {' '.join(terms)}".strip()),
                        f"expanded the lexical query with: {', '.join(terms)}", "planner")
            continue
        relaxed = _relax(inp, plan, step.split(":", 1)[1], notes)
        if relaxed is not None:
            return relaxed, f"relaxed the filter clause on {step.split(':', 1)[1]}", "planner"
    return None


def _written(inp: LoopInputs, plan: Plan, q: RoundQuery, relaxable: tuple[str, ...],
             notes: list[str]) -> tuple[Plan, str, str]:
    """A query writer's round, held to the goal's relaxable fields and the session's scope."""
    parts = []
    if q.lexical_query:
        plan = dataclasses.replace(plan, lexical_query=q.lexical_query)
        parts.append(f"wrote the lexical query {q.lexical_query!r}")
    if q.dense_query:
        plan = dataclasses.replace(plan, dense_query=q.dense_query)
        parts.append(f"wrote the dense query {q.dense_query!r}")
    for f in q.relax:
        if f not in relaxable:
            notes.append(f"The query writer asked to relax {f}, which the goal does not declare relaxable: refused")
            continue
        relaxed = _relax(inp, plan, f, notes)
        if relaxed is not None:
            plan = relaxed
            parts.append(f"relaxed the filter clause on {f}")
    plan = dataclasses.replace(plan, filter=inp.rescope(_without(plan.filter, inp.scope_fields)))
    action = "; ".join(parts) or "repeated the query"
    return plan, action + (f" ({q.reason})" if q.reason else ""), "query_writer"


def _clauses(tree: FilterTree | None) -> list[FilterTree]:
    return list(tree.clauses) if isinstance(tree, And) else ([tree] if tree is not None else [])


def _without(tree: FilterTree | None, fields: Iterable[str]) -> FilterTree | None:
    drop = set(fields)
    return and_(*(c for c in _clauses(tree) if clause_field(c) not in drop))


def _relax(inp: LoopInputs, plan: Plan, field: str, notes: list[str]) -> Plan | None:
    """``plan`` without its filter clauses on ``field``, re-scoped (an authoritative field keeps
    the record's clause); None (and a note when it is a scope clause) when there is nothing to
    relax: no clause on the field, or the re-scoped filter is the same."""
    if field in inp.scope_fields:
        notes.append(f"Not relaxed: {field} is an always-on scope clause of the session")
        return None
    if not any(clause_field(c) == field for c in _clauses(plan.filter)):
        return None
    relaxed = inp.rescope(_without(plan.filter, {field} | set(inp.scope_fields)))
    if relaxed == inp.rescope(_without(plan.filter, inp.scope_fields)):
        return None
    return dataclasses.replace(plan, filter=relaxed)


def expansion_terms(chunks: Sequence[ChunkItem], facts: Sequence[PatternResult], utterance: str, query: str,
                    stop_words: Iterable[str], limit: int = MAX_EXPANSION_TERMS) -> list[str]:
    """Vocabulary for a later round, in order: the titles of the best first-round chunks,
    string ``type`` values of the facts (never names: PII), the utterance's content words; minus words the
    query has. Returns at most ``limit`` lower-case words."""
    best = sorted(chunks, key=lambda c: (-c.score, c.chunk_id))[:3]
    texts = [c.title or "" for c in best]
    texts += [str(r.properties["type"]) for f in facts for r in f.rows[:3]  # never names: they may be PII
              if isinstance(r.properties.get("type"), str)]
    texts.append(utterance)
    have = set(content_words(query, stop_words)) | {w.lower() for w in query.split()}
    words = [w for w in content_words(" ".join(texts), stop_words) if w not in have and not w.isdigit()]
    return words[:limit]


@dataclass(frozen=True)
class Rounds:
    """The rounds stage's outcome: the chunks of every round, each round listed, and the
    notes for the context."""

    chunks: tuple[ChunkItem, ...]
    rounds: tuple[RoundItem, ...]
    notes: tuple[str, ...]


def rounds_for(deps: "StageDeps", run: "Run", plan: Plan, chunks: tuple[ChunkItem, ...],
               facts: Sequence[PatternResult]) -> Rounds:
    """One request's rounds: the first pass alone for a single-pass goal (no cost), else
    :func:`run_rounds` with the engine's search (through its stage wrapper: a failing round
    degrades, never raises), scope and token counter.

    Args:
        deps: the engine's parts (index, graph, embedder, counter, query writer, budgets).
        run: the request in flight.
        plan: its plan.
        chunks: the first pass's chunks.
        facts: the pattern results after the procedure.

    Returns:
        The rounds' chunks, the rounds and their notes.
    """
    policy = plan.goal.escalation if plan.goal is not None else None
    if policy is None or not policy.multi_round or deps.index is None or deps.single_pass:
        return Rounds(chunks, (first_round(plan, chunks),), ())
    if any(d.stage == "search" and d.what == "policy chunks" for d in run.degraded):
        return Rounds(chunks, (first_round(plan, chunks, ["the search is degraded: no later round"]),), ())
    t = time.perf_counter()
    pool, rounds, notes = run_rounds(_loop_inputs(deps, run, plan, policy, facts), chunks)
    run.timings["rounds"] = round((time.perf_counter() - t) * 1000, 3)
    return Rounds(pool, tuple(rounds), tuple(notes))


def _loop_inputs(deps: "StageDeps", run: "Run", plan: Plan, policy: EscalationPolicy,
                 facts: Sequence[PatternResult]) -> LoopInputs:
    from hopweave.engine.branches import search_documents
    from hopweave.engine.query_vectors import bound
    from hopweave.engine.scope import scope_for
    from hopweave.understand.lexical_plan import _stop_words

    session, tenant = run.req.session, run.req.session.tenant_id

    index = deps.index
    assert index is not None  # rounds_for runs later rounds only with an index

    def time_left() -> float:
        return run.remaining(deps.reserve_ms(run))

    # the one scope (identity, always-on and the record's authoritative clauses); its locked
    # fields (tenant, the in-force clause's dates and status, session attributes) are never relaxed
    scope = scope_for(deps.graph, run.settings, session, run.req.as_of)

    def search(p: Plan, reuse: bool) -> tuple[ChunkItem, ...]:
        limit = deps.config.search_limit
        work = bound(run.vectors, functools.partial(search_documents, index, deps.embedder, tenant, p,
                                                    limit * COPY_FETCH, run.req.utterance if reuse else None))
        found = deps.run_stage(run.degraded, "search", work, default=None, what="a later retrieval round",
                               fallback="the rounds so far", timeout=time_left())
        return distinct_passages(found.chunks, limit) if found is not None else ()

    return LoopInputs(policy=policy, plan=plan, utterance=run.req.utterance, facts=tuple(facts),
                      scope_fields=scope.always_on, rescope=lambda w: scope.narrow(w, check=False), search=search,
                      count=deps.counter.count, stop_words=_stop_words(), writer=deps.query_writer,
                      time_left=time_left, latency_scale=deps.config.round_latency_scale)


__all__ = ["LoopInputs", "QueryWriter", "RoundQuery", "RoundRequest", "Rounds", "assess", "expansion_terms",
           "first_round", "rounds_for", "run_rounds"]
