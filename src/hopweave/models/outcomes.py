"""What a goal's decisions look like (pack data, the ``outcomes:`` key of a goal).

.. code-block:: yaml

    outcomes:
      vocabulary: [fee_waived, declined, escalated]     # the outcomes a decision may record
      keep: [tier, amount, waivers_this_year]           # case facts a decided trace keeps
      summary: "{tier}, {waivers_this_year}/year, ${amount} fee → {outcome}"
      precedent:                                        # how a decided trace is linked as precedent
        kind: precedent                                 # its `kind` (what precedent patterns select)
        path: [{type: HAS_CASE_PROFILE, direction: out}]  # from the session's subject ...
        relationship: PROFILE_DECIDED                   # ... to the node that links to the trace

``keep`` names case facts of the goal's ``case.facts``; each becomes the property of the same
name on the decided trace (a mapping ``{property: fact}`` stores it under another name). The
pack loader checks that the goal has those facts and that the DecisionTrace label declares the
properties.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hopweave.models.schema import GraphSchema, check_identifier

#: ``{name}`` placeholders of a summary template (nothing else is substituted: no attribute or
#: index access, unlike ``str.format``).
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: A value written as an identifier with underscores between word parts (``Unlimited_Plus``).
IDENTIFIER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+")
#: The words of a CamelCase name (``RoamingChargeDispute``, ``ATMFee``).
CAMEL_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
#: Longest outcome name.
MAX_OUTCOME_CHARS = 64


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PathStep(_Frozen):
    """One typed edge of a precedent link's path (as a pattern's ``edge_sequence`` step)."""

    type: str
    direction: Literal["out", "in"] = "out"

    @field_validator("type")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "relationship type")


class PrecedentLink(_Frozen):
    """How a decided trace is linked so the goal's precedent patterns find it: from every node
    reached from the session's subject along ``path``, an edge ``relationship`` to the trace.
    ``kind`` is the decided trace's ``kind`` property."""

    kind: str = "decision"
    path: tuple[PathStep, ...] = Field(min_length=1, max_length=4)
    relationship: str

    @field_validator("kind", "relationship")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "precedent link identifier")


class OutcomeSpec(_Frozen):
    """A goal's outcome vocabulary, the case facts its decided traces keep, their summary line
    and (optionally) their precedent link."""

    vocabulary: tuple[str, ...] = Field(min_length=1)
    keep: dict[str, str] = Field(default_factory=dict)
    summary: str | None = None
    precedent: PrecedentLink | None = None

    @field_validator("vocabulary")
    @classmethod
    def _names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for name in v:
            check_identifier(name, "outcome name")
        if len(set(v)) != len(v):
            raise ValueError("an outcome is listed twice in the vocabulary")
        return v

    @field_validator("keep", mode="before")
    @classmethod
    def _keep(cls, v: Any) -> Any:
        if isinstance(v, (list, tuple)):  # shorthand: the property has the fact's name
            v = {str(x): str(x) for x in v}
        if isinstance(v, Mapping):
            for prop, fact in v.items():
                check_identifier(str(prop), "kept property")
                check_identifier(str(fact), "kept case fact")
        return v

    def problems(self, case_facts: Iterable[str], schema: GraphSchema, subject_label: str | None = None
                 ) -> list[tuple[str, str, str]]:
        """What is wrong with this spec against the goal's case facts and the merged schema, as
        ``(field, message, fix)`` triples (empty = valid): kept facts the goal does not have,
        kept properties DecisionTrace does not declare, summary placeholders nothing fills, a
        precedent path or relationship the schema does not have or that does not chain."""
        out: list[tuple[str, str, str]] = []
        facts = set(case_facts)
        trace = schema.label_map.get("DecisionTrace")
        declared = set(trace.props) if trace is not None else set()
        for prop, fact in sorted(self.keep.items()):
            if fact not in facts:
                out.append((f"outcomes.keep.{prop}", f"case fact {fact!r} is not one of the goal's case facts "
                            f"{sorted(facts)}", "name a fact of the goal's `case.facts`, or add it there"))
            if prop not in declared:
                out.append((f"outcomes.keep.{prop}", f"DecisionTrace declares no property {prop!r}",
                            f"add {prop} to the pack schema (`- extends: DecisionTrace`)"))
        fillable = set(self.keep) | {"outcome", "decided_by"}
        for name in PLACEHOLDER.findall(self.summary or ""):
            if name not in fillable:
                out.append(("outcomes.summary", f"placeholder {{{name}}} is neither a kept property nor outcome / "
                            "decided_by", "use a name listed in `keep`"))
        link = self.precedent
        if link is None:
            return out
        at = {subject_label} if subject_label else None
        for i, step in enumerate(link.path):
            rel = schema.rel_map.get(step.type)
            if rel is None:
                out.append((f"outcomes.precedent.path[{i}]", f"relationship {step.type!r} is not in the schema",
                            "name a relationship of the schema"))
                return out
            start, end = (rel.from_labels, rel.to_labels) if step.direction == "out" else (rel.to_labels, rel.from_labels)
            if at is not None and "*" not in start and not at & set(start):
                out.append((f"outcomes.precedent.path[{i}]", f"{step.type} ({step.direction}) does not start at "
                            f"{sorted(at)}", "make each step start where the previous one ends"))
            at = set(end)
        rel = schema.rel_map.get(link.relationship)
        if rel is None:
            out.append(("outcomes.precedent.relationship", f"relationship {link.relationship!r} is not in the "
                        "schema", "name a relationship from the path's last label to DecisionTrace"))
        elif "DecisionTrace" not in rel.to_labels or not (at or set()) & set(rel.from_labels):
            out.append(("outcomes.precedent.relationship", f"{link.relationship} does not link "
                        f"{sorted(at or ())} to DecisionTrace", "declare it from the path's last label to DecisionTrace"))
        return out

    def render_summary(self, values: Mapping[str, Any]) -> str:
        """The summary template with ``{name}`` replaced by ``values[name]`` (``?`` when
        missing; whole floats without their ``.0``); a default line when there is no template."""
        if self.summary is None:
            shown = ", ".join(f"{k} {_fmt(values[k])}" for k in sorted(self.keep) if values.get(k) is not None)
            return f"{shown} → {values.get('outcome')}" if shown else f"→ {values.get('outcome')}"
        return PLACEHOLDER.sub(lambda m: _fmt(values.get(m.group(1))), self.summary)


def as_words(value: Any) -> Any:
    """A kept value as a text reads it: an identifier-like name of a vocabulary node with
    underscores and lower-case letters (``Unlimited_Plus``) as its words (``Unlimited Plus``,
    as the resolver and the lexical plan read it); any other value (a code such as
    ``SUB_1001``, a number) unchanged."""
    if isinstance(value, str) and IDENTIFIER_NAME.fullmatch(value) and any(ch.islower() for ch in value):
        return value.replace("_", " ")
    return value


def goal_words(name: str) -> str:
    """A goal type's name as words for a text: ``PlanChangeRequest`` -> ``Plan change request``
    (CamelCase and underscores split; an all-capital run such as ``ATM`` kept)."""
    parts = [w for chunk in name.split("_") for w in CAMEL_WORD.findall(chunk)] or [name]
    words = [parts[0]] + [w if w.isupper() and len(w) > 1 else w.lower() for w in parts[1:]]
    return " ".join(words)


def _fmt(v: Any) -> str:
    if v is None:
        return "?"
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else f"{v:g}"
    return str(v)
