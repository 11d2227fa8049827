"""How a goal applies its procedure to the case (pack data): the case facts, the case state and
the patterns whose rows carry rule conditions in the expression language of
:mod:`hopweave.models.expr`.

.. code-block:: yaml

    case:
      facts:                                   # name -> where its value comes from
        segment: {entity: Segment}
        amount: {pattern: disputed_fee_event, property: amount}          # first row's property
        credits_this_year: {pattern: credits_this_year, fn: count}
      states:                                  # the first state whose `when` holds wins
        - {name: Dispute_escalated, when: "amount > 50"}
      default_state: Dispute_open
      rules: [applicable_rules]                # their rows' `condition` is evaluated
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hopweave.errors import RuleExpressionError
from hopweave.models.expr import parse
from hopweave.models.schema import check_identifier


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CaseFact(_Frozen):
    """One case fact: an entity value (``entity``), a session value (``session``), or a value
    derived from a pattern's rows (``fn``: ``first`` = the first row's ``property``; ``count``,
    ``sum``, ``min``, ``max``, ``mean``, ``percent`` as in section aggregates, over rows matching
    ``where``)."""

    entity: Optional[str] = None
    session: Optional[str] = None
    pattern: Optional[str] = None
    property: Optional[str] = None
    fn: Literal["first", "count", "sum", "min", "max", "mean", "percent"] = "first"
    where: Optional[dict[str, Any]] = None

    @model_validator(mode="after")
    def _one_source(self) -> "CaseFact":
        sources = [s for s in (self.entity, self.session, self.pattern) if s]
        if len(sources) != 1:
            raise ValueError("a case fact takes its value from exactly one of entity, session or pattern")
        if self.pattern and self.fn in ("first", "sum", "min", "max", "mean") and not self.property:
            raise ValueError(f"case fact from pattern {self.pattern!r} with fn {self.fn!r} needs a property")
        return self


class CaseStateRule(_Frozen):
    """A case state and the condition (expression language) under which the case is in it."""

    name: str
    when: str

    @field_validator("when")
    @classmethod
    def _parses(cls, v: str) -> str:
        try:
            parse(v)
        except RuleExpressionError as exc:
            raise ValueError(str(exc)) from None
        return v


class CaseSpec(_Frozen):
    facts: dict[str, CaseFact] = Field(default_factory=dict)
    states: tuple[CaseStateRule, ...] = ()
    default_state: Optional[str] = None
    #: Patterns whose rows carry a condition to evaluate against the case facts.
    rules: tuple[str, ...] = ()
    condition_property: str = "condition"

    @field_validator("facts")
    @classmethod
    def _names(cls, v: dict[str, CaseFact]) -> dict[str, CaseFact]:
        for k in v:
            check_identifier(k, "case fact name")
        return v


__all__ = ["CaseFact", "CaseSpec", "CaseStateRule"]
