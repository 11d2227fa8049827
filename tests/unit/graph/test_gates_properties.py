"""Property-based gate tests: generated malformed patterns (mutations of a valid one) are 100%
rejected with a typed HopweaveError subclass, never a raw exception; valid ones always pass."""

from __future__ import annotations

import copy
from typing import Any, Callable

from hypothesis import HealthCheck, given, settings, strategies as st
from test_gates import GOOD

from hopweave.errors import HopweaveError, PatternValidationError
from hopweave.graph.gate_rules import BOUNDS
from hopweave.graph.gates import gate_write, validate_pattern
from hopweave.models.metagraph import GoalType

GOAL = GoalType(name="LateFeeDispute", description="late fee", examples=("x",), version=1)
CHECKED = {"n": 0}

IDENTIFIER_FIELDS: list[tuple[str, ...]] = [
    ("name",), ("goal",), ("target_type",), ("seed", "type"), ("seed", "key"),
    ("edge_sequence", 0, "type"), ("edge_sequence", 1, "type"), ("via_types", 0),
    ("predicates", 0, "property"), ("predicates", 1, "property"), ("order_by", 0, "property"),
    ("returns", 0), ("returns", 1),
]
INJECTIONS = [
    "Customer) DETACH DELETE (n", "x]->() MATCH (m) DELETE m //", "name} RETURN 1 //", "`x`", "a b",
    "tier;DROP", "", "1abc", "Éclair", "x" * 65, "n.name", "$param", "x\x00y", "a-b", "ü",
]
# a text that cannot be a safe identifier: it carries at least one character outside [A-Za-z0-9_]
UNSAFE_TEXT = st.text(min_size=1, max_size=20).filter(lambda s: any(not (c.isascii() and (c.isalnum() or c == "_"))
                                                                   for c in s))
PII_MUTATIONS: list[dict[str, Any]] = [
    {"returns": ["name", "tier"]},
    {"returns": ["email"], "pii_allowed": ["email"]},
    {"pii_allowed": ["phone"]},
    {"order_by": [{"property": "name", "direction": "asc"}]},
    {"predicates": [{"on": "target", "property": "email", "op": "eq", "value": {"kind": "literal", "value": "a@b"}}]},
    {"predicates": [{"on": "target", "property": "phone", "op": "exists"}]},
    {"seed": {"type": "Customer", "key": "email", "value": {"kind": "literal", "value": "a@b"}}},
]
CUSTOMER_SELF = {"edge_sequence": [{"type": "HOLDS"}, {"type": "HOLDS", "direction": "in"}],
                 "target_type": "Customer", "predicates": [], "order_by": [], "returns": ["tier"]}


def _set(d: Any, path: tuple[Any, ...], value: Any) -> None:
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value


