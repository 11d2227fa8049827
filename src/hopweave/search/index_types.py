"""The data a :class:`~hopweave.search.index_base.VectorIndex` exchanges with its adapters:
the collection's identity (:class:`CollectionInfo`), points to upsert (:class:`IndexPoint`),
candidate queries (:class:`ChannelRequest`, built by :func:`lexical_request` and
:func:`dense_request`) and their answers (:class:`Candidate`), the payload index kinds a
collection needs and the deterministic point ids. Plain data and pure functions, no I/O.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Final, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from hopweave.errors import EmbeddingSpaceError
from hopweave.models.ranking import Hit, RankingProfile
from hopweave.models.schema import GraphSchema
from hopweave.search.embedder import EmbeddingSpace
from hopweave.search.fusion import Fused
from hopweave.search.lexical import Bm25Encoder, Bm25Params, SparseVec, Tokenizer, TokenizerConfig

__all__ = [
    "DENSE",
    "INTERNAL_KEYWORD_FIELDS",
    "LEXICAL",
    "SPACE_FIELD",
    "Candidate",
    "ChannelRequest",
    "CollectionInfo",
    "IndexPoint",
    "dense_request",
    "lexical_request",
    "hit_of",
    "payload_index_kinds",
    "point_id",
]

DENSE: Final = "dense"
LEXICAL: Final = "lexical"
#: Payload fields the index itself maintains (beyond the schema's chunk fields).
SPACE_FIELD = "embedding_space"
INTERNAL_KEYWORD_FIELDS = (SPACE_FIELD, "text_hash")


def payload_index_kinds(schema: "GraphSchema") -> list[tuple[str, str]]:
    """(field, kind) of every payload index a collection needs: each indexed chunk field of the
    schema by its type (``tenant`` for tenant_id, then ``datetime``/``integer``/``float``/``bool``/
    ``keyword``) plus the internal keyword fields. Adapters map a kind to their own index type."""
    by_type = {"date": "datetime", "datetime": "datetime", "int": "integer", "float": "float", "bool": "bool"}
    kinds = [
        (f.name, "tenant" if f.name == "tenant_id" else by_type.get(f.type, "keyword"))
        for f in schema.chunk_fields
        if f.indexed
    ]
    return kinds + [(name, "keyword") for name in INTERNAL_KEYWORD_FIELDS]
_POINT_NS = uuid.UUID("5b1f0c3e-8d4a-4f7e-9a57-2c1e6b0d9f11")


def point_id(chunk_id: str) -> str:
    """Deterministic Qdrant point id (UUIDv5) of a chunk id."""
    return str(uuid.uuid5(_POINT_NS, chunk_id))


class CollectionInfo(BaseModel):
    """What a collection was built with; recorded with the collection and checked on open."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: int = 1
    space: EmbeddingSpace
    k1: float = 1.2
    b: float = 0.75
    avg_len: float = 256.0
    title_weight: int = 1
    tokenizer: dict[str, Any] = {}

    def encoder(self) -> Bm25Encoder:
        """The BM25 encoder that produced (and must query) this collection's sparse vectors."""
        return Bm25Encoder(
            Bm25Params(self.k1, self.b, self.avg_len),
            Tokenizer(TokenizerConfig(**self.tokenizer)),
            self.title_weight,
        )


@dataclass
class IndexPoint:
    """A point to upsert: chunk id, payload, BM25 vector and (optionally) its dense vector."""

    chunk_id: str
    payload: dict[str, Any]
    sparse: SparseVec
    dense: np.ndarray | None = None


@dataclass(frozen=True)
class ChannelRequest:
    """One candidate query handed to an adapter (filters already compiled for it)."""

    channel: Literal["dense", "lexical"]
    vector: Any  # list[float] for dense, SparseVec for lexical
    filter: Any
    limit: int
    idf_filter: Any = None
    #: Payload fields each candidate carries besides chunk_id and tenant_id (ranking features).
    fields: tuple[str, ...] = ()
    #: The engine scores every eligible point of this request (it plans a full scan of so few
    #: filtered points: :meth:`VectorIndex._plain_search_bound`), so its answer does not depend
    #: on the limit and may be fetched deeper at no cost.
    full_scan: bool = False


@dataclass
class Candidate:
    chunk_id: str
    score: float
    payload: dict[str, Any] = field(default_factory=dict)


def hit_of(f: Fused, payload: dict[str, Any]) -> Hit:
    """The search hit of a fused candidate and its payload (built from the engine's payload and
    fuse()'s already-typed scores: not re-validated)."""
    return Hit.model_construct(
        chunk_id=f.chunk_id,
        document_id=str(payload.get("document_id", "")),
        document=payload.get("document"),
        title=str(payload.get("title") or ""),
        section=str(payload.get("section") or ""),
        revision=payload.get("revision"),
        version=payload.get("version"),
        text=str(payload.get("text", "")),
        payload={k: v for k, v in payload.items() if k != "text"},
        score=f.score,
        lexical=f.lexical,
        semantic=f.semantic,
        rerank=None,
        features=f.features,
    )


def lexical_request(
    info: CollectionInfo, profile: RankingProfile, query: str, base: Any, cap: int, fields: tuple[str, ...] = ()
) -> tuple[ChannelRequest | None, str | None]:
    """The BM25 request (IDF over the filtered population), or None and why it is skipped."""
    if not profile.uses_lexical:
        return None, f"profile {profile.name} does not use the lexical channel"
    sparse = info.encoder().encode_query(query)
    if len(sparse) == 0:
        return None, "the query has no index terms"
    return ChannelRequest(LEXICAL, sparse, base, cap, idf_filter=base, fields=fields), None

def dense_request(
    info: CollectionInfo,
    profile: RankingProfile,
    query_vector: np.ndarray | None,
    query_space: EmbeddingSpace | None,
    compiled_filter: Callable[[], Any],
    cap: int,
    fields: tuple[str, ...] = (),
) -> tuple[ChannelRequest | None, str | None]:
    """The semantic request (points of the query's space only: ``compiled_filter()`` gives the
    adapter's filter for them), or None and why it is skipped.

    Raises:
        EmbeddingSpaceError: the vector's length is not the dimensions of ``query_space``.
    """
    if not profile.uses_semantic:
        return None, f"profile {profile.name} does not use the semantic channel"
    if query_vector is None or query_space is None:
        return None, "no query embedding was supplied"
    if query_space.dimensions != info.space.dimensions:
        return None, (
            f"query embedding space {query_space.key} has {query_space.dimensions} dimensions, "
            f"the collection's ({info.space.key}) {info.space.dimensions}: no semantic candidates"
        )
    vec = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    if vec.shape[0] != query_space.dimensions:
        raise EmbeddingSpaceError(
            f"query vector has {vec.shape[0]} dimensions, the space {query_space.key} has "
            f"{query_space.dimensions}"
        )
    return ChannelRequest(DENSE, vec.tolist(), compiled_filter(), cap, fields=fields), None
