"""The identity of an embedding space (data: who made the vectors, with what, how wide).

Search results and ranking profiles echo it; the embedders in ``hopweave.search.embedder``
write vectors in it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class EmbeddingSpace(BaseModel):
    """Identity of a vector space: vectors from different spaces are never compared."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str
    model: str
    revision: str
    dimensions: int

    @property
    def key(self) -> str:
        """``provider/model@revision:dimensions``, the space's stable string form."""
        return f"{self.provider}/{self.model}@{self.revision}:{self.dimensions}"
