"""Metagraph files -> gates -> graph; read back from the graph; co-evolution with the schema."""

from __future__ import annotations

import textwrap

import pytest
from domains import GOALS_DIR, deltabank_schema

from hopweave.errors import PatternConflictError, PatternValidationError, PIIError
from hopweave.graph.gates import patterns_using, validate_all
from hopweave.graph.metagraph_io import load_goal_files, load_metagraph, write_metagraph
from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.models.schema import GraphSchema


@pytest.fixture
def meta_store(schema):
    s = NetworkxGraphStore(None, schema)
    load_metagraph(s, GOALS_DIR)
    return s


def test_patterns_are_read_back_from_the_graph(meta_store):
    goals, raws = load_goal_files(GOALS_DIR)
    assert [g.name for g in meta_store.goal_types()] == sorted(g.name for g in goals)
    stored = meta_store.patterns("LateFeeDispute")
    assert [p.name for p in stored] == sorted(p.name for p in stored)
    assert len(meta_store.patterns()) == len(raws)
    node = meta_store.get_node("t1", "PATTERN_comparable_precedent")  # shared: visible to any tenant
    assert node.label == "TraversalPattern" and node.props["tenant_id"] == "_global"
    assert node.props["edge_types"] == ["HAS_PROFILE", "SIMILAR_TO", "RESULTED_IN"]
    assert node.props["depth"] == 3 and node.props["target_type"] == "DecisionTrace"
    assert node.props["definition_hash"] == meta_store.patterns()[0].__class__.model_validate_json(
        node.props["definition"]).definition_hash()
    assert meta_store.graph.has_edge("GOAL_LateFeeDispute", "PATTERN_comparable_precedent", key="HAS_PATTERN")


def test_reload_is_idempotent_and_revision_is_stable(meta_store):
    rev = meta_store.metagraph_revision()
    summary = load_metagraph(meta_store, GOALS_DIR)
    assert summary["unchanged"] == summary["patterns"] and meta_store.metagraph_revision() == rev


def _goal_file(tmp_path, body: str) -> None:
    (tmp_path / "g.yaml").write_text(textwrap.dedent(body))


GOAL = """
goal: {name: LateFeeDispute, description: late fee, examples: [a], version: 1}
defaults: {author: t, version: %d, created_at: "2026-05-01T00:00:00"}
patterns:
  - name: customer_tier
    sub_question: What is her tier?
    seed: {type: Customer, key: id, value: {bind: session.customer_id}}
    edge_sequence: [{type: HAS_TIER}]
    target_type: Tier
    limit: %d
"""


def test_changed_definition_needs_a_version_bump(tmp_path, meta_store):
    rev = meta_store.metagraph_revision()
    _goal_file(tmp_path, GOAL % (1, 7))
    with pytest.raises(PatternConflictError) as ei:
        load_metagraph(meta_store, tmp_path)
    assert ei.value.pattern == "customer_tier" and "bump version to 2" in ei.value.fix
    assert meta_store.metagraph_revision() == rev  # nothing written
    _goal_file(tmp_path, GOAL % (2, 7))
    load_metagraph(meta_store, tmp_path)
    assert meta_store.metagraph_revision() != rev
    assert next(p for p in meta_store.patterns() if p.name == "customer_tier").limit == 7


def test_a_second_pattern_for_the_same_sub_question_is_a_conflict(tmp_path, meta_store):
    _goal_file(tmp_path, (GOAL % (1, 5)).replace("name: customer_tier", "name: tier_again"))
    with pytest.raises(PatternConflictError) as ei:
        load_metagraph(meta_store, tmp_path)
    assert ei.value.field == "sub_question" and ei.value.pattern == "tier_again"


def test_pii_and_injection_in_files_are_rejected(tmp_path, schema):
    s = NetworkxGraphStore(None, schema)
    pii = GOAL % (1, 5) + """
  - name: who
    sub_question: Who is she?
    seed: {type: Customer, key: id, value: {bind: session.customer_id}}
    edge_sequence: [{type: HOLDS}, {type: HOLDS, direction: in}]
    target_type: Customer
    returns: [email]
"""
    _goal_file(tmp_path, pii)
    with pytest.raises(PIIError):
        load_metagraph(s, tmp_path)
    _goal_file(tmp_path, (GOAL % (1, 5)).replace("HAS_TIER", "'HAS_TIER]->(t) DETACH DELETE t //'"))
    with pytest.raises(PatternValidationError, match="safe identifier"):
        load_metagraph(s, tmp_path)
    assert s.patterns() == []


def test_yaml_on_key_is_not_a_boolean(tmp_path):
    body = (GOAL % (1, 5)) + "    predicates: [{on: target, property: name, op: eq, value: Platinum}]\n"
    _goal_file(tmp_path, body)
    goals, raws = load_goal_files(tmp_path)
    assert raws[0]["predicates"][0]["on"] == "target"


