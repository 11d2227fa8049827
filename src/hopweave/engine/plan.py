"""The retrieval plan: what the engine will do for one request, decided from the understanding.

:func:`build_plan` applies the confidence threshold (the fallback plan when it is not met), the
goal's document scope and search template, and picks the goal's patterns, sections and ranking
profile. The other helpers turn stage outputs into the engine's typed items. All pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Sequence

from hopweave.engine.context_lines import aggregate_line, render
from hopweave.engine.result import ChannelView, ChunkItem, EntityItem
from hopweave.engine.section_kinds import section_kind
from hopweave.models.common import PatternResult, Scalar
from hopweave.models.documents import CURRENT
from hopweave.models.filters import And, Eq, FilterTree, In, IsEmpty, and_, clause_field
from hopweave.models.metagraph import GoalType, SectionTemplate, TraversalPattern
from hopweave.models.ranking import Hit
from hopweave.understand.models import Mention, Understanding

#: Sections used when no goal is confident enough (the fallback plan): documents only.
FALLBACK_SECTIONS: tuple[SectionTemplate, ...] = (
    SectionTemplate(
        name="possibly_relevant_policy",
        title="Possibly relevant policy — {document}, section {section}",
        source="chunks",
        max_lines=3,
        min_score_ratio=0.5,
    ),
)


@dataclass
class Plan:
    goal: GoalType | None
    confidence: float
    clarify: bool
    entities: tuple[EntityItem, ...]
    entity_values: dict[str, Scalar]
    filter: FilterTree | None
    lexical_query: str
    dense_query: str
    patterns: list[TraversalPattern] = field(default_factory=list)
    sections: tuple[SectionTemplate, ...] = ()
    profile: str | None = None
    #: The goal the classifier leaned to (also when it was not confident enough).
    best: str | None = None
    #: What the utterance named that is not used (others' ids, claims the record contradicts).
    mentions: tuple[Mention, ...] = ()
    #: The understanding stage's remarks for the agent.
    notes: tuple[str, ...] = ()
    #: Documents in force at this instant (the filter's in-force clause; every revision is
    #: searched); None: current revisions only.
    documents_at: str | None = None


def entity_items(u: Understanding) -> tuple[EntityItem, ...]:
    """The understanding's entities as result items, sorted by (type, value)."""
    items = [EntityItem(type=e.type, value=e.value, source=e.source, text=e.text or "", node_id=e.node_id)
             for e in u.entities]
    return tuple(sorted(items, key=lambda x: (x.type, str(x.value))))


def build_plan(
    u: Understanding | None,
    goals: Mapping[str, GoalType],
    patterns: Mapping[str, Sequence[TraversalPattern]],
    *,
    utterance: str,
    min_confidence: float,
    profile: str | None,
    default_profile: str | None,
) -> tuple[Plan, str | None]:
    """The plan for one understanding (None when the stage failed). Returns (plan, why the
    fallback plan was chosen, or None; None too when the stage failed: it reported that itself).

    Confident (a known goal, not abstained, confidence >= ``min_confidence``): the goal's
    patterns, sections, ranking profile, document scope and search question. Otherwise: no
    goal, no patterns, the fallback sections, ``clarify = True``.
    """
    if u is None:
        return _fallback_plan(utterance, profile or default_profile), None
    goal = goals.get(u.goal) if u.goal else None
    confident = goal is not None and not u.abstained and u.confidence >= min_confidence
    why = None if confident else _why_not(u, goal, min_confidence)
    values = u.entity_bindings()
    dense_query = utterance
    flt: FilterTree | None = u.filter
    if confident and goal is not None:
        if goal.search_template:
            question = render(goal.search_template, {**values, "utterance": utterance})
            if question:  # the goal's question, then the customer's own words
                dense_query = question if "{utterance}" in goal.search_template else f"{question} {utterance}"
        if goal.document_scope:
            flt = scope_filter(flt, goal.document_scope)
    plan = Plan(
        goal=goal if confident else None,
        confidence=u.confidence,
        clarify=not confident,
        entities=entity_items(u),
        entity_values=values,
        filter=flt,
        lexical_query=u.lexical.query or utterance,
        dense_query=dense_query,
        patterns=list(patterns.get(goal.name, [])) if confident and goal is not None else [],
        sections=goal.sections if confident and goal is not None else FALLBACK_SECTIONS,
        profile=profile or (goal.ranking_profile if confident and goal is not None else None) or default_profile,
        best=u.goal or u.classification.best,
        mentions=u.mentions,
        notes=u.notes,
        documents_at=u.documents_at,
    )
    return plan, why


def _why_not(u: Understanding, goal: GoalType | None, min_confidence: float) -> str:
    if u.goal and goal is None:
        return f"goal {u.goal!r} is not in the metagraph"
    if u.abstained:
        return "the classifier abstained"
    if goal is not None:
        return f"confidence {u.confidence:.2f} < {min_confidence}"
    return "no goal matched"


def _fallback_plan(utterance: str, profile: str | None) -> Plan:
    """No understanding: a generic document search on the utterance, no patterns, clarify."""
    return Plan(goal=None, confidence=0.0, clarify=True, entities=(), entity_values={}, filter=None,
                lexical_query=utterance, dense_query=utterance, sections=FALLBACK_SECTIONS, profile=profile)


