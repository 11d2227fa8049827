"""Pattern write gates: malformed and malicious patterns are rejected by name, field and fix."""

from __future__ import annotations

import copy

import pytest

from hopweave.errors import (
    PatternConflictError,
    PatternIdentifierError,
    PatternValidationError,
    PIIError,
    UnsafeIdentifierError,
)
from hopweave.graph.gates import check_conflicts, gate_write, parse_pattern, pattern_errors, validate_pattern
from hopweave.models.metagraph import GoalType, SectionTemplate

GOOD = {
    "name": "recent_tx", "goal": "LateFeeDispute", "sub_question": "What transactions has her account had recently?",
    "seed": {"type": "Customer", "key": "id", "value": {"kind": "bind", "ref": "session.customer_id"}},
    "edge_sequence": [{"type": "HOLDS", "direction": "out"}, {"type": "HAS_EVENT", "direction": "out"}],
    "via_types": ["Account"], "target_type": "Event", "depth": 2,
    "predicates": [{"on": "target", "property": "type", "op": "eq", "value": {"kind": "literal", "value": "Transaction"}},
                   {"on": "target", "property": "timestamp", "op": "gte",
                    "value": {"kind": "relative", "amount": -24, "unit": "months"}}],
    "order_by": [{"property": "timestamp", "direction": "desc"}], "returns": ["amount", "on_time"],
    "section": "Payment history", "version": 1, "author": "ana", "created_at": "2026-05-01T00:00:00",
}


def bad(**changes):
    d = copy.deepcopy(GOOD)
    for path, value in changes.items():
        cur = d
        keys = path.split("__")
        for k in keys[:-1]:
            cur = cur[int(k)] if k.isdigit() else cur[k]
        last = keys[-1]
        if value is _DEL:
            del cur[last]
        elif last.isdigit():
            cur[int(last)] = value
        else:
            cur[last] = value
    return d


_DEL = object()


def test_good_pattern_passes(schema):
    p = validate_pattern(GOOD, schema)
    assert p.name == "recent_tx" and pattern_errors(GOOD, schema) == []


INJECTIONS = [
    "Customer) DETACH DELETE (n",
    "HOLDS]->() MATCH (x) DETACH DELETE x //",
    "name} RETURN 1 UNION MATCH (n) RETURN n //",
    "Tier`) DELETE n //",
    "a b",
    "tier;DROP",
    "",
    "x" * 65,
    "1abc",
    "Éclair",
]


@pytest.mark.parametrize("payload", INJECTIONS)
@pytest.mark.parametrize(
    "field",
    ["seed__type", "seed__key", "edge_sequence__1__type", "via_types__0", "target_type",
     "predicates__0__property", "order_by__0__property", "returns__0", "name", "goal"],
)
def test_injection_attempts_are_rejected_with_the_field(schema, payload, field):
    with pytest.raises(PatternIdentifierError) as ei:
        validate_pattern(bad(**{field: payload}), schema)
    err = ei.value
    assert isinstance(err, UnsafeIdentifierError) and isinstance(err, PatternValidationError)
    expected = ""
    for part in field.split("__"):
        expected += f"[{part}]" if part.isdigit() else (f".{part}" if expected else part)
    assert err.field == expected
    assert err.fix and "safe identifier" in err.problem


def test_non_string_identifiers_are_rejected(schema):
    with pytest.raises(PatternIdentifierError):
        validate_pattern(bad(edge_sequence__0__type={"$ne": 1}), schema)
    with pytest.raises(PatternIdentifierError):
        validate_pattern(bad(target_type=["Event"]), schema)