def test_patterns_using_and_schema_co_evolution(meta_store):
    using = [p.name for p in patterns_using(meta_store, rel_type="SIMILAR_TO")]
    assert using == ["comparable_precedent", "fraud_precedent"]
    assert "applicable_rules" in [p.name for p in patterns_using(meta_store, label="Rule")]
    assert validate_all(meta_store) == {}
    # a schema in which SIMILAR_TO no longer exists: exactly the patterns using it fail, by name
    data = deltabank_schema().model_dump(mode="json")
    data["relationships"] = [r for r in data["relationships"] if r["name"] != "SIMILAR_TO"]
    changed = GraphSchema.from_dict(data)
    errors = validate_all(meta_store, changed)
    assert sorted(errors) == ["comparable_precedent", "fraud_precedent"]
    assert errors["comparable_precedent"][0].field == "edge_sequence[1].type"
    # removing a label breaks every pattern that targets it
    data = deltabank_schema().model_dump(mode="json")
    data["labels"] = [lab for lab in data["labels"] if lab["name"] != "Heuristic"]
    data["relationships"] = [r for r in data["relationships"] if r["name"] not in ("HAS_HEURISTIC", "MINED_FROM")]
    for r in data["relationships"]:
        r["to_labels"] = [x for x in r["to_labels"] if x != "Heuristic"]
    assert sorted(validate_all(meta_store, GraphSchema.from_dict(data))) == ["applicable_heuristics"]


def test_write_metagraph_requires_the_goal(schema):
    from hopweave.graph.gates import parse_pattern

    s = NetworkxGraphStore(None, schema)
    _, raws = load_goal_files(GOALS_DIR)
    with pytest.raises(PatternValidationError, match="neither written nor stored"):
        write_metagraph(s, [], [parse_pattern(raws[0])])


# ---- gates at the storage boundary (issue 12, defect 4) ------------------------------------------
import json  # noqa: E402
from dataclasses import replace  # noqa: E402

from hopweave.errors import HopweaveError, MetagraphWriteError  # noqa: E402
from hopweave.graph.base import Node  # noqa: E402
from hopweave.graph.metagraph_io import gated_items, pattern_node  # noqa: E402
from hopweave.graph.write_rules import GatedNode  # noqa: E402
from hopweave.models.metagraph import GoalType  # noqa: E402


def _runaway(meta_store):
    """The attack from the issue: depth 50, a 10 s budget, max_visited 10M."""
    p = meta_store.patterns()[0]
    data = json.loads(pattern_node(p).props["definition"])
    data.update(name="runaway", depth=50, budget_ms=10_000, max_visited=10_000_000,
                edge_sequence=[{"type": "HAS_TIER", "direction": "both"}] * 50, via_types=[], predicates=[],
                order_by=[], returns=[], pii_allowed=[], sub_question="Runaway?", section=None)
    node = pattern_node(p)
    return Node("PATTERN_runaway", "TraversalPattern", {**node.props, "name": "runaway",
                                                        "definition": json.dumps(data)})


def test_raw_metagraph_writes_are_refused_on_every_path(meta_store):
    raw = _runaway(meta_store)
    with pytest.raises(MetagraphWriteError) as ei:
        meta_store.write("_global", [raw])
    assert ei.value.field == "label" and "write_metagraph" in ei.value.fix
    with pytest.raises(MetagraphWriteError):
        meta_store.bulk_write("_global", [raw])
    # even an unchanged, valid pattern node must come from the gated path
    with pytest.raises(MetagraphWriteError):
        meta_store.write("_global", [pattern_node(meta_store.patterns()[0])])
    with pytest.raises(MetagraphWriteError):
        meta_store.write("_global", [Node("GOAL_X", "GoalType", {"name": "X", "definition": "{}"})])
    assert "runaway" not in {p.name for p in meta_store.patterns()}


def test_a_forged_gated_node_still_meets_the_bounds(meta_store):
    forged = GatedNode(**{k: getattr(_runaway(meta_store), k) for k in ("id", "label", "props")})
    with pytest.raises(MetagraphWriteError) as ei:
        meta_store.write("_global", [forged])
    assert ei.value.field == "definition" and "exceeds the bound" in ei.value.problem
    with pytest.raises(MetagraphWriteError):
        meta_store.write("_global", [replace(forged, props={**forged.props, "definition": "not json"})])


def test_gated_items_are_the_sanctioned_path(schema):
    goals, raws = load_goal_files(GOALS_DIR)
    items, parsed = gated_items(schema, goals, raws, domain="bank")
    assert all(isinstance(i, GatedNode) for i in items if isinstance(i, Node))
    assert {i.props["domain"] for i in items if isinstance(i, Node)} == {"bank"}
    s = NetworkxGraphStore(None, schema)
    s.bulk_write("_global", items)
    assert len(s.patterns()) == len(parsed)
    with pytest.raises(PIIError):  # the goal's grants are checked: drop them and the PII pattern fails
        gated_items(schema, [g.model_copy(update={"pii_grants": ()}) for g in goals], raws)


