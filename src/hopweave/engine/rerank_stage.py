"""Reranking as an engine stage: off by default.

Chosen per goal (``rerank: bi_encoder`` in the goal's data) or per engine (``Engine.rerank``,
which wins; ``"none"`` turns it off for every goal). The reranker (:mod:`hopweave.search.rerank`)
rescores the first ``RERANK_TOP_N`` candidate chunks against the utterance; their score becomes
the reranker's and a ``rerank`` channel records it with the fused rank; the rest keep their fused
order after them. A failing reranker degrades to the fused order (listed in ``degraded``).

Why off: the only reranker available offline is the bi-encoder, which equals dense-only on
SciFact (nDCG@10 0.6497 against the fused hybrid's 0.7347, docs/BENCHMARKS.md), and on the
example packs' scenarios it does not beat the fused order either (``hopweave eval scenarios
--rerank bi_encoder``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hopweave.engine.result import ChannelView, ChunkItem
from hopweave.engine.stages import run_stage

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.config import Run
    from hopweave.engine.deps import StageDeps
    from hopweave.engine.plan import Plan

RERANK_TOP_N = 20


def rerank_chunks(deps: "StageDeps", run: "Run", plan: "Plan", chunks: tuple[ChunkItem, ...]
                  ) -> tuple[ChunkItem, ...]:
    """``chunks`` reranked when the engine (``deps.rerank``) or the goal asks for it.

    Args:
        deps: the engine's parts (its reranker choice, the embedder).
        run: the request in flight (a failing reranker is a degradation in it).
        plan: its plan (the goal's ``rerank``).
        chunks: the candidates in fused order.

    Returns:
        The reranked candidates, or ``chunks`` unchanged (no reranker, or it failed).

    Raises:
        ConfigError: an unknown reranker name.
    """
    from hopweave.search.rerank import get_reranker

    name = deps.rerank if deps.rerank is not None else (plan.goal.rerank if plan.goal is not None else None)
    if not chunks or name in (None, "", "none"):
        return chunks
    reranker = get_reranker(name, deps.embedder)
    if reranker is None:
        return chunks
    head, tail = list(chunks[:RERANK_TOP_N]), list(chunks[RERANK_TOP_N:])
    scores = run_stage(run.degraded, "search", lambda: reranker.score(run.req.utterance, head), default=None,
                       what=f"reranking ({name})", fallback="the fused order")
    if scores is None:
        return chunks
    order = sorted(range(len(head)), key=lambda i: (-scores[i], i, head[i].chunk_id))
    out = [head[i].model_copy(update={"score": round(float(scores[i]), 6), "rank": k + 1, "channels": (
        *head[i].channels, ChannelView(channel="rerank", rank=i + 1, score=round(float(scores[i]), 6)))})
        for k, i in enumerate(order)]
    return tuple(out + tail)


__all__ = ["RERANK_TOP_N", "rerank_chunks"]
