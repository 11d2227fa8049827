"""LangChain integration: :class:`HopweaveRetriever`, a ``BaseRetriever`` over the Engine.

Optional extra: ``pip install 'hopweave[langchain]'``. Importing this module without
``langchain-core`` works; using :class:`HopweaveRetriever` then raises MissingDependencyError with
the install hint.

The retriever does not re-implement anything: each call is one ``Engine.retrieve`` (understand,
pre-filtered hybrid search || graph patterns, precedent, assembly, decision trace), and the
working set comes back as LangChain ``Document``s: the whole context block first (optional), then
one document per policy chunk that reached the context, then one per fact / precedent section.
Every document's metadata carries provenance and the trace id.
"""

from __future__ import annotations

from typing import Any, Optional

from hopweave.engine.boundary import MAX_TOKEN_BUDGET, check_as_of, check_positive, check_session
from hopweave.engine.result import RetrievalResult
from hopweave.engine.section_kinds import ITEM_LINES, LINE_KINDS
from hopweave.errors import InputError, MissingDependencyError

try:  # pragma: no cover - exercised through the two branches in tests
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict, field_validator

    _HAVE_LANGCHAIN = True
except ImportError:  # pragma: no cover
    _HAVE_LANGCHAIN = False


def _missing() -> MissingDependencyError:
    return MissingDependencyError("langchain-core", "langchain", "The LangChain retriever")


def to_documents(result: RetrievalResult, *, k: int = 8, include_context: bool = False,
                 include_sections: bool = True) -> list[Any]:
    """The result's working set as LangChain Documents (see the module docstring)."""
    if not _HAVE_LANGCHAIN:
        raise _missing()
    base = {"trace_id": result.trace_id, "goal": result.goal, "as_of": result.as_of.isoformat()}
    docs: list[Any] = []
    if include_context:
        docs.append(Document(page_content=result.context.text,
                             metadata={**base, "kind": "context", "tokens": result.context.tokens,
                                       "degraded": [d.model_dump() for d in result.degraded]}))
    chunks = sorted((c for c in result.chunks if c.in_context), key=lambda c: (-c.score, c.chunk_id))[:k]
    for c in chunks:
        docs.append(Document(page_content=c.text, metadata={
            **base, "kind": "policy", "chunk_id": c.chunk_id, "document": c.document, "document_id": c.document_id,
            "revision": c.revision, "version": c.version, "section": c.section, "title": c.title, "score": c.score,
            "source": c.metadata.get("source_uri"),
            "channels": [ch.model_dump() for ch in c.channels],
        }))
    if include_sections:
        by_section: dict[str, list[Any]] = {}
        for ln in result.context.lines:  # every section's lines but the chunks (documents of their own above)
            line_of = LINE_KINDS.get(ln.kind)
            if ln.kind in ("note", "empty") or (line_of is not None and line_of.items != "chunks"):
                by_section.setdefault(ln.section, []).append(ln)
        for name, lines in by_section.items():
            kind = next((LINE_KINDS[ln.kind].name for ln in lines if ln.kind in ITEM_LINES), "facts")
            docs.append(Document(page_content="\n".join(ln.text for ln in lines), metadata={
                **base, "kind": kind, "section": name,
                "sources": sorted({s for ln in lines for s in ln.sources}),
            }))
    return docs


if _HAVE_LANGCHAIN:
    from hopweave.engine.engine import Engine  # the retriever's field type (resolved by pydantic)

    class HopweaveRetriever(BaseRetriever):
        """LangChain retriever over a hopweave :class:`~hopweave.engine.engine.Engine`.

        Attributes:
            engine: the Engine (opened by the caller; the retriever does no I/O on construction).
            session: the authenticated session (dict or Session) every query runs under.
            as_of: evaluate cases at this instant (None = now, recorded on the trace).
            k: at most this many policy-chunk documents.
            include_context: put the whole sectioned context block first.
            include_sections: add one document per fact / precedent section.
            token_budget: the context block's token budget (engine default when None).
        """

        model_config = ConfigDict(arbitrary_types_allowed=True)

        engine: Engine
        session: Any
        as_of: Any = None  # an ISO string, date or datetime (checked by the engine boundary)
        k: int = 8
        include_context: bool = False
        include_sections: bool = True
        token_budget: Optional[int] = None

        @field_validator("session", mode="before")
        @classmethod
        def _session(cls, v: Any) -> Any:  # the engine's boundary: InputError / TenantError
            return check_session(v, "HopweaveRetriever.session")

        @field_validator("as_of", mode="before")
        @classmethod
        def _as_of(cls, v: Any) -> Any:
            if v is not None:
                check_as_of(v)
            return v

        @field_validator("token_budget", mode="before")
        @classmethod
        def _budget(cls, v: Any) -> Any:
            return check_positive("token_budget", v, MAX_TOKEN_BUDGET)

        @field_validator("engine", mode="before")
        @classmethod
        def _engine(cls, v: Any) -> Any:
            if not isinstance(v, Engine):
                raise InputError(f"HopweaveRetriever.engine must be a hopweave Engine, not {type(v).__name__}")
            return v

        @field_validator("k", mode="before")
        @classmethod
        def _k(cls, v: Any) -> Any:
            return check_positive("k", v, 1000)

        @field_validator("include_context", "include_sections", mode="before")
        @classmethod
        def _flag(cls, v: Any, info: Any) -> Any:
            if not isinstance(v, bool):
                raise InputError(f"HopweaveRetriever.{info.field_name} must be True or False, not {type(v).__name__}")
            return v

        def _kwargs(self) -> dict[str, Any]:
            return {"session": self.session, "as_of": self.as_of, "token_budget": self.token_budget}

        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Any]:
            result = self.engine.retrieve(query, **self._kwargs())
            return to_documents(result, k=self.k, include_context=self.include_context,
                                include_sections=self.include_sections)

        async def _aget_relevant_documents(
            self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
        ) -> list[Any]:
            result = await self.engine.aretrieve(query, **self._kwargs())
            return to_documents(result, k=self.k, include_context=self.include_context,
                                include_sections=self.include_sections)

else:  # pragma: no cover

    class HopweaveRetriever:  # type: ignore[no-redef]
        def __init__(self, *a: Any, **k: Any) -> None:
            raise _missing()
