"""Fixtures for the search tests: one real embedder per session, small schema-valid fixtures."""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np
import pytest

from hopweave.models.schema import GraphSchema
from hopweave.paths import default_schema_path
from hopweave.search.embedder import Embedder, EmbeddingSpace


class HashEmbedder(Embedder):
    """A deterministic 16-d bag-of-words embedder: a cheap *dependency* for index tests.

    The index, filters and fusion are what those tests exercise; the real model is tested in
    test_embedders.py and used by the ingest tests.
    """

    def __init__(self, revision: str = "1", dims: int = 16) -> None:
        self.space = EmbeddingSpace(provider="test", model="hash-bow", revision=revision, dimensions=dims)

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), self.space.dimensions), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "little")
                out[i, h % self.space.dimensions] += 1.0
            out[i, 0] += 0.01
            out[i] /= np.linalg.norm(out[i])
        return out


@pytest.fixture(scope="session")
def schema() -> GraphSchema:
    return GraphSchema.load(default_schema_path())


@pytest.fixture(scope="session")
def embedder():
    from hopweave.search.embedders import default_embedder

    return default_embedder()


@pytest.fixture(scope="session")
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()