@pytest.mark.parametrize(
    "changes, field, fix_hint",
    [
        ({"seed__type": "Client"}, "seed.type", "use one of"),
        ({"seed__key": "shoe_size"}, "seed.key", "declared"),
        ({"edge_sequence__1__type": "HAS_EVENTS"}, "edge_sequence[1].type", "schema"),
        ({"edge_sequence__0__direction": "in"}, "edge_sequence[0]", "direction"),
        ({"edge_sequence__1__type": "HAS_TIER"}, "edge_sequence[1]", "edge"),
        ({"target_type": "Tier"}, "target_type", "target_type"),
        ({"target_type": "Planet"}, "target_type", "use one of"),
        ({"via_types__0": "Customer"}, "via_types[0]", "reachable"),
        ({"depth": 3}, "depth", "set depth to 2"),
        ({"predicates__0__property": "colour"}, "predicates[0].property", "declared"),
        ({"predicates__0__on": 5}, "predicates[0].on", "0..2"),
        ({"predicates__1__value": {"kind": "literal", "value": 24}}, "predicates[1].value", "datetime"),
        ({"predicates__0__value": {"kind": "relative", "amount": -1}}, "predicates[0].value", "str"),
        ({"predicates__0__value": {"kind": "as_of_year"}}, "predicates[0].value", "str"),
        ({"order_by__0__property": "weight"}, "order_by[0].property", "declared"),
        ({"returns__0": "colour"}, "returns[0]", "declared"),
        ({"budget_ms": 5000}, "budget_ms", "at most"),
        ({"limit": 5000}, "limit", "at most"),
        ({"max_visited": 5_000_000}, "max_visited", "at most"),
        ({"author": _DEL}, "author", "required"),
        ({"created_at": _DEL}, "created_at", "required"),
        ({"version": _DEL}, "version", "required"),
        ({"author": "   "}, "author", "author"),
        ({"version": 0}, "version", "TraversalPattern"),
        ({"budget_ms": 0}, "budget_ms", "TraversalPattern"),
        ({"edge_sequence": []}, "edge_sequence", "TraversalPattern"),
        ({"unknown_field": 1}, "unknown_field", "TraversalPattern"),
    ],
)
def test_malformed_patterns_name_field_and_fix(schema, changes, field, fix_hint):
    with pytest.raises(PatternValidationError) as ei:
        validate_pattern(bad(**changes), schema)
    assert ei.value.pattern == "recent_tx"
    assert ei.value.field == field
    assert fix_hint in ei.value.fix or fix_hint in ei.value.problem


def test_range_on_bool_and_list_properties_rejected(schema):
    d = bad(predicates=[{"property": "on_time", "op": "gt", "value": {"kind": "literal", "value": True}}])
    with pytest.raises(PatternValidationError, match="range op"):
        validate_pattern(d, schema)


def test_pii_return_requires_declaration(schema):
    d = bad(edge_sequence=[{"type": "HOLDS"}, {"type": "HOLDS", "direction": "in"}], target_type="Customer",
            predicates=[], order_by=[], returns=["name", "tier"])
    with pytest.raises(PIIError) as ei:
        validate_pattern(d, schema)
    assert ei.value.field == "returns" and "pii_allowed" in ei.value.fix
    d["pii_allowed"] = ["name"]
    with pytest.raises(PIIError) as ei:  # a pattern cannot grant itself PII
        validate_pattern(d, schema)
    assert ei.value.field == "pii_allowed[0]" and "pii_grants" in ei.value.fix
    owner = _goal(pii_grants=("Customer.name",))
    assert validate_pattern(d, schema, owner).pii_allowed == ("name",)
    with pytest.raises(PIIError):  # a grant of another property does not cover it
        validate_pattern(d, schema, _goal(pii_grants=("Customer.email",)))


def _goal(**kw):
    return GoalType(name="LateFeeDispute", description="late fee", examples=("x",), version=1, **kw)


