"""The Cypher compiler: expected query strings for every shipped pattern, filter compilation,
parameter naming and injection attempts. Pure: no database here (tests/falkordb runs the output).

The expected strings of the shipped patterns live in ``data/cypher_expected.json``. After an
intended change of the compiler or of a goal file, regenerate it and review the diff:

    python tests/unit/graph/test_cypher_compiler.py --regenerate
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import pytest
from factories import make_pattern

from hopweave.errors import FilterError, SchemaError, UnsafeIdentifierError
from hopweave.graph.capabilities import FALKORDB, NEO4J, capabilities
from hopweave.graph.cypher import (
    ParamStore,
    compile_filter,
    compile_pattern,
    compile_seed_query,
    hop_labels,
    row_properties,
    seed_is_unique,
)
from hopweave.models.common import Bindings, Session, to_datetime
from hopweave.models.filters import And, Eq, In, Not, Or, Range, parse_filter
from hopweave.models.metagraph import (
    Bind,
    EdgeStep,
    Literal_,
    OrderBy,
    Predicate,
    RelativeTime,
    Seed,
    TraversalPattern,
)
from hopweave.models.schema import GraphSchema

EXPECTED = Path(__file__).parent / "data" / "cypher_expected.json"
MARIA = Bindings(
    session=Session(tenant_id="deltabank", customer_id="CUST_4421", region="US"),
    as_of=to_datetime("2026-05-12"),
    goal="LateFeeDispute",
    entities={"Tier": "Platinum", "Product": "Platinum_Card"},
)


#: The time conditions (hopweave.graph.predicates.time_tree) the compiler adds to every node:
#: a timeless label (only recorded_at), a label with an event time, and an edge's.
def timeless(v: str) -> str:
    return f"({v}.`recorded_at` IS NULL OR {v}.`recorded_at` <= $asof_recorded_at)"


def evented(v: str, prop: str) -> str:
    return (f"({v}.`recorded_at` <= $asof_recorded_at OR ({v}.`recorded_at` IS NULL AND "
            f"({v}.`{prop}` IS NULL OR {v}.`{prop}` <= $asof_{prop})))")


def edge_known(e: str) -> str:
    return f"    WHERE ({e}.`recorded_at` IS NULL OR {e}.`recorded_at` <= $asof_recorded_at)"


def shipped_patterns(schema: GraphSchema) -> list[TraversalPattern]:
    from domains import GOALS_DIR

    from hopweave.graph.gates import gate_write
    from hopweave.graph.metagraph_io import load_goal_files

    goals, raws = load_goal_files(GOALS_DIR)
    return sorted(gate_write(schema, goals, raws, stored=()), key=lambda p: p.name)


def _bindings_for(p: TraversalPattern) -> Bindings:
    return MARIA.model_copy(update={"goal": p.goal})


def compile_all(schema: GraphSchema) -> dict[str, dict[str, object]]:
    out = {}
    for p in shipped_patterns(schema):
        q, params = compile_pattern(p, _bindings_for(p), schema, NEO4J)
        out[p.name] = {"query": q.split("\n"), "params": params}
    return out


def _pattern(**kw) -> TraversalPattern:
    return make_pattern(**kw)


# ---- every shipped pattern ----------------------------------------------------------------
def test_every_shipped_pattern_compiles_to_its_expected_query(schema: GraphSchema) -> None:
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    got = compile_all(schema)
    assert sorted(got) == sorted(expected), "shipped patterns changed: regenerate (see module docstring)"
    for name in got:
        assert got[name] == expected[name], f"{name}: compiled query differs from {EXPECTED.name}"


def test_recent_transactions_exact_string(schema: GraphSchema) -> None:
    p = {p.name: p for p in shipped_patterns(schema)}["recent_transactions"]
    q, params = compile_pattern(p, MARIA, schema)
    target_ok = (
        f"(n2:`Event` AND n2.`tenant_id` IN $tenants AND {evented('n2', 'timestamp')} AND n2.`type` = $type"
        " AND n2.`timestamp` >= $timestamp AND n2.`timestamp` <= $timestamp_1)"
    )
    assert q == (
        "MATCH (n0:`Customer` {`id`: $seed})\n"
        f"WITH n0, (n0.`tenant_id` IN $tenants AND {timeless('n0')}) AS ok\n"
        "WITH count(n0) AS visited, min(CASE WHEN ok THEN n0.`id` END) AS seed_id, "
        "collect(CASE WHEN ok THEN [n0, [n0.`id`]] END) AS reached\n"
        "WITH visited, seed_id, CASE WHEN visited > $max_visited THEN [] ELSE reached END AS frontier\n"
        "CALL (frontier) {\n"
        "  UNWIND frontier AS f\n"
        "  WITH f[0] AS n0, f[1] AS path\n"
        "  CALL (n0) {\n"
        "    MATCH (n0)-[e1:`HOLDS`]->(n1)\n"
        f"{edge_known('e1')}\n"
        "    RETURN DISTINCT n1 LIMIT $expand_cap\n"
        "  }\n"
        "  WITH n1, count(*) AS seen, min(path) AS path\n"
        f"  RETURN sum(seen) AS expanded, collect(CASE WHEN (n1:`Account` AND n1.`tenant_id` IN $tenants AND "
        f"{evented('n1', 'opened')}) THEN [n1, path + [n1.`id`]] END) AS reached\n"
        "}\n"
        "WITH visited + expanded AS visited, seed_id, "
        "CASE WHEN visited + expanded > $max_visited THEN [] ELSE reached END AS frontier\n"
        "CALL (frontier) {\n"
        "  UNWIND frontier AS f\n"
        "  WITH f[0] AS n1, f[1] AS path\n"
        "  CALL (n1) {\n"
        "    MATCH (n1)-[e2:`HAS_EVENT`]->(n2)\n"
        f"{edge_known('e2')}\n"
        "    RETURN DISTINCT n2 LIMIT $expand_cap\n"
        "  }\n"
        "  WITH n2, count(*) AS seen, min(path) AS path\n"
        f"  RETURN sum(CASE WHEN {target_ok} THEN 1 ELSE seen END) AS expanded, "
        f"collect(CASE WHEN {target_ok} THEN [n2, path + [n2.`id`]] END) AS reached\n"
        "}\n"
        "UNWIND CASE WHEN visited + expanded > $max_visited OR size(reached) = 0 THEN [null] ELSE reached END AS t\n"
        "WITH visited + expanded AS visited, seed_id, t[0] AS n2, t[1] AS path\n"
        "ORDER BY n2.`timestamp` IS NULL, n2.`timestamp` DESC, n2.`id` ASC\n"
        "LIMIT $limit\n"
        "RETURN n2.`id` AS id, labels(n2)[0] AS label, {`id`: n2.`id`, `tenant_id`: n2.`tenant_id`, "
        "`summary`: n2.`summary`, `type`: n2.`type`, `amount`: n2.`amount`, `timestamp`: n2.`timestamp`, "
        "`on_time`: n2.`on_time`, `status`: n2.`status`, `description`: n2.`description`} AS props, path, "
        "visited, seed_id"
    )
    # relative times are evaluated against as_of (never the wall clock); one extra row detects
    # truncation; max_visited is a parameter the query compares its visit count with after each hop;
    # the time conditions share one parameter per field (asof_*), in the property's type
    assert params == {
        "tenants": ["deltabank", "_global"],
        "seed": "CUST_4421",
        "asof_recorded_at": "2026-05-12T23:59:59",
        "max_visited": 10_000,
        "expand_cap": 10_001,
        "asof_opened": "2026-05-12",
        "asof_timestamp": "2026-05-12T23:59:59",
        "type": "Transaction",
        "timestamp": "2024-05-12T23:59:59",
        "timestamp_1": "2026-05-12T23:59:59",
        "limit": 101,
    }


def test_falkordb_dialect(schema: GraphSchema) -> None:
    """FalkorDB: ranges guarded against its index, and the importing-WITH subquery (FalkorDB 4
    does not parse Neo4j 5's ``CALL (x) {``); nothing else differs."""
    p = {p.name: p for p in shipped_patterns(schema)}["recent_transactions"]
    q, _ = compile_pattern(p, MARIA, schema, FALKORDB)
    assert "[n2.`timestamp`][0] >= $timestamp AND [n2.`timestamp`][0] <= $timestamp_1" in q
    assert "n2.`type` = $type" in q  # string equality may use the index
    assert q.count("CALL { WITH frontier\n") == 2 and "CALL (" not in q
    assert "  CALL { WITH n0\n" in q and "  CALL { WITH n1\n" in q
    neo = compile_pattern(p, MARIA, schema, NEO4J)[0]
    unguarded = q
    for v, prop in (("n0", "recorded_at"), ("n1", "recorded_at"), ("n1", "opened"), ("n2", "recorded_at")):
        unguarded = unguarded.replace(f"[{v}.`{prop}`][0]", f"{v}.`{prop}`")
    assert unguarded.replace("[n2.`timestamp`][0]", "n2.`timestamp`").replace(
        "CALL { WITH frontier", "CALL (frontier) {"
    ).replace("CALL { WITH n0", "CALL (n0) {").replace("CALL { WITH n1", "CALL (n1) {") == neo


def test_max_visited_is_counted_per_hop(schema: GraphSchema) -> None:
    """Seed candidates of any tenant count, every distinct neighbour counts at an intermediate
    hop, a qualifying target once at the last; the frontier empties past max_visited."""
    p = _pattern(
        edge_sequence=(EdgeStep(type="HOLDS"), EdgeStep(type="HAS_EVENT")), target_type="Event", depth=2,
        max_visited=42,
    )
    q, params = compile_pattern(p, MARIA, schema)
    assert params["max_visited"] == 42 and params["expand_cap"] == 43
    lines = q.split("\n")
    assert lines[0] == "MATCH (n0:`Customer` {`id`: $seed})"  # no tenant filter: candidates count
    assert lines[2].startswith("WITH count(n0) AS visited, ")
    assert "WITH visited, seed_id, CASE WHEN visited > $max_visited THEN [] ELSE reached END AS frontier" in lines
    assert (
        "WITH visited + expanded AS visited, seed_id, "
        "CASE WHEN visited + expanded > $max_visited THEN [] ELSE reached END AS frontier"
    ) in lines
    acct = f"(n1:`Account` AND n1.`tenant_id` IN $tenants AND {evented('n1', 'opened')})"
    event = f"(n2:`Event` AND n2.`tenant_id` IN $tenants AND {evented('n2', 'timestamp')})"
    assert f"  RETURN sum(seen) AS expanded, collect(CASE WHEN {acct} " \
        "THEN [n1, path + [n1.`id`]] END) AS reached" in lines
    assert f"  RETURN sum(CASE WHEN {event} THEN 1 ELSE seen END) AS expanded, " \
        f"collect(CASE WHEN {event} THEN [n2, path + [n2.`id`]] END) AS reached" \
        in lines
    assert lines[-5].startswith("UNWIND CASE WHEN visited + expanded > $max_visited OR size(reached) = 0")
    assert "    MATCH (n0)-[e1:`HOLDS`]->(n1)" in lines  # unlabelled: every neighbour is a visit
    # a frontier node stops expanding once the cut is certain (a hub costs max_visited + 1)
    assert lines.count("    RETURN DISTINCT n1 LIMIT $expand_cap") == 1
    assert q.endswith(" AS props, path, visited, seed_id")


def test_non_id_seed_and_bool_predicate(schema: GraphSchema) -> None:
    p = {p.name: p for p in shipped_patterns(schema)}["applicable_rules"]
    q, params = compile_pattern(p, MARIA, schema)
    assert q.startswith(
        f"MATCH (n0:`CaseState` {{`name`: $seed}})\nWITH n0, (n0.`tenant_id` IN $tenants AND {timeless('n0')}) AS ok\n"
    )
    assert "n1.`enabled` = $enabled" in q and params["enabled"] is True
    assert params["seed"] == "LateFeeDispute_open"  # the Bind default: no CaseState entity resolved
    assert not seed_is_unique(p, MARIA)
    # several nodes may share a name: the smallest qualifying seed id travels with the rows
    assert "min(CASE WHEN ok THEN n0.`id` END) AS seed_id" in q
    sq, sp = compile_seed_query(p, MARIA, schema)
    assert sq == (
        f"MATCH (n0:`CaseState` {{`name`: $seed}})\nWHERE n0.`tenant_id` IN $tenants AND {timeless('n0')}\n"
        "RETURN n0.`id` AS id ORDER BY id ASC LIMIT 1"
    )
    assert sp == {"tenants": ["deltabank", "_global"], "seed": "LateFeeDispute_open",
                  "asof_recorded_at": "2026-05-12T23:59:59"}


# ---- shapes -------------------------------------------------------------------------------------
def test_directions_via_types_and_label_disjunction(schema: GraphSchema) -> None:
    p = _pattern(
        edge_sequence=(
            EdgeStep(type="HOLDS"),
            EdgeStep(type="HOLDS", direction="in"),
            EdgeStep(type="SAW_FACT", direction="in"),
            EdgeStep(type="RESULTED_IN", direction="both"),
        ),
        target_type="CustomerProfile",
        depth=4,
    )
    q, _ = compile_pattern(p, MARIA, schema)
    lines = q.split("\n")
    assert "    MATCH (n0)-[e1:`HOLDS`]->(n1)" in lines
    assert "    MATCH (n1)<-[e2:`HOLDS`]-(n2)" in lines
    assert "    MATCH (n2)<-[e3:`SAW_FACT`]-(n3)" in lines
    assert "    MATCH (n3)-[e4:`RESULTED_IN`]-(n4)" in lines
    assert f"CASE WHEN (n2:`Customer` AND n2.`tenant_id` IN $tenants AND {timeless('n2')}) THEN [n2, path" in q
    assert f"CASE WHEN (n4:`CustomerProfile` AND n4.`tenant_id` IN $tenants AND {timeless('n4')}) THEN [n4, path" in q
    # an intermediate node reachable with several labels gets them all, in schema order
    p2 = _pattern(
        edge_sequence=(
            EdgeStep(type="RESULTED_IN", direction="both"),
            EdgeStep(type="HAS_OUTCOME", direction="in"),
        ),
        seed=Seed(type="Conversation", value=Literal_(value="C1")),
        target_type="DecisionTrace",
        depth=2,
    )
    q2, _ = compile_pattern(p2, MARIA, schema)
    assert hop_labels(p2, schema)[1] == ("Conversation", "Outcome", "CustomerProfile", "DecisionTrace")
    assert "    MATCH (n0)-[e1:`RESULTED_IN`]-(n1)" in q2.split("\n")
    # labels with different time conditions: one guarded condition per group of labels
    assert (
        "(n1.`tenant_id` IN $tenants AND (n1:`Conversation` OR n1:`Outcome` OR n1:`CustomerProfile` "
        f"OR n1:`DecisionTrace`) AND (((n1:`Conversation`) AND {evented('n1', 'started_at')}) OR "
        f"((n1:`Outcome` OR n1:`DecisionTrace`) AND {evented('n1', 'timestamp')}) OR "
        f"((n1:`CustomerProfile`) AND {timeless('n1')}))) THEN [n1, path"
    ) in q2


def test_predicates_on_seed_and_intermediate_nodes(schema: GraphSchema) -> None:
    p = _pattern(
        edge_sequence=(EdgeStep(type="HOLDS"), EdgeStep(type="HAS_EVENT")),
        target_type="Event",
        depth=2,
        predicates=(
            Predicate(on=0, property="tier", value=Bind(ref="entity.Tier")),
            Predicate(on=1, property="status", op="ne", value=Literal_(value="closed")),
            Predicate(on="target", property="amount", op="exists"),
            Predicate(on="target", property="type", op="in", value=Literal_(value=("A", "B"))),
        ),
    )
    q, params = compile_pattern(p, MARIA, schema)
    assert f"WITH n0, (n0.`tenant_id` IN $tenants AND {timeless('n0')} AND n0.`tier` = $tier) AS ok\n" in q
    assert (f"(n1:`Account` AND n1.`tenant_id` IN $tenants AND {evented('n1', 'opened')} AND "
            "NOT (coalesce(n1.`status` = $status, false))) THEN") in q
    assert "n2.`amount` IS NOT NULL AND n2.`type` IN $type) THEN [n2, " in q
    assert params["tier"] == "Platinum" and params["status"] == "closed" and params["type"] == ["A", "B"]


def test_unbound_values_fail_closed(schema: GraphSchema) -> None:
    no_customer = MARIA.model_copy(update={"session": Session(tenant_id="deltabank")})
    q, params = compile_pattern(_pattern(), no_customer, schema)
    assert q.startswith("MATCH (n0:`Customer`)\nWHERE false\n")
    assert "seed" not in params
    p = _pattern(predicates=(Predicate(property="status", value=Bind(ref="entity.Missing")),))
    q, _ = compile_pattern(p, MARIA, schema)
    assert f"(n1:`Account` AND n1.`tenant_id` IN $tenants AND {evented('n1', 'opened')} AND false) THEN" in q
    # a predicate beyond the target (the gate rejects it): seeds are candidates, none qualifies
    p = _pattern(predicates=(Predicate(on=5, property="id", value=Literal_(value="x")),))
    assert (f"\nWITH n0, (n0.`tenant_id` IN $tenants AND {timeless('n0')} AND false) AS ok\n"
            in compile_pattern(p, MARIA, schema)[0])


def test_tuple_and_typed_seed_values(schema: GraphSchema) -> None:
    p = _pattern(seed=Seed(type="Customer", value=Literal_(value=("CUST_1", "CUST_2"))))
    q, params = compile_pattern(p, MARIA, schema)
    assert q.startswith(
        f"MATCH (n0:`Customer`)\nWHERE n0.`id` IN $id\nWITH n0, (n0.`tenant_id` IN $tenants AND {timeless('n0')}) AS ok\n")
    assert params["id"] == ["CUST_1", "CUST_2"] and not seed_is_unique(p, MARIA)
    p = _pattern(
        seed=Seed(type="Tier", key="rank", value=Literal_(value=3)),
        edge_sequence=(EdgeStep(type="HAS_TIER", direction="in"),),
        target_type="Customer",
    )
    q, _ = compile_pattern(p, MARIA, schema, FALKORDB)
    assert q.startswith("MATCH (n0:`Tier`)\nWHERE [n0.`rank`][0] = $rank\n")  # non-string: not from the index


def test_order_limit_and_row_properties(schema: GraphSchema) -> None:
    p = _pattern(
        order_by=(OrderBy(property="balance"), OrderBy(property="opened", direction="asc")),
        limit=7,
        returns=("balance",),
    )
    q, params = compile_pattern(p, MARIA, schema)
    assert (
        "ORDER BY n1.`balance` IS NULL, n1.`balance` DESC, n1.`opened` IS NULL, n1.`opened` ASC, "
        "n1.`id` ASC\nLIMIT $limit\n"
    ) in q
    assert params["limit"] == 8
    assert row_properties(p, schema) == ("id", "tenant_id", "summary", "balance")
    # PII never leaves the database unless the pattern declares it
    cust = _pattern(
        edge_sequence=(EdgeStep(type="HOLDS"), EdgeStep(type="HOLDS", direction="in")),
        depth=2,
        target_type="Customer",
        returns=("name", "email", "tier"),
        pii_allowed=("name",),
    )
    assert row_properties(cust, schema) == ("id", "tenant_id", "summary", "name", "tier")
    everything = _pattern(
        target_type="Customer",
        edge_sequence=(EdgeStep(type="HOLDS"), EdgeStep(type="HOLDS", direction="in")),
        depth=2,
    )
    assert not {"name", "email", "phone"} & set(row_properties(everything, schema))


# ---- FilterTree -> Cypher -------------------------------------------------------------------------
def test_filter_compiler(schema: GraphSchema) -> None:
    params = ParamStore()
    tree = And(
        clauses=(
            Eq(field="type", value="LateFeeCharged"),
            Or(
                clauses=(
                    Range(field="amount", gte=10, lt=50.5),
                    In(field="status", values=("charged", "waived")),
                )
            ),
            Not(clause=Range(field="timestamp", gt="2026-01-01T00:00:00")),
            Not(clause=Eq(field="on_time", value=True)),
        )
    )
    where = compile_filter(tree, "n", schema, ("Event",), params)
    assert where == (
        "(n.`type` = $type AND ((n.`amount` >= $amount AND n.`amount` < $amount_1) OR n.`status` IN $status) "
        "AND NOT (coalesce(n.`timestamp` > $timestamp, false)) AND NOT (coalesce(n.`on_time` = $on_time, false)))"
    )
    assert params.params == {
        "type": "LateFeeCharged",
        "amount": 10,
        "amount_1": 50.5,
        "status": ["charged", "waived"],
        "timestamp": "2026-01-01T00:00:00",
        "on_time": True,
    }


def test_filter_lists_bools_and_double_negation(schema: GraphSchema) -> None:
    params = ParamStore()
    assert (
        compile_filter(Eq(field="aliases", value="Plat"), "n", schema, ("Tier",), params)
        == "any(x IN n.`aliases` WHERE x = $aliases)"
    )
    assert (
        compile_filter(Not(clause=In(field="aliases", values=("a",))), "n", schema, ("Tier",), params)
        == "NOT (coalesce(any(x IN n.`aliases` WHERE x IN $aliases_1), false))"
    )
    # a boolean bound never matches a range (filters.matches compares like with like only)
    assert compile_filter(Range(field="rank", gt=True), "n", schema, ("Tier",), params) == "false"
    # NOT NOT: the inner leaf is back in positive position (nulls filter the row again)
    assert (
        compile_filter(
            Not(clause=Not(clause=Eq(field="rank", value=1))), "n", schema, ("Tier",), ParamStore()
        )
        == "NOT (NOT (n.`rank` = $rank))"
    )
    assert (
        compile_filter(Eq(field="rank", value=1), "n", schema, ("Tier",), ParamStore(), FALKORDB)
        == "[n.`rank`][0] = $rank"
    )


def test_param_store_names_are_unique_and_safe() -> None:
    ps = ParamStore({"limit": 3})
    assert ps.add(1, "limit") == "$limit_1"
    assert ps.add(2, "limit") == "$limit_2"
    assert ps.add(3, "x` }) DETACH DELETE n //") == "$p"
    assert ps.add((1, 2), "tuple") == "$tuple" and ps.params["tuple"] == [1, 2]


# ---- injection ------------------------------------------------------------------------------
EVIL = [
    "CUST_4421'}) MATCH (m) DETACH DELETE m //",
    'x"}) RETURN 1 //',
    "`) DETACH DELETE n //",
    "$injected_param",
    "\\u0027 OR 1=1 --",
    "line\nbreak } {",
]


@pytest.mark.parametrize("evil", EVIL)
def test_values_never_reach_the_query_text(schema: GraphSchema, evil: str) -> None:
    b = Bindings(
        session=Session(tenant_id="deltabank", customer_id=evil, region=evil),
        as_of=MARIA.as_of,
        goal=evil,
        entities={"Tier": evil},
    )
    p = _pattern(
        edge_sequence=(EdgeStep(type="HOLDS"), EdgeStep(type="HAS_EVENT")),
        target_type="Event",
        depth=2,
        predicates=(
            Predicate(property="type", value=Literal_(value=evil)),
            Predicate(property="status", op="in", value=Bind(ref="entity.Tier")),
            Predicate(on=0, property="region", value=Bind(ref="session.region")),
        ),
    )
    q, params = compile_pattern(p, b, schema)
    assert evil not in q
    assert (
        params["seed"] == evil
        and params["type"] == evil
        and params["status"] == [evil]
        and params["region"] == evil
    )
    where = compile_filter(
        parse_filter({"op": "eq", "field": "status", "value": evil}), "n", schema, ("Event",), ParamStore()
    )
    assert evil not in where


@pytest.mark.parametrize(
    "name", ["Customer`) DETACH DELETE n //", "Customer {id: 1}", "1abc", "a b", "", "é"]
)
def test_unsafe_identifiers_are_rejected_by_the_models(name: str) -> None:
    with pytest.raises((ValueError, UnsafeIdentifierError)):
        _pattern(target_type=name)
    with pytest.raises((ValueError, UnsafeIdentifierError)):
        EdgeStep(type=name)
    with pytest.raises((ValueError, UnsafeIdentifierError)):
        Predicate(property=name, value=Literal_(value=1))
    with pytest.raises(FilterError):
        parse_filter({"op": "eq", "field": name, "value": 1})


def test_compiler_gate_holds_even_when_models_are_bypassed(schema: GraphSchema) -> None:
    """model_construct skips pydantic validation; cypher_identifier still refuses."""
    evil_step = EdgeStep.model_construct(type="HOLDS]->(x) DETACH DELETE x //", direction="out")
    p = _pattern().model_copy(update={"edge_sequence": (evil_step,)})
    with pytest.raises(UnsafeIdentifierError):
        compile_pattern(p, MARIA, schema)
    evil_pred = Predicate.model_construct(
        on="target", property="x` = 1 OR true //", op="eq", value=Literal_(value=1)
    )
    with pytest.raises(UnsafeIdentifierError):
        compile_pattern(_pattern().model_copy(update={"predicates": (evil_pred,)}), MARIA, schema)
    with pytest.raises(UnsafeIdentifierError):
        compile_filter(
            Eq.model_construct(op="eq", field="a`) OR 1=1 //", value=1), "n", schema, ("Event",), ParamStore()
        )
    with pytest.raises(UnsafeIdentifierError):
        compile_filter(Eq(field="type", value="x"), "n) DETACH DELETE (n", schema, ("Event",), ParamStore())


def test_identifiers_outside_the_schema_are_rejected(schema: GraphSchema) -> None:
    with pytest.raises(SchemaError):
        compile_pattern(_pattern(target_type="Spaceship"), MARIA, schema)
    with pytest.raises(SchemaError):
        compile_pattern(_pattern(edge_sequence=(EdgeStep(type="OWNS_SPACESHIP"),)), MARIA, schema)
    with pytest.raises(SchemaError):
        compile_pattern(
            _pattern(predicates=(Predicate(property="password", value=Literal_(value="x")),)), MARIA, schema
        )
    with pytest.raises(SchemaError):
        compile_filter(Eq(field="password", value="x"), "n", schema, ("Event",), ParamStore())


def test_relative_time_uses_as_of_and_property_type(schema: GraphSchema) -> None:
    p = _pattern(
        predicates=(
            Predicate(
                property="opened", op="gte", value=RelativeTime(amount=-1, unit="years", start_of="year")
            ),
        )
    )
    _, params = compile_pattern(p, MARIA, schema)
    assert params["opened"] == "2025-01-01"  # Account.opened is a date
    _, later = compile_pattern(p, MARIA.model_copy(update={"as_of": datetime(2030, 6, 1)}), schema)
    assert later["opened"] == "2029-01-01"


def test_capability_table_lookup() -> None:
    assert capabilities("neo4j") is NEO4J and capabilities("falkordb") is FALKORDB
    from hopweave.errors import ConfigError

    with pytest.raises(ConfigError):
        capabilities("kuzu")


if __name__ == "__main__" and "--regenerate" in sys.argv:
    from domains import deltabank_schema

    data = compile_all(deltabank_schema())
    EXPECTED.write_text(
        json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"wrote {len(data)} expected queries to {EXPECTED}")