def _mutated(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    d = copy.deepcopy(GOOD)
    change(d)
    return d


def bad_identifier() -> st.SearchStrategy[dict[str, Any]]:
    value = st.one_of(st.sampled_from(INJECTIONS), UNSAFE_TEXT, st.integers(), st.none(), st.lists(st.just("Event")))
    pairs = st.tuples(st.sampled_from(IDENTIFIER_FIELDS), value).filter(
        lambda pv: not (pv[0][0] == "via_types" and pv[1] is None))  # a null via type is valid
    return pairs.map(lambda pv: _mutated(lambda d: _set(d, pv[0], pv[1])))


def out_of_bounds() -> st.SearchStrategy[dict[str, Any]]:
    too_big = st.sampled_from(sorted(k for k in BOUNDS if k != "depth")).flatmap(
        lambda k: st.integers(BOUNDS[k] + 1, 10**9).map(lambda v: (k, v)))
    too_small = st.sampled_from(["budget_ms", "max_visited", "limit", "depth", "version"]).flatmap(
        lambda k: st.integers(-(10**6), 0).map(lambda v: (k, v)))
    wrong_depth = st.integers(3, 60).map(lambda v: ("depth", v))
    long_walk = st.integers(BOUNDS["depth"] + 1, 60).map(
        lambda n: ("edge_sequence", [{"type": "HAS_TIER", "direction": "both"}] * n))
    kv = st.one_of(too_big, too_small, wrong_depth, long_walk)
    return kv.map(lambda kv: _mutated(lambda d: d.__setitem__(kv[0], kv[1])))


def pii() -> st.SearchStrategy[dict[str, Any]]:
    return st.sampled_from(PII_MUTATIONS).map(lambda m: _mutated(lambda d: d.update({**CUSTOMER_SELF, **m})))


def wrong_endpoints() -> st.SearchStrategy[dict[str, Any]]:
    changes: list[tuple[tuple[Any, ...], Any]] = [
        (("target_type",), "Tier"), (("target_type",), "Customer"), (("target_type",), "Account"),
        (("edge_sequence", 0, "direction"), "in"), (("edge_sequence", 1, "direction"), "in"),
        (("edge_sequence", 0, "type"), "HAS_EVENT"), (("edge_sequence", 1, "type"), "HAS_TIER"),
        (("via_types", 0), "Customer"), (("via_types", 0), "Event"), (("seed", "type"), "Event"),
        (("edge_sequence", 1, "type"), "NO_SUCH_REL"), (("target_type",), "Planet"),
    ]
    return st.sampled_from(changes).map(lambda c: _mutated(lambda d: _set(d, c[0], c[1])))


def wrong_values() -> st.SearchStrategy[dict[str, Any]]:
    values = st.one_of(st.integers(), st.booleans(), st.floats(allow_nan=False),
                       st.just({"kind": "relative", "amount": -1}), st.just({"kind": "as_of_year"}))

    def literal(v: Any) -> Any:
        return v if isinstance(v, dict) else {"kind": "literal", "value": v}

    return values.map(lambda v: _mutated(lambda d: _set(d, ("predicates", 0, "value"), literal(v))))


def structural() -> st.SearchStrategy[dict[str, Any]]:
    drops = st.sampled_from(["author", "created_at", "version", "seed", "edge_sequence", "target_type", "sub_question"])
    dropped = drops.map(lambda k: _mutated(lambda d: d.pop(k)))
    extra = st.text(min_size=1, max_size=12).filter(lambda k: k not in GOOD and k not in (
        "description", "via_types", "predicates", "order_by", "returns", "pii_allowed", "section", "budget_ms",
        "max_visited", "limit")).map(lambda k: _mutated(lambda d: d.__setitem__(k, 1)))
    blank = st.sampled_from([" ", "\t", "  \n"]).map(lambda b: _mutated(lambda d: d.__setitem__("author", b)))
    hop = st.integers(3, 100).map(lambda k: _mutated(lambda d: _set(d, ("predicates", 0, "on"), k)))
    return st.one_of(dropped, extra, blank, hop)


MALFORMED = st.one_of(bad_identifier(), out_of_bounds(), pii(), wrong_endpoints(), wrong_values(), structural())


@settings(max_examples=1200, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(MALFORMED)
def test_generated_malformed_patterns_are_all_rejected_with_typed_errors(schema, data):
    try:
        validate_pattern(data, schema, GOAL)
    except PatternValidationError:
        pass
    else:
        raise AssertionError(f"accepted a malformed pattern: {data!r}")
    try:  # the write harness (what the gated store path runs) rejects it the same way
        gate_write(schema, [GOAL], [data])
    except HopweaveError:
        CHECKED["n"] += 1
    else:
        raise AssertionError(f"gate_write accepted a malformed pattern: {data!r}")


def test_enough_malformed_patterns_were_generated():
    # runs after the property test in file order: the suite promises >= 1,000 generated rejections
    assert CHECKED["n"] >= 1000, CHECKED


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(limit=st.integers(1, BOUNDS["limit"]), budget=st.integers(1, BOUNDS["budget_ms"]),
       visited=st.integers(1, BOUNDS["max_visited"]), returns=st.sets(st.sampled_from(["amount", "on_time", "type"])))
def test_generated_valid_patterns_pass(schema, limit, budget, visited, returns):
    d = copy.deepcopy(GOOD)
    d.update(limit=limit, budget_ms=budget, max_visited=visited, returns=sorted(returns))
    assert validate_pattern(d, schema, GOAL).limit == limit