CUSTOMER_SELF = dict(edge_sequence=[{"type": "HOLDS"}, {"type": "HOLDS", "direction": "in"}],
                     target_type="Customer", predicates=[], order_by=[], returns=["tier"])


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"predicates": [{"on": "target", "property": "email", "op": "eq",
                          "value": {"kind": "literal", "value": "a@b.c"}}]}, "predicates[0].property"),
        ({"predicates": [{"on": "target", "property": "phone", "op": "exists"}]}, "predicates[0].property"),
        ({"predicates": [{"on": 0, "property": "name", "op": "ne",
                          "value": {"kind": "literal", "value": "Ann"}}]}, "predicates[0].property"),
        ({"order_by": [{"property": "name", "direction": "asc"}]}, "order_by[0].property"),
        ({"seed": {"type": "Customer", "key": "email", "value": {"kind": "literal", "value": "a@b.c"}}}, "seed.key"),
        ({"pii_allowed": ["email"], "returns": ["email"]}, "pii_allowed[0]"),
    ],
)
def test_pii_gate_covers_predicates_ordering_seed_and_self_grants(schema, changes, field):
    d = bad(**CUSTOMER_SELF)
    d.update(changes)
    with pytest.raises(PIIError) as ei:
        validate_pattern(d, schema, _goal())
    assert ei.value.field == field and "pii_grants" in ei.value.fix
    # the goal's owner can grant exactly that property
    prop = field.split(".")[0]
    grants = ("Customer.email", "Customer.phone", "Customer.name")
    assert validate_pattern(d, schema, _goal(pii_grants=grants)).name == "recent_tx", prop


def test_goal_pii_grants_are_identifiers():
    with pytest.raises(UnsafeIdentifierError):
        _goal(pii_grants=("Customer.name) DETACH DELETE (n",))


def test_section_must_exist_on_goal(schema):
    goal = GoalType(name="LateFeeDispute", description="late fee", examples=("x",), version=1,
                    sections=(SectionTemplate(name="Customer", title="Customer", source="facts"),))
    with pytest.raises(PatternValidationError) as ei:
        validate_pattern(GOOD, schema, goal)
    assert ei.value.field == "section"
    with pytest.raises(PatternValidationError) as ei:
        validate_pattern(bad(goal="FraudClaim"), schema, goal)
    assert ei.value.field == "goal"


def test_conflicts_same_sub_question_and_version_bump(schema):
    p = parse_pattern(GOOD)
    twin = parse_pattern(bad(name="recent_tx2", sub_question="what transactions has her account had recently"))
    with pytest.raises(PatternConflictError) as ei:
        check_conflicts([twin], [p])
    assert ei.value.field == "sub_question" and ei.value.pattern == "recent_tx2"
    other_goal = parse_pattern(bad(name="recent_tx3", goal="FraudClaim", section=None))
    check_conflicts([other_goal], [p])  # the same question for another goal is fine
    changed = parse_pattern(bad(limit=10))
    with pytest.raises(PatternConflictError, match="bump version to 2"):
        check_conflicts([changed], [p])
    check_conflicts([parse_pattern(bad(limit=10, version=2))], [p])
    check_conflicts([parse_pattern(bad(author="someone else"))], [p])  # provenance-only change: same definition
    with pytest.raises(PatternConflictError, match="older"):
        check_conflicts([p], [parse_pattern(bad(version=3))])
    with pytest.raises(PatternConflictError, match="twice"):
        check_conflicts([p, p], [])


def test_gate_write_checks_goal_sections_reference_patterns(schema):
    goal = GoalType(name="LateFeeDispute", description="late fee", examples=("x",), version=1,
                    sections=(SectionTemplate(name="Payment history", title="P", source="facts",
                                              patterns=("recent_tx", "ghost")),))
    with pytest.raises(PatternValidationError, match="ghost"):
        gate_write(schema, [goal], [GOOD])


def test_shipped_goal_files_pass_every_gate(schema):
    from domains import GOALS_DIR

    from hopweave.graph.metagraph_io import load_goal_files

    goals, raws = load_goal_files(GOALS_DIR)
    patterns = gate_write(schema, goals, raws)
    names = {p.name for p in patterns if p.goal == "LateFeeDispute"}
    assert {"customer_tier", "customer_account", "recent_transactions", "waiver_events_this_year",
            "last_conversation_outcome", "comparable_precedent", "applicable_workflow",
            "applicable_rules"} <= names
    assert {g.name for g in goals} == {"LateFeeDispute", "FraudClaim", "CreditLimitIncrease", "NameChange"}
    for g in goals:
        assert len(g.examples) >= 8
        assert sum(1 for p in patterns if p.goal == g.name) >= 3
