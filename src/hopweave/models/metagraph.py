"""Metagraph models: GoalType and TraversalPattern, stored in the graph as
``(:GoalType)-[:HAS_PATTERN]->(:TraversalPattern)``.

A pattern is data; one Cypher compiler (``hopweave.graph.cypher``) turns it into
``(query, params)`` and the networkx store walks the same structure natively.

Values in predicates are :data:`ValueRef`: a literal, a binding to a resolved entity or session
value, or a time relative to the request's ``as_of`` (never the wall clock).
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from datetime import datetime
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

from hopweave.models.case import CaseSpec
from hopweave.models.escalation import EscalationPolicy
from hopweave.models.outcomes import OutcomeSpec
from hopweave.models.schema import check_identifier

Scalar = Union[str, int, float, bool]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


#: Fields the engine adds to a fact row besides its node's properties: a rule row's verdict and
#: its reason (engine/rules.py), which row line templates may name.
COMPUTED_ROW_FIELDS = frozenset({"verdict", "why"})

#: A template placeholder names one field: no attribute access, indexing or positional fields.
_PLAIN_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def template_problem(template: str) -> str | None:
    """Why ``template`` (a str.format line, title or query template of a goal) may not be used,
    or None: each placeholder must be a plain field name (``{amount}``, ``{amount:,.2f}``),
    never ``{x.attr}``, ``{x[0]}``, ``{}`` or ``{0}``, with no conversion but ``!s``."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        return f"it is not a valid template ({exc})"
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if not _PLAIN_FIELD.match(name):
            return (f"placeholder {{{name}}} must be a field name (letters, digits, underscore): attribute "
                    "access, indexing and positional fields are not allowed")
        if conversion not in (None, "s"):
            return f"placeholder {{{name}!{conversion}}}: only the !s conversion is allowed"
        nested = template_problem(spec) if spec and "{" in spec else None
        if nested:
            return nested
    return None


def _check_template(value: str | None, what: str) -> None:
    problem = template_problem(value) if isinstance(value, str) else None
    if problem:
        raise ValueError(f"{what} {value!r:.120}: {problem}")


# ---- values -------------------------------------------------------------------------------
class Literal_(_Frozen):
    kind: Literal["literal"] = "literal"
    value: Union[Scalar, tuple[Scalar, ...]]


class Bind(_Frozen):
    """A value taken from the request: ``session.<key>`` or ``entity.<EntityType>`` (its
    canonical value, e.g. ``entity.Plan`` -> "Unlimited_Plus"), or ``goal.name``."""

    kind: Literal["bind"] = "bind"
    ref: str = Field(pattern=r"^(session|entity|goal)\.[A-Za-z_][A-Za-z0-9_]{0,63}$")
    #: Value used when the binding is absent. An absent binding without a default makes the
    #: predicate (or seed) match nothing: patterns fail closed, never open.
    default: Union[Scalar, None] = None


class RelativeTime(_Frozen):
    """``as_of`` shifted by ``amount`` ``unit`` (negative = past), as an ISO string of the
    property's type (date -> YYYY-MM-DD, datetime -> YYYY-MM-DDTHH:MM:SS), or ``start_of``
    the as_of's year/month/day."""

    kind: Literal["relative"] = "relative"
    amount: int = 0
    unit: Literal["days", "months", "years"] = "days"
    start_of: Literal["year", "month", "day", None] = None


class AsOfYear(_Frozen):
    """The integer year of ``as_of`` (for ``year = current year``)."""

    kind: Literal["as_of_year"] = "as_of_year"
    offset: int = 0


ValueRef = Annotated[Union[Literal_, Bind, RelativeTime, AsOfYear], Field(discriminator="kind")]


