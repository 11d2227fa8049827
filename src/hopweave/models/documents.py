"""Documents and the chunks they are cut into, in the shared metadata vocabulary.

A :class:`Document` is what a user ingests: text plus metadata whose keys are chunk fields of the
graph schema (its ``chunk_fields``: the base schema's and the pack's). A :class:`Chunk` is one indexed piece
of it; its ``payload()`` is exactly what is stored on the Qdrant point (every chunk field, the
text and the provenance), so filters see the same names everywhere.

Lifecycle vocabulary: ``version`` is "current" | "superseded"; ``revision`` is the document's
label ("v3"); ``status`` is "active" | "retired".
"""

from __future__ import annotations

import hashlib
from typing import Any, Final, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

MetaValue = Union[str, int, float, bool, None, list[str]]

#: Fields a chunk always carries, set by ingest rather than by the document's metadata.
RESERVED_FIELDS = frozenset({"tenant_id", "chunk_id", "document_id", "version", "revision", "section", "title"})

CURRENT: Final = "current"
SUPERSEDED: Final = "superseded"


def content_hash(*parts: str) -> str:
    """sha256 hex digest of the parts joined by NUL (stable across processes)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


class Document(BaseModel):
    """A document to ingest.

    Attributes:
        document_id: stable id of the document across revisions.
        tenant_id: owning tenant.
        text: the full text (markdown headings and numbered sections are recognised).
        title: document title (prepended to chunks for reranking).
        revision: revision label ("v3"); a new current revision supersedes the previous one.
        version: "current" (the default) or "superseded" (ingest an old revision as history).
        metadata: other chunk fields (tier, product, policy_type, status, region, language,
            valid_from, valid_until, source_uri, document, kind).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    document_id: str = Field(min_length=1, max_length=256)
    tenant_id: str = Field(min_length=1, max_length=64)
    text: str = Field(min_length=1)
    title: str = ""
    revision: str = Field(default="v1", min_length=1, max_length=64)
    version: Literal["current", "superseded"] = CURRENT
    metadata: dict[str, MetaValue] = Field(default_factory=dict)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("text is blank")
        return v

    def content_hash(self) -> str:
        """Hash of everything that determines the chunks' content (not the lifecycle ``version``)."""
        meta = sorted((k, repr(v)) for k, v in self.metadata.items())
        return content_hash(self.tenant_id, self.document_id, self.revision, self.title, self.text, repr(meta))


class Provenance(BaseModel):
    """Where a chunk came from: enough to cite it and to find it again in the source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    document_id: str
    revision: str
    source_uri: Optional[str] = None
    chunk_index: int
    char_start: int
    char_end: int
    document_hash: str
    source_line: Optional[int] = None


class Chunk(BaseModel):
    """One indexed piece of a document.

    ``metadata`` holds every chunk field (including tenant_id, document_id, version, revision,
    section, title) so that ``payload()`` is flat, in the shared vocabulary.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    chunk_id: str
    document_id: str
    tenant_id: str
    text: str
    section: str = ""
    index: int = 0
    metadata: dict[str, MetaValue] = Field(default_factory=dict)
    provenance: Provenance
    text_hash: str

    @property
    def title(self) -> str:
        return str(self.metadata.get("title") or "")

    @property
    def version(self) -> Literal["current", "superseded"] | str:
        return str(self.metadata.get("version") or CURRENT)

    def rerank_text(self) -> str:
        """Title prepended to the chunk text (``title || '. ' || content``)."""
        t = self.title.strip()
        if not t:
            return self.text
        return f"{t} {self.text}" if t[-1] in ".?!:" else f"{t}. {self.text}"

    def payload(self) -> dict[str, Any]:
        """The flat point payload: chunk fields + text + provenance + hashes."""
        out: dict[str, Any] = {k: v for k, v in self.metadata.items() if v is not None}
        out.update(
            tenant_id=self.tenant_id,
            chunk_id=self.chunk_id,
            document_id=self.document_id,
            section=self.section,
            chunk_index=self.index,
            text=self.text,
            text_hash=self.text_hash,
            provenance=self.provenance.model_dump(exclude_none=True),
        )
        return out


def document_node_id(document_id: str, revision: str) -> str:
    """Graph node id of one document revision (the ``:Document`` node its chunks cite), e.g.
    ``DOC_refund-policy-pro_v2``. Added by the engine (E) for CITES edges and Document nodes."""
    return f"DOC_{document_id}_{revision}"
