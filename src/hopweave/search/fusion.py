"""Fusion of the lexical and semantic candidate lists under a RankingProfile (pure functions).

Input lists are ``[(chunk_id, raw_score), ...]``; :func:`rank_channel` sorts them by descending
score then ascending chunk id, so ranks are deterministic even when scores tie. The output is a
list of :class:`Fused` (chunk id, fused score, per-channel ChannelScore or None) sorted by
descending fused score then ascending chunk id.

Why in Python and not with Qdrant's ``Fusion.Rrf``: the contract reports, for every hit, each
channel's rank, raw score and weighted contribution, which a fused Qdrant response does not carry;
Qdrant's weighted RRF is ``1 / (rank / w + k - 1)`` rather than seed 002's ``w / (k + rank)``;
and Qdrant breaks score ties by internal order, not by chunk id. For the equal-weight profile the
two agree (``Fusion.Rrf(k + 1)``): ``tests/unit/search/test_fusion_qdrant.py`` checks that.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from hopweave.models.ranking import ChannelScore, RankingProfile

Candidates = Sequence[tuple[str, float]]


@dataclass(frozen=True)
class Fused:
    chunk_id: str
    score: float
    lexical: ChannelScore | None
    semantic: ChannelScore | None


def rank_channel(cands: Candidates, limit: int | None = None) -> list[tuple[str, float]]:
    """Sort by (-score, chunk_id), drop duplicate ids (keeping the best), cut to ``limit``."""
    best: dict[str, float] = {}
    for cid, s in cands:
        if cid not in best or s > best[cid]:
            best[cid] = float(s)
    out = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
    return out[:limit] if limit is not None else out


def _minmax(cands: list[tuple[str, float]]) -> dict[str, float]:
    if not cands:
        return {}
    hi = max(s for _, s in cands)
    lo = min(s for _, s in cands)
    if hi == lo:
        return {cid: 1.0 for cid, _ in cands}
    return {cid: (s - lo) / (hi - lo) for cid, s in cands}


def fuse(profile: RankingProfile, lexical: Candidates, semantic: Candidates) -> list[Fused]:
    """Fuse two candidate lists under ``profile``; returns every candidate, best first.

    Channels the profile does not use are ignored (their ChannelScore is still reported with
    ``contribution=None`` when the candidate appears in that list).
    """
    lex = rank_channel(lexical, profile.candidates_per_channel)
    sem = rank_channel(semantic, profile.candidates_per_channel)
    lex_rank = {cid: (i + 1, s) for i, (cid, s) in enumerate(lex)}
    sem_rank = {cid: (i + 1, s) for i, (cid, s) in enumerate(sem)}

    def contrib_rrf(rank: int, weight: float) -> float:
        return weight / (profile.rank_constant + rank)

    lex_norm = _minmax(lex) if profile.method == "convex" else {}
    sem_norm = _minmax(sem) if profile.method == "convex" else {}
    alpha = profile.alpha or 0.0

    ids = set(lex_rank) | set(sem_rank)
    out: list[Fused] = []
    for cid in ids:
        lc = sc = None
        total = 0.0
        if cid in lex_rank:
            r, s = lex_rank[cid]
            c: float | None
            if not profile.uses_lexical:
                c = None
            elif profile.method in ("rrf", "weighted_rrf"):
                c = contrib_rrf(r, profile.lexical_weight)
            elif profile.method == "convex":
                c = (1.0 - alpha) * lex_norm[cid]
            else:  # lexical only
                c = s
            total += c or 0.0
            lc = ChannelScore.model_construct(rank=r, score=s, contribution=c)
        if cid in sem_rank:
            r, s = sem_rank[cid]
            if not profile.uses_semantic:
                c = None
            elif profile.method in ("rrf", "weighted_rrf"):
                c = contrib_rrf(r, profile.semantic_weight)
            elif profile.method == "convex":
                c = alpha * sem_norm[cid]
            else:  # dense only
                c = s
            total += c or 0.0
            sc = ChannelScore.model_construct(rank=r, score=s, contribution=c)
        used = (lc is not None and lc.contribution is not None) or (
            sc is not None and sc.contribution is not None
        )
        if used:
            out.append(Fused(cid, total, lc, sc))
    out.sort(key=lambda f: (-f.score, f.chunk_id))
    return out
