"""The two concurrent branches of a retrieval: the document search and the graph branch
(the goal's patterns, then precedent ranking over their rows). Pure functions of their inputs;
the engine runs them on its pool through :func:`~hopweave.engine.stages.run_stage`.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

from hopweave.engine import precedent
from hopweave.engine.plan import Plan, case_text_for, chunk_items, precedent_patterns
from hopweave.engine.query_vectors import dense_vector, utterance_vector
from hopweave.engine.result import ChunkItem, Degradation, PrecedentItem
from hopweave.engine.stages import DocumentIndex, run_stage
from hopweave.graph.base import GraphStore
from hopweave.models.common import Bindings, PatternResult
from hopweave.models.ranking import RankingProfile
from hopweave.search.embedder import Embedder


@dataclass(frozen=True)
class SearchOutcome:
    """The document search's chunks, the profile it ranked them by, the channels it skipped as
    (what, why), and its elapsed ms."""

    chunks: tuple[ChunkItem, ...]
    profile: RankingProfile
    skipped: tuple[tuple[str, str], ...]
    elapsed_ms: float


@dataclass(frozen=True)
class GraphOutcome:
    """The graph branch's pattern results, its ranked precedent, its own degradations and the
    precedent ranking's elapsed ms."""

    facts: tuple[PatternResult, ...]
    precedent: tuple[PrecedentItem, ...]
    degraded: tuple[Degradation, ...]
    precedent_ms: float


def search_documents(index: DocumentIndex, embedder: Embedder, tenant_id: str, plan: Plan, limit: int,
                     utterance: str | None = None, lexical_only: bool = False) -> SearchOutcome:
    """The plan's pre-filtered hybrid search; with ``utterance`` the dense channel reuses the
    request's one query vector (:func:`~hopweave.engine.query_vectors.dense_vector`), else it
    embeds the plan's search text. ``lexical_only``: the same search over the same filter with
    the lexical channel alone (:func:`lexical_profile`; nothing is embedded), its query the
    lexical plan's with the goal's search question (``plan.dense_query``, when it is not the
    utterance) added. Raises what the index raises (StoreError...)."""
    from hopweave.search.profiles import get_profile

    t = time.perf_counter()
    profile = get_profile(plan.profile)
    if lexical_only:
        profile = lexical_profile(profile)
    vec = space = None
    if profile.uses_semantic:
        vec = dense_vector(embedder, utterance, plan.dense_query) if utterance is not None else \
            embedder.embed([plan.dense_query])[0]
        space = embedder.space
    # the goal's document scope feeds a feature profile's ``scope`` feature
    extra = ({"scope": dict(plan.goal.document_scope)}
             if profile.features is not None and plan.goal is not None and plan.goal.document_scope else {})
    query = plan.lexical_query
    if lexical_only and plan.dense_query not in (query, utterance):  # the goal's question: the dense channel's words
        query = f"{query} {plan.dense_query}"
    res = index.search(tenant_id, query, profile, where=plan.filter, limit=limit, query_vector=vec,
                       query_space=space, include_superseded=plan.documents_at is not None, **extra)
    skipped: list[tuple[str, str]] = []
    if res.coverage.semantic_skipped_reason and profile.uses_semantic:
        skipped.append(("semantic channel", res.coverage.semantic_skipped_reason))
    if res.coverage.lexical_skipped_reason and profile.uses_lexical:
        skipped.append(("lexical channel", res.coverage.lexical_skipped_reason))
    return SearchOutcome(chunk_items(res.hits, plan.documents_at), profile, tuple(skipped), _ms(t))


def lexical_profile(profile: RankingProfile) -> RankingProfile:
    """``profile`` ranking with its lexical channel alone: unchanged when it uses no semantic
    channel; its method's lexical-only variant (a convex profile with ``alpha`` 0, its features
    kept) when the method has one; else the published ``lexical_only`` profile."""
    from hopweave.models.fusion_methods import FUSION_METHODS
    from hopweave.search.profiles import get_profile

    row = FUSION_METHODS[profile.method]
    if not profile.uses_semantic:
        return profile
    return profile.model_copy(update=row.lexical_only) if row.lexical_only else get_profile("lexical_only")


def graph_branch(
    graph: GraphStore,
    embedder: Embedder,
    vectors: precedent.TraceVectorCache,
    plan: Plan,
    bindings: Bindings,
    utterance: str,
    max_workers: int,
) -> GraphOutcome:
    """The goal's patterns in parallel (a complete result kept while the store's data is
    unchanged: :func:`~hopweave.understand.read_cache.goal_patterns`), then precedent ranking
    over the precedent patterns' rows (a failure there degrades to no precedent lines, or BM25
    alone if only the embedder failed)."""
    from hopweave.understand.read_cache import goal_patterns

    tenant_id = bindings.session.tenant_id
    facts = goal_patterns(graph, tenant_id, plan.patterns, bindings, max_workers=max_workers)
    t = time.perf_counter()
    degraded: list[Degradation] = []
    names = precedent_patterns(plan.sections, plan.patterns)
    items: list[PrecedentItem] = []
    if names:
        fetch = functools.partial(_props, graph, tenant_id)

        def rank() -> list[PrecedentItem]:
            cands = precedent.candidates(facts, names, bindings.as_of, fetch=fetch)
            case_text = case_text_for(utterance, plan, facts, bindings.as_of)
            ranked = run_stage(degraded, "precedent", lambda: precedent.rank(
                cands, case_text, embedder, vectors, query_vector=utterance_vector(embedder, utterance)),
                               default=None, what="semantic similarity", fallback="BM25 ranking only")
            return ranked if ranked is not None else precedent.rank(cands, case_text, None)

        items = run_stage(degraded, "precedent", rank, default=[], what="precedent ranking",
                          fallback="no precedent lines")
    return GraphOutcome(tuple(facts), tuple(items), tuple(degraded), _ms(t))


def _props(graph: GraphStore, tenant_id: str, node_id: str) -> dict[str, Any] | None:
    node = graph.get_node(tenant_id, node_id)
    return dict(node.props) if node is not None else None


def _ms(t: float) -> float:
    return round((time.perf_counter() - t) * 1000, 3)


def pattern_degradations(facts: list[PatternResult]) -> list[Degradation]:
    """A degradation per pattern cut by time/size or failed ("limit" is the pattern's design)."""
    return [Degradation(stage="traverse", what=f"pattern {f.pattern}@{f.version}",
                        reason=f.error or f"truncated: {f.truncated_reason}",
                        fallback="rows found so far, flagged in the context" if f.rows else
                        "section shows it is incomplete")
            for f in facts if f.error or (f.truncated and f.truncated_reason != "limit")]


__all__ = ["GraphOutcome", "SearchOutcome", "graph_branch", "lexical_profile", "pattern_degradations",
           "search_documents"]