class Predicate(_Frozen):
    """A condition on one node of the walk.

    ``on`` is ``"target"`` or the 1-based hop index of an intermediate node (1 = the node
    reached by the first edge; the seed is 0).
    """

    on: Union[Literal["target"], int] = "target"
    property: str
    op: Literal["eq", "ne", "in", "lt", "lte", "gt", "gte", "exists"] = "eq"
    value: ValueRef | None = None

    @field_validator("property")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "predicate property")

    @model_validator(mode="after")
    def _value_needed(self) -> "Predicate":
        if self.op != "exists" and self.value is None:
            raise ValueError(f"predicate on {self.property!r} with op {self.op!r} needs a value")
        if isinstance(self.on, int) and self.on < 0:
            raise ValueError("predicate 'on' hop index must be >= 0")
        return self


class EdgeStep(_Frozen):
    type: str
    direction: Literal["out", "in", "both"] = "out"

    @field_validator("type")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "relationship type")


class Seed(_Frozen):
    """Which node the walk starts from: the node of ``type`` whose ``key`` equals ``value``."""

    type: str
    key: str = "id"
    value: ValueRef = Field(default_factory=lambda: Bind(ref="session.customer_id"))

    @field_validator("type", "key")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "seed identifier")


class OrderBy(_Frozen):
    property: str
    direction: Literal["asc", "desc"] = "desc"

    @field_validator("property")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "order property")


