"""The fusion methods of a :class:`~hopweave.models.ranking.RankingProfile`, as data.

Everything that differs between two methods is one row of :data:`FUSION_METHODS`: which channels
a profile of the method uses, what makes a profile of it incoherent, whether its channel scores
are normalised first, how a channel's candidate contributes to the fused score, and what the
profile becomes when no query vector can be had. The profile model
(:mod:`hopweave.models.ranking`), the fusion (:mod:`hopweave.search.fusion`), the precedent
ranking and the evaluation read the row; add a row (and its ``Method`` name) instead of writing
``if method == ...`` anywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Protocol

Method = Literal["rrf", "weighted_rrf", "convex", "dense", "lexical"]


class Profile(Protocol):
    """The fields of a :class:`~hopweave.models.ranking.RankingProfile` a method row reads (the
    profile model imports this module, not the other way round)."""

    @property
    def method(self) -> Method: ...
    @property
    def lexical_weight(self) -> float: ...
    @property
    def semantic_weight(self) -> float: ...
    @property
    def rank_constant(self) -> int: ...
    @property
    def alpha(self) -> float | None: ...
    @property
    def normalisation(self) -> str: ...


@dataclass(frozen=True)
class FusionChannel:
    """One channel's ranked candidates and what the profile gives it (the fusion builds one per
    channel and hands it to the method's :attr:`FusionMethod.score`)."""

    #: The profile uses the channel (its candidates contribute).
    used: bool
    #: The channel's RRF weight.
    weight: float
    #: The channel's convex share (alpha for semantic, 1 - alpha for lexical).
    share: float
    #: chunk id -> (rank from 1, raw score).
    ranked: dict[str, tuple[int, float]]
    #: chunk id -> normalised score (empty unless the method is :attr:`FusionMethod.normalised`).
    norm: dict[str, float]


#: (profile, channel, chunk id) -> the channel's contribution to that chunk's fused score.
Scorer = Callable[[Profile, FusionChannel, str], float]


def _rrf(profile: Profile, ch: FusionChannel, cid: str) -> float:
    return ch.weight / (profile.rank_constant + ch.ranked[cid][0])


def _convex(profile: Profile, ch: FusionChannel, cid: str) -> float:
    return ch.share * ch.norm[cid]


def _raw(profile: Profile, ch: FusionChannel, cid: str) -> float:
    return ch.ranked[cid][1]


def _no_check(profile: Profile) -> None:
    return None


def _check_convex(profile: Profile) -> None:
    if profile.alpha is None:
        raise ValueError("a convex profile needs alpha (weight of the semantic channel)")
    if profile.normalisation == "none":
        raise ValueError("a convex profile needs a score normalisation (minmax)")


def _check_weights(profile: Profile) -> None:
    if profile.rank_constant == 0 and profile.lexical_weight == 0 and profile.semantic_weight == 0:
        raise ValueError("at least one channel weight must be positive")


def _check_rrf(profile: Profile) -> None:
    if profile.lexical_weight != profile.semantic_weight:
        raise ValueError("rrf uses equal weights; use weighted_rrf for unequal weights")
    _check_weights(profile)


@dataclass(frozen=True)
class FusionMethod:
    """One fusion method (see the module docstring)."""

    name: Method
    #: A channel's contribution for a candidate it ranked (see :class:`FusionChannel`).
    score: Scorer
    #: Whether a profile of this method uses the lexical / the semantic channel.
    uses_lexical: Callable[[Profile], bool]
    uses_semantic: Callable[[Profile], bool]
    #: Raises ValueError (the profile validator's message) for an incoherent profile.
    check: Callable[[Profile], None] = _no_check
    #: The profile's ``alpha`` applies (any other method refuses one).
    takes_alpha: bool = False
    #: Channel scores are normalised by the profile's ``normalisation`` before scoring.
    normalised: bool = False
    #: One channel ranks alone (a baseline the evaluation compares the others against).
    single_channel: bool = False
    #: The fields to change (``profile.model_copy(update=...)``) to rank with the lexical channel
    #: alone, when there is no query vector (empty: the profile already does).
    lexical_only: dict[str, Any] = field(default_factory=dict)


#: Every fusion method, by name (the keys are exactly :data:`Method`).
FUSION_METHODS: dict[Method, FusionMethod] = {
    m.name: m
    for m in (
        FusionMethod("rrf", _rrf, uses_lexical=lambda p: p.lexical_weight > 0,
                     uses_semantic=lambda p: p.semantic_weight > 0, check=_check_rrf),
        FusionMethod("weighted_rrf", _rrf, uses_lexical=lambda p: p.lexical_weight > 0,
                     uses_semantic=lambda p: p.semantic_weight > 0, check=_check_weights),
        FusionMethod("convex", _convex, uses_lexical=lambda p: (p.alpha or 0.0) < 1.0,
                     uses_semantic=lambda p: (p.alpha or 0.0) > 0.0, check=_check_convex, takes_alpha=True,
                     normalised=True, lexical_only={"alpha": 0.0}),
        FusionMethod("dense", _raw, uses_lexical=lambda p: False, uses_semantic=lambda p: True,
                     single_channel=True),
        FusionMethod("lexical", _raw, uses_lexical=lambda p: True, uses_semantic=lambda p: False,
                     single_channel=True),
    )
}
