"""The ``chunks`` section kind: policy chunks ranked by fused score, cut at a score cliff,
near-duplicates dropped, the best chunk of each source document first (diversity). Its row in
:data:`hopweave.engine.section_kinds.SECTION_KINDS` names :func:`collect`."""

from __future__ import annotations

from typing import Sequence

from hopweave.engine.context_lines import (
    Candidate,
    Collected,
    SectionDraft,
    SectionInputs,
    cut_ranked,
    jaccard,
    render,
    src_suffix,
)
from hopweave.engine.result import ChunkItem
from hopweave.models.metagraph import SectionTemplate

#: Jaccard similarity of word 3-shingles above which a chunk is a near-duplicate of a kept one.
NEAR_DUPLICATE = 0.8


def chunk_id(c: ChunkItem) -> str:
    """A chunk's item id (what its lines cite and the omissions are keyed by)."""
    return c.chunk_id


def _chunk_order(chunks: Sequence[ChunkItem], tpl: SectionTemplate) -> tuple[list[ChunkItem], dict[str, str]]:
    ranked = sorted(chunks, key=lambda c: (-c.score, c.chunk_id))
    kept, dropped = cut_ranked(ranked, tpl, chunk_id)
    unique: list[ChunkItem] = []
    for c in kept:
        dup = next((u for u in unique if jaccard(u.text, c.text) >= NEAR_DUPLICATE), None)
        if dup is not None:
            dropped[c.chunk_id] = f"near_duplicate_of:{dup.chunk_id}"
        else:
            unique.append(c)
    # Diversity: greedy by score, each chunk's score decayed by ``document_decay`` per chunk
    # already taken from its document (1.0 = pure score order; 0 = one per document first).
    ordered: list[ChunkItem] = []
    taken: dict[str, int] = {}
    pool = list(unique)
    while pool:  # the best decayed score; ties: the earliest in the pool (by position, no model __eq__)
        at = max(range(len(pool)), key=lambda i: (
            pool[i].score * tpl.document_decay ** taken.get(f"{pool[i].document_id}@{pool[i].revision}", 0), -i))
        best = pool.pop(at)
        ordered.append(best)
        key = f"{best.document_id}@{best.revision}"
        taken[key] = taken.get(key, 0) + 1
    for c in ordered[tpl.max_lines :]:
        dropped[c.chunk_id] = "max_lines"
    return ordered[: tpl.max_lines], dropped


def citation(c: ChunkItem) -> str:
    """A chunk line's human-readable provenance: id, document, revision, version, section."""
    parts = [c.chunk_id, c.document or c.document_id]
    if c.revision:
        parts.append(c.revision)
    if c.version:
        parts.append(c.version)
    if c.section:
        parts.append(f"section {c.section}")
    return ", ".join(parts)


def collect(s: SectionDraft, si: int, inputs: SectionInputs) -> Collected:
    """Fill a chunks section from the ranked chunks (``inputs.items["chunks"]``): cut at the
    score cliff, near-duplicates dropped, document diversity, at most ``max_lines``; a title
    with placeholders heads each chunk. Returns {chunk id: why it was dropped}."""
    tpl, chunks, provenance = s.tpl, inputs.items["chunks"], inputs.provenance
    kept, dropped = _chunk_order(chunks, tpl)
    line_t = '"{text}"' if tpl.line == "{summary}" else tpl.line
    for i, c in enumerate(kept):
        vals = {**c.metadata, **c.model_dump(exclude={"metadata", "channels"})}
        short = " ".join(x for x in (c.chunk_id, c.revision, c.version) if x)
        src = src_suffix((short,), provenance)
        header = f"[{render(tpl.title, vals, '{document}')}]" if "{" in tpl.title else None
        s.cands.append(Candidate(si, i, i, "chunk", render(line_t, vals, '"{text}"') + src, (c.chunk_id,),
                                 citation(c), header, c.chunk_id, src=src))
    return Collected(dropped=dropped)

