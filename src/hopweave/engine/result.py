"""The typed result of one retrieval (``Engine.retrieve``) and its JSON form.

Scores and provenance are attached to items (one object per chunk, per fact set, per precedent
trace), never kept in parallel lists. ``RetrievalResult.to_json()`` is what ``hopweave retrieve
--json`` prints.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any, Literal, Optional

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from hopweave.models.common import PatternResult
from hopweave.understand.models import Mention

Stage = Literal["understand", "search", "traverse", "precedent", "assemble", "record", "engine"]
#: The rung of the degradation ladder a request was answered on (:mod:`hopweave.engine.ladder`):
#: ``full`` every stage; ``facts_and_lexical`` understanding, the goal's facts and precedent, and a
#: lexical-only (BM25) search over the same filtered set (no semantic channel, later rounds or
#: rerank); ``nothing`` no stage started (a fallback plan without patterns, ``clarify``).
Rung = Literal["full", "facts_and_lexical", "nothing"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ChannelView(_Frozen):
    """One ranking channel's view of a chunk or trace: rank (from 1), raw score, contribution."""

    channel: Literal["semantic", "lexical", "rerank"]
    rank: int
    score: float
    contribution: Optional[float] = None


class ChunkItem(_Frozen):
    """A policy chunk the document search returned, with provenance and per-channel scores."""

    chunk_id: str
    document_id: str
    document: str = ""
    title: str = ""
    revision: str = ""
    version: str = ""
    section: str = ""
    text: str
    #: Fused score under the request's ranking profile.
    score: float
    rank: int
    channels: tuple[ChannelView, ...] = ()
    #: Chunk metadata in the shared vocabulary (tier, product, policy_type, region, status, ...).
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: Whether the assembler put this chunk into the context block.
    in_context: bool = False
    #: Why it was left out (near-duplicate, score cliff, budget, max_lines), when it was.
    omitted_reason: Optional[str] = None


class PrecedentItem(_Frozen):
    """A past decision trace offered as precedent, ranked by hybrid similarity to this case."""

    trace_id: str
    summary: str = ""
    text: str = ""
    score: float
    rank: int
    channels: tuple[ChannelView, ...] = ()
    properties: dict[str, Any] = Field(default_factory=dict)
    #: The pattern whose rows produced this candidate.
    pattern: str = ""
    in_context: bool = False
    omitted_reason: Optional[str] = None


class Degradation(_Frozen):
    """Something the engine could not do as planned, and what it did instead."""

    stage: Stage
    what: str
    reason: str
    fallback: str = ""


#: The kind of a context line: a header, a section kind's item line (``SectionKind.line_kind`` in
#: :mod:`hopweave.engine.section_kinds`) or aggregate, a note or a "none found" line.
LineKind = Literal["header", "fact", "aggregate", "chunk", "precedent", "note", "empty"]


class ContextLine(_Frozen):
    """One line of the context block with its provenance.

    ``sources`` are graph node ids (facts), chunk ids (policy) or trace ids (precedent);
    ``citation`` is the human-readable provenance (document, revision, version, section).
    """

    section: str
    kind: LineKind
    text: str
    tokens: int
    sources: tuple[str, ...] = ()
    citation: str = ""


class OmittedLine(_Frozen):
    section: str
    kind: str
    tokens: int
    reason: str
    sources: tuple[str, ...] = ()


class ContextBlock(_Frozen):
    """The assembled, sectioned working set under one token budget."""

    text: str
    tokens: int
    budget: int
    tokenizer: str
    sections: tuple[str, ...] = ()
    lines: tuple[ContextLine, ...] = ()
    omitted: tuple[OmittedLine, ...] = ()

    @property
    def hash(self) -> str:
        return context_hash(self.text)


def context_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EntityItem(_Frozen):
    """A resolved entity (type, canonical value) and where it came from."""

    type: str
    value: Any
    source: str = ""
    text: str = ""
    node_id: Optional[str] = None


class RoundItem(_Frozen):
    """One retrieval round: what was asked, why, and what it added."""

    round: int
    #: "first pass", or the steps taken ("expanded the lexical query with ...", "relaxed tier").
    action: str
    #: The unmet needs that called for this round (empty for the first pass).
    why: tuple[str, ...] = ()
    #: Who wrote the round's query: the deterministic planner or the application's query writer.
    writer: Literal["planner", "query_writer"] = "planner"
    lexical_query: str = ""
    dense_query: str = ""
    filter_display: dict[str, Any] = Field(default_factory=dict)
    #: Chunk ids this round added to the working set's candidates, and their tokens.
    added: tuple[str, ...] = ()
    tokens: int = 0
    #: What was still unmet after the round (empty: the needs are met).
    unmet: tuple[str, ...] = ()