class TraversalPattern(_Frozen):
    """One sub-question's retrieval plan. Rows are target nodes (distinct), ordered by
    ``order_by`` then ``id`` ascending (ties always break by id), truncated to ``limit``."""

    name: str
    goal: str
    sub_question: str = Field(min_length=3, max_length=500)
    seed: Seed
    edge_sequence: tuple[EdgeStep, ...] = Field(min_length=1)
    target_type: str
    #: Labels required on intermediate nodes (index i = node after edge i+1); None = any label
    #: allowed by the schema for that edge.
    via_types: tuple[str | None, ...] = ()
    predicates: tuple[Predicate, ...] = ()
    depth: int = Field(ge=1)
    budget_ms: int = Field(default=50, ge=1, le=10_000)
    max_visited: int = Field(default=10_000, ge=1, le=10_000_000)
    order_by: tuple[OrderBy, ...] = ()
    limit: int = Field(default=50, ge=1, le=10_000)
    #: Properties of the target returned in each row (besides id and label).
    returns: tuple[str, ...] = ()
    #: PII properties this pattern is allowed to return (must be declared here to pass the gate).
    pii_allowed: tuple[str, ...] = ()
    #: Context section this pattern's facts feed (a section name of the goal's template).
    section: str | None = None
    version: int = Field(ge=1)
    author: str = Field(min_length=1)
    created_at: datetime
    description: str = ""
    #: ``active``: its goal runs it. ``retired``: kept (the metagraph, the audit, the traces that
    #: ran it) but no longer run by its goal. Left out of the stored definition when active.
    status: Literal["active", "retired"] = "active"

    @model_serializer(mode="wrap")
    def _drop_active_status(self, handler: Any) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("status") == "active":
            data.pop("status", None)
        return data

    @field_validator("name", "goal", "target_type")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "pattern identifier")

    @field_validator("returns", "pii_allowed")
    @classmethod
    def _safe_props(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for p in v:
            check_identifier(p, "returned property")
        return v

    def definition_hash(self) -> str:
        """Hash of everything that changes what the pattern returns (not version/author/time)."""
        d = self.model_dump(mode="json", exclude={"version", "author", "created_at", "description"})
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


class Metric(_Frozen):
    """One number derived from a section's rows (e.g. payments on time in the last 24 months).

    ``count`` counts rows (matching ``where``, a FilterTree over row properties); ``sum``/``min``/
    ``max``/``mean`` aggregate ``property`` over those rows; ``percent`` is
    ``100 * count(where) / count(all rows)`` rounded to an int.
    """

    fn: Literal["count", "sum", "min", "max", "mean", "percent"] = "count"
    #: Rows of this pattern only (default: every pattern of the section).
    pattern: Optional[str] = None
    property: Optional[str] = None
    where: Optional[dict[str, Any]] = None

    @model_validator(mode="after")
    def _needs_property(self) -> "Metric":
        if self.fn in ("sum", "min", "max", "mean") and not self.property:
            raise ValueError(f"metric fn {self.fn!r} needs a property")
        if self.where is not None:
            from hopweave.models.filters import parse_filter

            parse_filter(self.where)
        return self


class Aggregate(_Frozen):
    """A derived line: ``line`` is a str.format template over the metrics (each also offered as
    ``<name>_s`` / ``<name>_es`` = "" when it is 1 else "s" / "es"), ``as_of_year``, ``as_of_date`` and entity values
    (``entity_<Type>``)."""

    line: str
    metrics: dict[str, Metric] = Field(default_factory=dict)

    @field_validator("line")
    @classmethod
    def _safe_line(cls, v: str) -> str:
        _check_template(v, "aggregate line")
        return v


#: What fills a context section: each name is one row of the engine's section-kind table
#: (``hopweave.engine.section_kinds.SECTION_KINDS``, which says what the kind collects and pins).
SectionSource = Literal["facts", "chunks", "precedent"]


class SectionTemplate(_Frozen):
    """One section of the goal's context block. ``source`` says what fills it:
    ``facts`` (rows of ``patterns``), ``chunks`` (policy chunks) or ``precedent`` (traces).
    ``line`` is a str.format template over a row's properties (facts/precedent) or a chunk's
    fields; ``title`` may use ``{document}``/``{section}`` for chunk sections."""

    name: str
    title: str
    source: SectionSource
    patterns: tuple[str, ...] = ()
    line: str = "{summary}"
    max_lines: int = Field(default=10, ge=1, le=200)
    #: Derived lines computed over the rows (facts sections), placed before the row lines.
    aggregates: tuple[Aggregate, ...] = ()
    #: Patterns whose rows also become one line each (default: all of ``patterns``; ``[]`` =
    #: aggregates only). A pattern not in ``patterns`` that names this section (its ``section``)
    #: gets row lines too.
    row_patterns: Optional[tuple[str, ...]] = None
    #: Per-pattern row line templates (override ``line`` for that pattern's rows).
    pattern_lines: dict[str, str] = Field(default_factory=dict)
    #: Only rows matching this FilterTree (over row properties) become row lines.
    row_where: Optional[dict[str, Any]] = None
    #: Line shown when the section has nothing to show (so an empty answer is visible).
    empty: str = "none found"
    #: chunks/precedent: keep items while score >= min_score_ratio * best score ...
    min_score_ratio: float = Field(default=0.0, ge=0.0, le=1.0)
    #: ... and stop at the first relative drop from the previous item larger than this.
    cliff_drop: float = Field(default=1.0, gt=0.0, le=1.0)
    #: The two cuts above apply only when the section has at least this many candidates: the
    #: fused scores are rescaled over the candidates, so among a few of them the last one
    #: rescales to about 0 however close its evidence is (1 = always apply).
    cliff_min_items: int = Field(default=6, ge=1, le=1000)
    #: chunks: diversity across source documents. Selection is greedy by score, each chunk's
    #: score multiplied by this once per chunk already taken from its document.
    document_decay: float = Field(default=0.85, ge=0.0, le=1.0)
    #: Budget priority: under token pressure, sections of lower priority shrink first (higher
    #: is kept longer; ties keep template order).
    priority: int = Field(default=0, ge=-100, le=100)
    #: Share of the token budget reserved for this section's lines (0 = none), filled before the
    #: round-robin over all sections.
    min_share: float = Field(default=0.0, ge=0.0, le=1.0)
    #: A required section always keeps at least one line (its first line is chosen before any
    #: other section's lines and clipped to fit when nothing else would make room).
    required: bool = False

    @model_validator(mode="after")
    def _safe_templates(self) -> "SectionTemplate":
        for what, value in (("title", self.title), ("line", self.line), ("empty", self.empty),
                            *((f"pattern_lines.{k}", v) for k, v in sorted(self.pattern_lines.items()))):
            _check_template(value, f"section {self.name!r} {what}")
        return self


class GoalType(_Frozen):
    name: str
    description: str = Field(min_length=3)
    examples: tuple[str, ...] = Field(min_length=1)
    version: int = Field(ge=1)
    author: str = "hopweave"
    created_at: datetime | None = None
    #: The context block's sections, in order.
    sections: tuple[SectionTemplate, ...] = ()
    #: Ranking profile used for this goal's document search (a registered profile name).
    ranking_profile: str | None = None
    #: Search query template for the document channel (str.format over entity values), if any.
    search_template: str | None = None
    #: Chunk-field values this goal's document search is scoped to, e.g. ``{policy_type:
    #: [FraudClaim]}``. The goal owns these fields: they replace the understanding's clauses on
    #: the same fields (a word like "purchase" must not narrow a fraud case to fee schedules).
    document_scope: dict[str, tuple[Scalar, ...]] = Field(default_factory=dict)
    #: The domain (pack) this goal belongs to; set by the pack loader. None = every domain.
    domain: str | None = None
    #: PII properties (``Label.property``) this goal's owner lets its patterns return, filter on
    #: or order by; a pattern's ``pii_allowed`` must be granted here (see graph/gate_rules.py).
    pii_grants: tuple[str, ...] = ()
    #: How the goal's procedure applies to the case: case facts, state, rule patterns
    #: (:mod:`hopweave.models.case`). None = rules are listed, not evaluated.
    case: CaseSpec | None = None
    #: Single pass (default) or a multi-round loop with its budgets (:mod:`hopweave.models.escalation`).
    escalation: EscalationPolicy | None = None
    #: Rerank this goal's candidate chunks (``bi_encoder`` / ``cross_encoder``); None = the fused
    #: order (the default: see hopweave.engine.rerank_stage for why).
    rerank: Optional[Literal["none", "bi_encoder", "cross_encoder"]] = None
    #: The outcomes a decision on this goal's cases may record, the case facts a decided trace
    #: keeps and how it is linked as precedent (:mod:`hopweave.models.outcomes`). None = no
    #: outcomes are recorded for this goal. Left out of the stored definition when None.
    outcomes: OutcomeSpec | None = None

    @model_serializer(mode="wrap")
    def _drop_empty_outcomes(self, handler: Any) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("outcomes") is None:
            data.pop("outcomes", None)
        return data

    @field_validator("name")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "goal name")

    @field_validator("search_template")
    @classmethod
    def _safe_search_template(cls, v: str | None) -> str | None:
        _check_template(v, "search_template")
        return v

    @field_validator("sections")
    @classmethod
    def _shares(cls, v: tuple[SectionTemplate, ...]) -> tuple[SectionTemplate, ...]:
        total = sum(s.min_share for s in v)
        if total > 1.0 + 1e-9:
            raise ValueError(f"the sections' min_share values add up to {total:.2f}; they must add up to at most 1")
        return v

    @field_validator("pii_grants")
    @classmethod
    def _safe_grants(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for grant in v:
            label, _, prop = grant.partition(".")
            check_identifier(label, "pii_grants label")
            check_identifier(prop, "pii_grants property")
        return v


def pattern_node_id(name: str) -> str:
    return f"PATTERN_{name}"


def goal_node_id(name: str) -> str:
    return f"GOAL_{name}"


def to_json(obj: BaseModel) -> str:
    """Canonical JSON of a model (sorted keys) as stored on graph nodes."""
    return json.dumps(obj.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))


def dump_props(obj: Any) -> dict[str, Any]:  # pragma: no cover - trivial
    return obj.model_dump(mode="json")
