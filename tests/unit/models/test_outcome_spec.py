"""A goal's ``outcomes:`` spec (models/outcomes.py): parsing, the summary line, and the problems
``hopweave validate`` reports against the goal's case facts and the merged schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from hopweave.errors import UnsafeIdentifierError
from hopweave.models.metagraph import GoalType, to_json
from hopweave.models.outcomes import OutcomeSpec, as_words, goal_words
from hopweave.models.schema import GraphSchema

PACK = Path(__file__).resolve().parents[3] / "examples" / "deltabank" / "schema.yaml"
FACTS = ["tier", "amount", "waivers_this_year", "on_time_percent"]
LINK = {"kind": "precedent", "path": [{"type": "HAS_PROFILE", "direction": "out"}], "relationship": "RESULTED_IN"}


@pytest.fixture(scope="module")
def schema() -> GraphSchema:
    return GraphSchema.load(PACK)


def test_the_deltabank_spec_has_no_problems_and_renders_its_summary(schema: GraphSchema) -> None:
    spec = OutcomeSpec.model_validate({"vocabulary": ["fee_waived", "declined"], "keep": FACTS, "precedent": LINK,
                                       "summary": "{tier}, ${amount} fee → {outcome}"})
    assert spec.problems(FACTS, schema, "Customer") == []
    assert spec.keep["tier"] == "tier"
    assert spec.render_summary({"tier": "Platinum", "amount": 39.0, "outcome": "fee_waived"}) == \
        "Platinum, $39 fee → fee_waived"
    assert spec.render_summary({"outcome": "declined"}) == "?, $? fee → declined"


@pytest.mark.parametrize("change,field", [
    ({"keep": ["tier", "no_such_fact"]}, "outcomes.keep.no_such_fact"),
    ({"keep": {"not_a_trace_property": "tier"}}, "outcomes.keep.not_a_trace_property"),
    ({"summary": "{secret}"}, "outcomes.summary"),
    ({"precedent": {**LINK, "path": [{"type": "NO_SUCH_REL"}]}}, "outcomes.precedent.path[0]"),
    ({"precedent": {**LINK, "path": [{"type": "HOLDS"}]}}, "outcomes.precedent.relationship"),
    ({"precedent": {**LINK, "relationship": "HAS_EVENT"}}, "outcomes.precedent.relationship"),
])
def test_problems_name_the_field(schema: GraphSchema, change: dict, field: str) -> None:
    spec = OutcomeSpec.model_validate({"vocabulary": ["fee_waived"], "keep": ["tier"], "precedent": LINK, **change})
    assert field in [p[0] for p in spec.problems(FACTS, schema, "Customer")]


@pytest.mark.parametrize("bad", [
    {"vocabulary": []}, {"vocabulary": ["a", "a"]}, {"vocabulary": ["not safe"]},
    {"vocabulary": ["a"], "keep": ["x y"]}, {"vocabulary": ["a"], "extra": 1},
])
def test_malformed_specs_are_rejected(bad: dict) -> None:
    with pytest.raises((ValidationError, UnsafeIdentifierError)):  # names are identifiers
        OutcomeSpec.model_validate(bad)


def test_a_goal_without_outcomes_keeps_its_stored_definition() -> None:
    g = GoalType(name="G", description="a goal", examples=("x",), version=1)
    assert "outcomes" not in to_json(g)
    with_spec = g.model_copy(update={"outcomes": OutcomeSpec(vocabulary=("done",))})
    assert GoalType.model_validate_json(to_json(with_spec)).outcomes == with_spec.outcomes


def test_decided_trace_texts_read_names_as_words() -> None:
    """A kept vocabulary name with underscores reads as its words, a code or number stays; a
    goal's CamelCase name reads as words (the decided trace's text; precedent ranks by it)."""
    assert [as_words(v) for v in ("Unlimited_Plus", "Prepaid_Go", "Platinum", "SUB_1001", "RoamingCharge", 39.0)] \
        == ["Unlimited Plus", "Prepaid Go", "Platinum", "SUB_1001", "RoamingCharge", 39.0]
    assert [goal_words(g) for g in ("RoamingChargeDispute", "LateFeeDispute", "ATMFeeDispute", "plan_change")] \
        == ["Roaming charge dispute", "Late fee dispute", "ATM fee dispute", "plan change"]
