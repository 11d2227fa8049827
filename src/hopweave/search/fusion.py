"""Fusion of the lexical and semantic candidate lists under a RankingProfile (pure functions).

Input lists are ``[(chunk_id, raw_score), ...]``; :func:`rank_channel` sorts them by descending
score then ascending chunk id, so ranks are deterministic even when scores tie. The output is a
list of :class:`Fused` (chunk id, fused score, per-channel ChannelScore or None) sorted by
descending fused score then ascending chunk id. How each method scores a channel's candidate (and
whether it normalises the channel first) is its row of
:data:`~hopweave.models.fusion_methods.FUSION_METHODS`.

Why in Python and not with Qdrant's ``Fusion.Rrf``: the contract reports, for every hit, each
channel's rank, raw score and weighted contribution, which a fused Qdrant response does not carry;
Qdrant's weighted RRF is ``1 / (rank / w + k - 1)`` rather than the contract's ``w / (k + rank)``;
and Qdrant breaks score ties by internal order, not by chunk id. For the equal-weight profile the
two agree (``Fusion.Rrf(k + 1)``): ``tests/unit/search/test_profiles.py``
(``test_rrf_k60_equals_qdrant_fusion_rrf_k61``) checks that.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from hopweave.models.fusion_methods import FUSION_METHODS, FusionChannel
from hopweave.models.ranking import ChannelScore, FeatureScore, RankingProfile

Candidates = Sequence[tuple[str, float]]


@dataclass(frozen=True)
class Fused:
    chunk_id: str
    score: float
    lexical: ChannelScore | None
    semantic: ChannelScore | None
    features: tuple[FeatureScore, ...] = ()


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


def _zscore(cands: list[tuple[str, float]]) -> dict[str, float]:
    """(score - mean) / sd over the channel's candidates, shifted so the lowest is 0."""
    if not cands:
        return {}
    n = len(cands)
    mean = sum(s for _, s in cands) / n
    sd = (sum((s - mean) ** 2 for _, s in cands) / n) ** 0.5
    if sd == 0.0:
        return {cid: 1.0 for cid, _ in cands}
    lo = min(s for _, s in cands)
    return {cid: (s - lo) / sd for cid, s in cands}


NORMALISERS: dict[str, Callable[[list[tuple[str, float]]], dict[str, float]]] = {
    "minmax": _minmax,
    "zscore": _zscore,
}


def _channel(cands: Candidates, cap: int, used: bool, weight: float, share: float, norm: str | None) -> FusionChannel:
    ranked = rank_channel(cands, cap)
    return FusionChannel(
        used=used,
        weight=weight,
        share=share,
        ranked={cid: (i + 1, s) for i, (cid, s) in enumerate(ranked)},
        norm=NORMALISERS[norm](ranked) if norm else {},
    )


#: A channel's part in a fused candidate: (rank from 1, raw score, contribution or None).
RawChannel = tuple[int, float, "float | None"]
#: A fused candidate before its ChannelScore models are built: (chunk id, fused score, lexical,
#: semantic); :func:`fused_of` turns it into a :class:`Fused`.
RawFused = tuple[str, float, "RawChannel | None", "RawChannel | None"]


def fuse(profile: RankingProfile, lexical: Candidates, semantic: Candidates) -> list[Fused]:
    """Fuse two candidate lists under ``profile``; returns every candidate a used channel
    scored, best first (fused score descending, then chunk id).

    Channels the profile does not use are ignored (their ChannelScore is still reported with
    ``contribution=None`` when the candidate appears in that list).
    """
    return [fused_of(r) for r in fuse_raw(profile, lexical, semantic)]


def fused_of(raw: RawFused, score: float | None = None, features: tuple[FeatureScore, ...] = ()) -> Fused:
    """The :class:`Fused` of a raw fused candidate (with ``score`` instead of its own when given)."""
    cid, total, lex, sem = raw
    return Fused(cid, total if score is None else score, _channel_score(lex), _channel_score(sem), features)


def _channel_score(part: RawChannel | None) -> ChannelScore | None:
    if part is None:
        return None
    return ChannelScore.model_construct(rank=part[0], score=part[1], contribution=part[2])


def fuse_raw(profile: RankingProfile, lexical: Candidates, semantic: Candidates) -> list[RawFused]:
    """:func:`fuse` without building the result models (the search builds them for the hits it
    keeps only): the same candidates, scores and order."""
    cap, alpha = profile.candidates_per_channel, profile.alpha or 0.0
    feats = profile.features
    if profile.fill_channels or (feats is not None and feats.authority_candidates):
        # lists hold filled scores / authority prefetches beyond the cap: keep them all
        cap = max(cap, len(lexical), len(semantic))
    method = FUSION_METHODS[profile.method]
    norm = profile.normalisation if method.normalised else None
    channels = (
        _channel(lexical, cap, profile.uses_lexical, profile.lexical_weight, 1.0 - alpha, norm),
        _channel(semantic, cap, profile.uses_semantic, profile.semantic_weight, alpha, norm),
    )
    scorer = method.score
    out: list[RawFused] = []
    for cid in set(channels[0].ranked) | set(channels[1].ranked):
        total = 0.0
        parts: list[RawChannel | None] = []
        contributed = False
        for ch in channels:
            if cid not in ch.ranked:
                parts.append(None)
                continue
            c = scorer(profile, ch, cid) if ch.used else None
            total += c or 0.0
            contributed = contributed or c is not None
            parts.append((ch.ranked[cid][0], ch.ranked[cid][1], c))
        if contributed:
            out.append((cid, total, parts[0], parts[1]))
    out.sort(key=lambda f: (-f[1], f[0]))
    return out
