"""Ranking profiles and search results (the versioned, explainable ranking contract).

A :class:`RankingProfile` is immutable data: a name, a version, a fusion method and its
parameters, the candidate cap per channel and the versions of the components it was tuned with.
Profiles are published in ``hopweave/search/profiles.yaml`` and selected by name per request; a
published profile never changes (a change is a new name). Every response echoes the exact
profile it was ranked with.

Fusion methods (each one row of :data:`~hopweave.models.fusion_methods.FUSION_METHODS`):

* ``rrf`` / ``weighted_rrf``: ``contribution = weight / (rank_constant + rank)``, ranks from 1, an
  absent candidate contributes 0, weights are not renormalised when a channel is empty.
* ``convex``: ``alpha * norm(semantic) + (1 - alpha) * norm(lexical)`` with per-channel min-max
  normalisation over that channel's candidates (absent = 0).
* ``dense`` / ``lexical``: a single channel; fused score = raw score.

Ties always break by ascending chunk id.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hopweave.models.embedding import EmbeddingSpace
from hopweave.models.fusion_methods import (
    FUSION_METHODS,
    Method as Method,  # re-exported: the names live with their rows
)

Normalisation = Literal["none", "minmax", "zscore"]

#: Fields added to RankingProfile after profiles were first published: left out of the
#: fingerprint while they hold their default, so published fingerprints never move.
_LATER_FIELDS: dict[str, Any] = {"features": None, "fill_channels": False}
_LATER_FEATURE_FIELDS: dict[str, Any] = {"authority_types": [], "authority_candidates": 0}


class FeatureWeights(BaseModel):
    """Source-authority and structure features of a hit and what each adds to the fused score.

    Every feature value lies in [0, 1] and contributes ``weight * value`` (``doc_type``: the
    weight listed for the hit's type, ``doc_type_default`` for an undeclared or unlisted type):

    * ``doc_type``: the document's declared type (front matter ``doc_type``: policy,
      fee_schedule, procedure, faq, note, template, ...);
    * ``recency``: ``0.5 ** (age_days / recency_half_life_days)``, the age counted from the
      newest ``valid_from`` among the candidates (so it depends on the store, never the clock);
    * ``section_heading``: share of the query's index terms found in the section heading;
    * ``section_number``: 1 when the query names the hit's section number (``3.2``);
    * ``scope``: the goal's document scope: 1 for the first value listed for a scoped field,
      decreasing by position (``1 - i / n``), averaged over the scoped fields.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    doc_type: dict[str, float] = Field(default_factory=dict)
    doc_type_default: float = 0.0
    recency: float = 0.0
    recency_half_life_days: float = Field(default=365.0, gt=0.0)
    section_heading: float = 0.0
    section_number: float = 0.0
    scope: float = 0.0
    #: Authority prefetch: each channel also fetches its best ``authority_candidates`` points of
    #: these document types (same filter, same IDF population), so an authoritative passage
    #: crowded out of the candidate lists by restatements can still be ranked (0 = off).
    authority_types: tuple[str, ...] = ()
    authority_candidates: int = Field(default=0, ge=0, le=200)

    def payload_fields(self) -> tuple[str, ...]:
        """Payload fields the features read (fetched with every candidate)."""
        return ("doc_type", "valid_from", "section", "heading")


class RankingProfile(BaseModel):
    """An immutable, named, versioned fusion recipe."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")
    version: int = Field(ge=1)
    method: Method
    lexical_weight: float = Field(default=1.0, ge=0.0)
    semantic_weight: float = Field(default=1.0, ge=0.0)
    rank_constant: int = Field(default=60, ge=0)
    alpha: Optional[float] = Field(default=None, ge=0.0, le=1.0)
    normalisation: Normalisation = "none"
    candidates_per_channel: int = Field(default=50, ge=1, le=1000)
    components: dict[str, str] = Field(default_factory=dict)
    experimental: bool = True
    description: str = ""
    #: Score both channels for every candidate either channel found (a candidate missing from a
    #: channel's list gets that channel's exact score instead of nothing).
    fill_channels: bool = False
    features: Optional[FeatureWeights] = None

    @model_validator(mode="after")
    def _coherent(self) -> "RankingProfile":
        method = FUSION_METHODS[self.method]
        if self.alpha is not None and not method.takes_alpha:
            raise ValueError(f"alpha only applies to convex profiles, not {self.method}")
        method.check(self)
        return self

    @property
    def uses_lexical(self) -> bool:
        """The lexical channel contributes to this profile's fused score."""
        return FUSION_METHODS[self.method].uses_lexical(self)

    @property
    def uses_semantic(self) -> bool:
        """The semantic channel contributes to this profile's fused score."""
        return FUSION_METHODS[self.method].uses_semantic(self)

    def fingerprint(self) -> str:
        """sha256 of the canonical JSON definition (detects an edit of a published profile)."""
        data = self.model_dump(mode="json")
        for key, default in _LATER_FIELDS.items():
            if data.get(key) == default:
                del data[key]
        for key, default in _LATER_FEATURE_FIELDS.items():
            if isinstance(data.get("features"), dict) and data["features"].get(key) == default:
                del data["features"][key]
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


class ChannelScore(BaseModel):
    """One channel's view of a hit: rank (from 1), raw score, and its weighted contribution."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rank: int = Field(ge=1)
    score: float
    contribution: Optional[float] = None


class FeatureScore(BaseModel):
    """One ranking feature of a hit: its value in [0, 1] and what it added to the score."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    value: float
    contribution: float
    detail: str = ""


class RerankScore(BaseModel):
    """Reranker score and the rank before reranking."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    score: float
    fused_rank: int = Field(ge=1)


class Hit(BaseModel):
    """One ranked chunk with provenance and per-channel scores."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    chunk_id: str
    document_id: str
    document: Optional[str] = None
    title: str = ""
    section: str = ""
    revision: Optional[str] = None
    version: Optional[str] = None
    text: str
    payload: dict[str, Any] = Field(default_factory=dict)
    score: float
    lexical: Optional[ChannelScore] = None
    semantic: Optional[ChannelScore] = None
    rerank: Optional[RerankScore] = None
    #: Per-feature values and contributions (profiles with ``features``), name order.
    features: tuple[FeatureScore, ...] = ()


EmbeddingCoverage = Literal["full", "partial", "missing"]


class Coverage(BaseModel):
    """How much of the eligible (filtered) corpus each channel could see."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    eligible_records: int = Field(ge=0)
    embedded_records: int = Field(ge=0)
    embedding_coverage: EmbeddingCoverage
    semantic_skipped_reason: Optional[str] = None
    lexical_skipped_reason: Optional[str] = None


class SearchResult(BaseModel):
    """Hits plus everything needed to interpret (and replay) them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hits: tuple[Hit, ...]
    profile: RankingProfile
    coverage: Coverage
    candidates: dict[str, int] = Field(default_factory=dict)
    candidates_truncated: dict[str, bool] = Field(default_factory=dict)
    query_space: Optional[EmbeddingSpace] = None
    collection_space: Optional[EmbeddingSpace] = None
    filter: Optional[dict[str, Any]] = None
    timings_ms: dict[str, float] = Field(default_factory=dict)

    def ids(self) -> list[str]:
        return [h.chunk_id for h in self.hits]