class RequestPart(_Frozen):
    """One intent of a multi-intent request: its span of the utterance and how it was served."""

    start: int
    end: int
    text: str
    goal: Optional[str] = None
    confidence: float = 0.0
    clarify: bool = False
    trace_id: str = ""
    tokens: int = 0
    rounds: int = 1


class UnhandledClause(_Frozen):
    """A clause of the utterance that carries a request the result does not answer: its span
    (character offsets into the utterance) and why it was not answered."""

    start: int
    end: int
    text: str
    reason: str

    def line(self) -> str:
        """The context line that names it."""
        return f'heard but not handled: "{self.text}" (characters {self.start}-{self.end}) — {self.reason}'


class RetrievalResult(_Frozen):
    trace_id: str
    tenant_id: str
    utterance: str
    as_of: datetime
    #: True when as_of was not given and the engine used the current time (not replayable
    #: unless the recorded as_of is passed back).
    as_of_defaulted: bool = False
    goal: Optional[str] = None
    goal_version: Optional[int] = None
    confidence: float = 0.0
    #: The goal was unclear: a fallback plan ran and the agent should ask the customer.
    clarify: bool = False
    entities: tuple[EntityItem, ...] = ()
    #: What the utterance named that was NOT used: other customers' ids, identifiers the
    #: session's subject does not own, claims the record contradicts ("customer claims
    #: Unlimited Plus; record says Unlimited Basic"). Also listed in the context's [Note] section.
    mentions: tuple[Mention, ...] = ()
    #: Remarks for the agent (unclear goal, non-English input, filter decisions); also in [Note].
    notes: tuple[str, ...] = ()
    #: The domain whose settings served the request.
    domain: str = ""
    #: The chunk filter as a FilterTree (JSON) and its flat display form.
    filter: Optional[dict[str, Any]] = None
    filter_display: dict[str, Any] = Field(default_factory=dict)
    search_query: str = ""
    ranking_profile: Optional[str] = None
    ranking_profile_version: Optional[int] = None
    chunks: tuple[ChunkItem, ...] = ()
    facts: tuple[PatternResult, ...] = ()
    precedent: tuple[PrecedentItem, ...] = ()
    context: ContextBlock
    degraded: tuple[Degradation, ...] = ()
    timings_ms: dict[str, float] = Field(default_factory=dict)
    store_revision: str = ""
    metagraph_revision: str = ""
    #: True only when the DecisionTrace was written within the request's deadline (False when
    #: recording was off, failed or timed out: then ``degraded`` says why).
    recorded: bool = False
    #: The goal's escalation mode and every retrieval round (one for a single pass).
    escalation: str = "single"
    rounds: tuple[RoundItem, ...] = ()
    #: The parts of a multi-intent request (empty for a single intent), in utterance order.
    parts: tuple[RequestPart, ...] = ()
    #: Clauses heard that carry a request no part answers (no goal matched), in utterance
    #: order; each is also named in the context's [Not handled] section.
    unhandled: tuple[UnhandledClause, ...] = ()
    #: The degradation ladder's rung the request was answered on (``full`` unless the engine was
    #: at capacity; ``degraded`` lists what a lower rung left out). Left out of the JSON when
    #: ``full``, so a full answer's JSON is what it was before the ladder existed.
    rung: Rung = "full"

    @model_serializer(mode="wrap")
    def _drop_full_rung(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("rung") == "full":
            del data["rung"]
        return data

    @property
    def tokens(self) -> int:
        return self.context.tokens

    @property
    def context_text(self) -> str:
        return self.context.text

    def to_json(self) -> dict[str, Any]:
        """The JSON form printed by ``hopweave retrieve --json`` (sorted, deterministic apart
        from ``timings_ms``)."""
        d = self.model_dump(mode="json")
        block = d.pop("context")
        d["context"] = block["text"]
        d["tokens"] = block["tokens"]
        d["token_budget"] = block["budget"]
        d["tokenizer"] = block["tokenizer"]
        d["context_lines"] = block["lines"]
        d["omitted"] = block["omitted"]
        d["context_hash"] = context_hash(block["text"])
        return d