def test_a_malformed_stored_pattern_is_skipped_and_reported(meta_store):
    before = {p.name for p in meta_store.patterns()}
    # a node stored by an older version / edited on disk: written below the write gates
    meta_store._st.upsert_node("PATTERN_broken", "TraversalPattern",
                               {"name": "broken", "tenant_id": "_global", "definition": '{"name": "broken"}'}, [])
    meta_store._st.upsert_node("GOAL_broken", "GoalType",
                               {"name": "broken_goal", "tenant_id": "_global", "definition": "[1, 2"}, [])
    meta_store._meta_version += 1
    assert {p.name for p in meta_store.patterns()} == before  # no raise, the others still served
    problems = meta_store.pattern_problems()
    assert [(x.node_id, x.name) for x in problems] == [("GOAL_broken", "broken_goal"), ("PATTERN_broken", "broken")]
    assert all("does not parse" in x.reason for x in problems)
    errors = validate_all(meta_store)
    assert errors["broken"][0].field == "definition" and isinstance(errors["broken"][0], HopweaveError)


def test_goal_without_grant_cannot_be_bypassed_by_stored_goal(schema):
    s = NetworkxGraphStore(None, schema)
    goals, raws = load_goal_files(GOALS_DIR)
    write_metagraph(s, goals, raws)
    pii_raw = [r for r in raws if r.get("pii_allowed")]
    assert pii_raw
    # re-writing a PII pattern alone is checked against the stored goal's grants
    write_metagraph(s, [], pii_raw)
    stripped = [g.model_copy(update={"pii_grants": ()}) for g in goals if g.name == pii_raw[0]["goal"]]
    with pytest.raises(PIIError):
        write_metagraph(s, stripped, [r for r in pii_raw if r["goal"] == stripped[0].name])
    assert isinstance(GoalType.model_validate(goals[0].model_dump()), GoalType)


def _self_granting(meta_store):
    """A hand-built GatedNode for a pattern that grants itself Customer.email and .phone, which
    its goal (LateFeeDispute grants Customer.name only) does not grant."""
    from hopweave.models.metagraph import TraversalPattern

    (p,) = [p for p in meta_store.patterns("LateFeeDispute") if p.target_type == "Customer"][:1]
    forged = TraversalPattern.model_validate({**p.model_dump(), "name": "self_granted",
                                              "pii_allowed": [*p.pii_allowed, "email", "phone"],
                                              "sub_question": "Contact details?"})
    node = pattern_node(forged)
    return GatedNode(node.id, node.label, node.props)


def test_a_hand_built_gated_node_meets_its_goals_gates_on_every_write_path(meta_store):
    forged = _self_granting(meta_store)
    for write in (lambda: meta_store.write("_global", [forged]), lambda: meta_store.bulk_write("_global", [forged])):
        with pytest.raises(MetagraphWriteError) as ei:
            write()
        assert "grants itself PII property Customer.email" in ei.value.problem
    orphan = replace(forged, props={**forged.props, "definition": json.dumps(
        {**json.loads(forged.props["definition"]), "goal": "NoSuchGoal", "pii_allowed": []})})
    with pytest.raises(MetagraphWriteError, match="neither written with the pattern nor stored"):
        meta_store.write("_global", [orphan])
    assert "self_granted" not in {p.name for p in meta_store.patterns()}
    goals, raws = load_goal_files(GOALS_DIR)  # the sanctioned path still writes (goals with their patterns)
    items, _ = gated_items(meta_store.schema, goals, raws)
    meta_store.write("_global", [i for i in items if isinstance(i, Node)])


def test_validate_all_flags_a_stored_pattern_that_fails_its_goals_gates(meta_store):
    forged = _self_granting(meta_store)
    meta_store._st.upsert_node(forged.id, forged.label, {**forged.props, "tenant_id": "_global"}, [])  # below the gates
    meta_store._meta_version += 1
    errors = validate_all(meta_store)
    assert isinstance(errors["self_granted"][0], PIIError)


def test_a_facts_section_line_may_name_only_fields_its_rows_carry(schema):
    goals, raws = load_goal_files(GOALS_DIR)
    goal = next(g for g in goals if any(s.source == "facts" and s.patterns for s in g.sections))
    section = next(s for s in goal.sections if s.source == "facts" and s.patterns)
    bad = section.model_copy(update={"line": "{summary} {password_hash}", "pattern_lines": {}})
    forged = goal.model_copy(update={"sections": tuple(bad if s.name == section.name else s for s in goal.sections)})
    with pytest.raises(PatternValidationError) as ei:
        gated_items(schema, [forged if g.name == goal.name else g for g in goals], raws)
    assert ei.value.field.startswith(f"sections.{section.name}.") and "password_hash" in ei.value.problem
    gated_items(schema, goals, raws)  # the shipped templates name declared fields only
