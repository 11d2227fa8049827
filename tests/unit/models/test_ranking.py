"""The ranking and embedding-space models: immutable, validated data."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hopweave.models.embedding import EmbeddingSpace
from hopweave.models.ranking import RankingProfile


def test_profiles_are_frozen_and_validated() -> None:
    p = RankingProfile(name="rrf_k60", version=1, method="rrf", rank_constant=60)
    with pytest.raises(ValidationError):
        p.rank_constant = 2  # type: ignore[misc]
    with pytest.raises(ValueError):
        RankingProfile(name="x", version=1, method="convex")  # no alpha
    with pytest.raises(ValueError):
        RankingProfile(name="x", version=1, method="convex", alpha=0.5)  # no normalisation
    with pytest.raises(ValueError):
        RankingProfile(name="x", version=1, method="rrf", alpha=0.5)  # alpha only for convex
    with pytest.raises(ValueError):
        RankingProfile(name="x", version=1, method="rrf", lexical_weight=0.3, semantic_weight=0.7)
    with pytest.raises(ValueError):
        RankingProfile(name="Bad Name", version=1, method="rrf")


def test_embedding_space_key_and_equality() -> None:
    a = EmbeddingSpace(provider="p", model="m", revision="r1", dimensions=8)
    assert a.key == "p/m@r1:8"
    assert a == EmbeddingSpace(provider="p", model="m", revision="r1", dimensions=8)
    assert a != a.model_copy(update={"revision": "r2"})
    with pytest.raises(ValidationError):
        EmbeddingSpace(provider="p", model="m", revision="r1", dimensions=8, extra=1)  # type: ignore[call-arg]