#: [Note] line of a fallback plan whose understanding failed (no identity to scope policy by).
NEUTRAL_NOTE = ("understanding failed: only policy documents not specific to a segment were searched "
                "(the customer's own tier/plan could not be checked)")


def neutral_filter(mapping: Any, session: Any, authoritative: Sequence[str], graph: Any = None,
                   as_of: Any = None) -> FilterTree:
    """The filter of a fallback plan whose understanding failed: the mapping's always-on clauses
    (tenant, documents in force at ``as_of``, session region...) and ``is_empty`` on every authoritative attribute's field
    (tier, plan...), as for an anonymous session: the utterance's words cannot pick a segment's
    policy when nobody checked them against the record. Raises what ``compile_filter`` raises."""
    from hopweave.understand.filter_map import compile_filter

    tree, _ = compile_filter(mapping, [], session, graph, graph.schema if graph is not None else None,
                             unscoped=authoritative, as_of=as_of)
    return tree


def scope_filter(tree: FilterTree | None, scope: Mapping[str, Sequence[Any]]) -> FilterTree | None:
    """``tree`` with the goal's document scope: top-level clauses on a scoped field are replaced
    by ``field in scope[field]`` (the goal owns those fields; an ``absent_means_any`` clause,
    ``field is empty or field = v``, counts as a clause on ``field``)."""
    owned = set(scope)
    clauses = list(tree.clauses) if isinstance(tree, And) else ([tree] if tree is not None else [])
    kept = [c for c in clauses if isinstance(c, IsEmpty) or clause_field(c) not in owned]
    added: list[FilterTree] = []
    for name in sorted(scope):
        values = tuple(scope[name])
        if values:
            added.append(Eq(field=name, value=values[0]) if len(values) == 1 else In(field=name, values=values))
    return and_(*kept, *added)


def precedent_patterns(sections: Sequence[SectionTemplate], patterns: Sequence[TraversalPattern]) -> set[str]:
    """Names of the patterns feeding a ``precedent`` section (listed there or assigned to it)."""
    names = {s.name for s in sections if s.source == "precedent"}
    out = {p for s in sections if s.source == "precedent" for p in s.patterns}
    out |= {p.name for p in patterns if p.section in names}
    return out


def case_text_for(utterance: str, plan: Plan, facts: Sequence[PatternResult], as_of: datetime) -> str:
    """The current case as text, for precedent similarity: the utterance, the entity values and
    the derived facts (aggregate lines) of the goal's sections whose kind describes the case
    (``SectionKind.describes_case``: facts)."""
    parts = [utterance] + [str(v) for _, v in sorted(plan.entity_values.items())]
    by = {f.pattern: f.rows for f in facts}
    base = {"as_of_year": as_of.year, "as_of_date": as_of.date().isoformat()}
    for s in plan.sections:
        if not section_kind(s.source).describes_case:
            continue
        rows = {n: by.get(n, ()) for n in s.patterns}
        for agg in s.aggregates:
            line = aggregate_line(agg, rows, base)
            if line:
                parts.append(line)
    return ". ".join(p for p in parts if p)


def chunk_items(hits: Sequence[Hit], documents_at: str | None = None) -> tuple[ChunkItem, ...]:
    """Search hits as ChunkItems (rank from 1, per-channel rank / score / contribution).

    With ``documents_at`` (the hits are the revisions in force then) a chunk's ``version`` is its
    lifecycle at that instant, ``current``; the store's own word (which revision was loaded
    last, e.g. ``superseded`` once a later revision is loaded) stays in ``metadata.stored_version``,
    so the context at an as_of does not change when a later revision is loaded."""
    items = []
    for i, h in enumerate(hits, start=1):
        chans = []
        if h.semantic is not None:
            chans.append(ChannelView(channel="semantic", rank=h.semantic.rank, score=round(h.semantic.score, 6),
                                     contribution=_round(h.semantic.contribution)))
        if h.lexical is not None:
            chans.append(ChannelView(channel="lexical", rank=h.lexical.rank, score=round(h.lexical.score, 6),
                                     contribution=_round(h.lexical.contribution)))
        if h.rerank is not None:
            chans.append(ChannelView(channel="rerank", rank=h.rerank.fused_rank, score=round(h.rerank.score, 6)))
        meta = {k: v for k, v in h.payload.items() if k not in ("provenance", "text_hash", "embedding_space")}
        version = h.version or ""
        if documents_at is not None:
            meta["stored_version"], meta["version"], version = version, CURRENT, CURRENT
        items.append(ChunkItem(
            chunk_id=h.chunk_id, document_id=h.document_id, document=h.document or "", title=h.title,
            revision=h.revision or "", version=version, section=h.section, text=h.text,
            score=round(h.score, 6), rank=i, channels=tuple(chans), metadata=meta,
        ))
    return tuple(items)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def agent_notes(plan: Plan) -> list[str]:
    """The [Note] lines the agent sees: an unclear goal, what the utterance named that was not
    used (mentions), and the understanding stage's remarks (de-duplicated, in that order)."""
    notes = []
    if plan.clarify:
        notes.append(f"Goal unclear (best guess {plan.best or 'none'}, confidence {plan.confidence:.2f}): "
                     "ask the customer what they need before acting.")
    notes.extend(m.line() for m in plan.mentions)
    notes.extend(plan.notes)
    return list(dict.fromkeys(notes))
