"""Episodic retrieval: precedent from past decision traces.

Two steps, as the seed describes. The graph narrows: the goal's precedent patterns (the patterns
feeding a ``precedent`` section) return the ``:DecisionTrace`` nodes that match the case
structurally (same tier, same event type, recent; the predicates live in the pattern, not here).
Then a small hybrid search ranks only those traces by similarity to the current case: dense
cosine between the embedded trace ``text`` (the agent's reasoning) and the case description, and
BM25 over the candidates' texts, fused under a ranking profile.

Recorded retrievals (``kind = "retrieval"``) are never precedent, and neither is a trace stamped
after the request's ``as_of`` (a replay must not see the future).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from hopweave.engine.result import ChannelView, PrecedentItem
from hopweave.models.common import PatternResult, Row
from hopweave.models.fusion_methods import FUSION_METHODS
from hopweave.models.instants import format_datetime
from hopweave.models.ranking import RankingProfile
from hopweave.search.embedder import Embedder
from hopweave.search.fusion import fuse
from hopweave.search.lexical import Bm25Encoder, Bm25Params, bm25_reference
from hopweave.search.text_vectors import NOT_PRECEDENT_KINDS, TextVectorCache

#: Precedent ranking: hybrid at alpha = 0.8 (semantic weight), min-max normalised per channel.
PRECEDENT_PROFILE = RankingProfile(
    name="precedent_convex",
    version=1,
    method="convex",
    alpha=0.8,
    normalisation="minmax",
    candidates_per_channel=200,
    experimental=False,
    description="Precedent ranking: convex fusion (alpha 0.8) of trace-text cosine and BM25 over "
    "the structurally matching traces only.",
)



class TraceVectorCache(TextVectorCache):
    """Embeddings of trace texts keyed by (embedding space, text hash): immutable, so shared
    across requests for the life of the engine; with ``directory`` (a store's
    :func:`~hopweave.search.text_vectors.vectors_dir`) also on disk, where the store's load put
    its precedent traces' vectors (no forward pass at request time)."""

    def __init__(self, directory: str | Path | None = None) -> None:
        super().__init__(directory, "traces")


@dataclass(frozen=True)
class Candidate:
    pattern: str
    row: Row
    text: str


def candidates(
    facts: Sequence[PatternResult],
    patterns: set[str],
    as_of: datetime,
    fetch: Callable[[str], dict[str, Any] | None] | None = None,
) -> list[Candidate]:
    """DecisionTrace rows of the precedent patterns, deduplicated by id (first pattern wins),
    without recorded retrievals and traces later than ``as_of``. ``fetch(node_id)`` supplies
    the trace's properties when the row does not carry ``text``/``kind`` (tenant-scoped get)."""
    out: dict[str, Candidate] = {}
    stamp = format_datetime(as_of)
    for pr in sorted(facts, key=lambda f: f.pattern):
        if pr.pattern not in patterns:
            continue
        for row in pr.rows:
            if row.label != "DecisionTrace" or row.node_id in out:
                continue
            props = dict(row.properties)
            if fetch is not None and ("text" not in props or "kind" not in props):
                props = {**(fetch(row.node_id) or {}), **props}
            if props.get("kind") in NOT_PRECEDENT_KINDS:
                continue
            ts = props.get("timestamp")
            if isinstance(ts, str) and ts[:19] > stamp:
                continue
            text = str(props.get("text") or props.get("summary") or "")
            out[row.node_id] = Candidate(pr.pattern, row.model_copy(update={"properties": props}), text)
    return [out[k] for k in sorted(out)]


_TERMS = Bm25Encoder()


@lru_cache(maxsize=4096)  # pure; the same past traces are candidates of request after request
def _doc_terms(text: str) -> tuple[str, ...]:
    """A candidate's BM25 document terms (``Bm25Encoder().doc_terms``; no title)."""
    return tuple(_TERMS.doc_terms(text))


def rank(
    cands: Sequence[Candidate],
    case_text: str,
    embedder: Embedder | None,
    cache: TraceVectorCache | None = None,
    profile: RankingProfile = PRECEDENT_PROFILE,
    query_vector: np.ndarray | None = None,
) -> list[PrecedentItem]:
    """Rank candidates by hybrid similarity to ``case_text``; best first, ties by trace id.
    ``query_vector`` (the request's one query embedding) is the semantic side of the case when
    given; else ``case_text`` is embedded.

    Without an embedder (the search stack is down) the lexical channel ranks alone.
    """
    if not cands:
        return []
    ids = [c.row.node_id for c in cands]
    texts = [c.text for c in cands]
    terms = [_doc_terms(t) for t in texts]  # each text tokenized once (average length and vectors)
    enc = Bm25Encoder(Bm25Params(avg_len=max(1.0, sum(len(x) for x in terms) / len(terms))))
    lex_scores = bm25_reference(enc, [enc.encode_terms(x) for x in terms], enc.encode_query(case_text))
    lexical = [(i, s) for i, s in zip(ids, lex_scores) if s > 0]
    semantic: list[tuple[str, float]] = []
    if embedder is not None:
        vecs = (cache if cache is not None else TraceVectorCache()).vectors(embedder, texts)
        q = query_vector if query_vector is not None else embedder.embed([case_text])[0]
        semantic = [(i, float(s)) for i, s in zip(ids, vecs @ q)]
    elif FUSION_METHODS[profile.method].lexical_only:
        profile = profile.model_copy(update=FUSION_METHODS[profile.method].lexical_only)
    fused = {f.chunk_id: f for f in fuse(profile, lexical, semantic)}
    by_id = {c.row.node_id: c for c in cands}
    order = sorted(ids, key=lambda i: (-(fused[i].score if i in fused else 0.0), i))
    items: list[PrecedentItem] = []
    for r, tid in enumerate(order, start=1):
        c = by_id[tid]
        f = fused.get(tid)
        chans: list[ChannelView] = []
        if f is not None and f.semantic is not None:
            chans.append(ChannelView(channel="semantic", rank=f.semantic.rank, score=round(f.semantic.score, 6),
                                     contribution=_r(f.semantic.contribution)))
        if f is not None and f.lexical is not None:
            chans.append(ChannelView(channel="lexical", rank=f.lexical.rank, score=round(f.lexical.score, 6),
                                     contribution=_r(f.lexical.contribution)))
        props = {k: v for k, v in c.row.properties.items() if k not in ("text",)}
        items.append(
            PrecedentItem(
                trace_id=tid,
                summary=str(c.row.properties.get("summary") or ""),
                text=c.text,
                score=round(f.score, 6) if f else 0.0,
                rank=r,
                channels=tuple(chans),
                properties=props,
                pattern=c.pattern,
            )
        )
    return items


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6)
