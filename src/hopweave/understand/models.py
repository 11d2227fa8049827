"""Typed results of the understanding stage: goal classification, entities, mentions, the
filter tree and the lexical plan.

Spans are character offsets ``[start, end)`` into the utterance exactly as the caller passed it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from hopweave.models.filters import FilterTree, to_display
from hopweave.understand.temporal import TimeWindow, window_bounds

Scalar = Union[str, int, float, bool]
Source = Literal["utterance", "session", "graph"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Entity(_Frozen):
    """A resolved entity the request may use (as a seed binding, a filter clause, a lexical term).

    ``value`` is canonical (a vocabulary node's ``name``, e.g. ``"Unlimited_Plus"``; an
    identifier upper-cased; an amount as a number). ``text`` is the surface form and ``span`` its
    character offsets in the utterance (None for session- or graph-sourced entities).
    """

    type: str
    value: Scalar
    text: Optional[str] = None
    source: Source
    span: Optional[tuple[int, int]] = None
    #: The graph node this entity is (vocabulary node, customer, account), when known.
    node_id: Optional[str] = None
    #: Extra attributes, e.g. ``{"amount": 39}`` on an EventType, ``{"start":..,"end":..}`` on a Date,
    #: ``{"match": "fuzzy"}`` for a typo-tolerant vocabulary match.
    properties: dict[str, Scalar] = Field(default_factory=dict)


class Mention(_Frozen):
    """Something the utterance names that is NOT used for retrieval scope or seeds.

    ``kind`` ``identifier``: an id that differs from the authenticated session's (another
    customer's id, an account the session's subject does not hold). ``claim``: a value of an
    authoritative attribute that the record contradicts or does not have ("customer claims
    Unlimited Plus; record says Unlimited Basic"; ``record`` holds the value on record, None for none), or an
    entity whose words carry such a claim ("Plus line"). Reported so the agent can react
    ("I can only discuss your own account"), never bound or filtered on.
    """

    type: str
    value: Scalar
    text: str
    span: tuple[int, int]
    reason: str
    kind: Literal["identifier", "claim"] = "identifier"
    record: Optional[Scalar] = None

    def line(self) -> str:
        """The mention as one line for the agent ("SUB_1002 named in the utterance: ...")."""
        return f"{self.type} {self.value!s} named in the utterance: {self.reason}"


class GoalCandidate(_Frozen):
    """One goal type's evidence for an utterance.

    ``confidence`` is the calibrated probability that this goal is right if it were chosen;
    ``score`` = mean of the goal's ``top_k`` best fused example scores
    (``dense + lexical_weight * lexical``); ``dense``/``lexical`` are those of ``nearest_example``.
    """

    goal: str
    confidence: float
    score: float
    dense: float
    lexical: float
    nearest_example: str


class Classification(_Frozen):
    """The classifier's answer. ``goal`` is None when it abstained (confidence < threshold);
    ``best`` is then the candidate it would have picked."""

    goal: Optional[str]
    confidence: float = Field(ge=0.0, le=1.0)
    abstained: bool
    threshold: float
    best: Optional[str]
    candidates: tuple[GoalCandidate, ...] = ()
    #: The clause of the utterance the decision rests on (the whole utterance, or one clause of a
    #: mixed request).
    clause: str = ""
    background: float = 0.0
    metagraph_revision: str = ""
    calibration_id: str = ""


class LexicalTerm(_Frozen):
    """One term for the lexical (BM25) channel and why it is there."""

    text: str
    kind: Literal["identifier", "entity", "alias", "synonym", "amount", "content"]
    #: What produced it: an entity's canonical value, a Concept name, or "utterance".
    origin: str


class LexicalPlan(_Frozen):
    """Terms for the lexical channel. ``fallback`` is True when nothing was extracted and the
    terms are the utterance's own content words (so the channel is never empty by accident)."""

    terms: tuple[LexicalTerm, ...]
    fallback: bool = False

    @property
    def query(self) -> str:
        """The terms joined by spaces, in plan order (what the BM25 query encoder gets)."""
        return " ".join(t.text for t in self.terms)


class Understanding(_Frozen):
    """Everything the engine needs from stage 1: goal, entities, filter, lexical plan."""

    utterance: str
    as_of: datetime
    tenant_id: str
    goal: Optional[str]
    confidence: float
    abstained: bool
    classification: Classification
    entities: tuple[Entity, ...] = ()
    mentions: tuple[Mention, ...] = ()
    #: The chunk filter: entity clauses (from the FilterMapping node) AND the always-on clauses.
    filter: FilterTree
    #: The instant the filter's in-force clause was evaluated at (documents in force then, every
    #: revision searched); None: the mapping has none and only current revisions are searched.
    documents_at: Optional[str] = None
    lexical: LexicalPlan
    #: Human-readable remarks (e.g. "utterance looks non-English; the classifier is English-only").
    notes: tuple[str, ...] = ()
    #: Revisions of the data this answer came from (metagraph, vocabulary, filter mapping, calibration).
    revisions: dict[str, str] = Field(default_factory=dict)
    #: The domain whose settings resolved it (``hopweave.yaml`` ``name``).
    domain: str = ""
    #: Windows on events from the utterance's dates, resolved against as_of (with their spans).
    time_windows: tuple[TimeWindow, ...] = ()

    def entity_bindings(self) -> dict[str, Scalar]:
        """Canonical value per entity type for pattern bindings (``entity.<Type>``).

        The first entity of each type wins, in entity order (session identity first, then the
        utterance left to right, then graph-derived). Mentions are never included.
        """
        out: dict[str, Scalar] = {}
        for e in self.entities:
            out.setdefault(e.type, e.value)
        bounds = window_bounds(self.time_windows, self.as_of)
        if bounds is not None:  # ``entity.DateFrom`` / ``entity.DateUntil`` in patterns
            out["DateFrom"], out["DateUntil"] = bounds
        return out

    def filter_display(self) -> dict[str, Any]:
        """The filter as a compact mapping (``{field: value | [values]}``)."""
        return to_display(self.filter)

    def to_json_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the filter as its tree), deterministic."""
        d = self.model_dump(mode="json")
        d["filter_display"] = self.filter_display()
        d["lexical"]["query"] = self.lexical.query
        return d
