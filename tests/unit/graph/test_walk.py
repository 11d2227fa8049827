"""The walker's semantics (graph/walk.py docstring), rule by rule, on small real stores."""

from __future__ import annotations

import time
from datetime import datetime

from graph_helpers import bindings, pattern

from hopweave.graph.base import Edge, Node
from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.models.metagraph import (
    AsOfYear,
    Bind,
    EdgeStep,
    Literal_,
    OrderBy,
    Predicate,
    RelativeTime,
    Seed,
)


def ids(result):
    return [r.node_id for r in result.rows]


HOLDS_EVENTS = dict(edge_sequence=(EdgeStep(type="HOLDS"), EdgeStep(type="HAS_EVENT")), target_type="Event")


def test_one_hop_and_row_provenance(mem_store):
    r = mem_store.run_pattern("t1", pattern(), bindings())
    assert ids(r) == ["TIER_Platinum"] and r.rows[0].path == ("C1", "TIER_Platinum")
    assert r.rows[0].properties == {"id": "TIER_Platinum", "tenant_id": "_global", "name": "Platinum",
                                    "summary": "Platinum tier"}
    assert r.seed_id == "C1" and r.visited == 2 and not r.truncated


def test_unbound_seed_matches_nothing(mem_store):
    r = mem_store.run_pattern("t1", pattern(), bindings(customer=None))
    assert r.rows == () and r.seed_id is None


def test_seed_by_other_key_and_default(mem_store):
    p = pattern(seed=Seed(type="Customer", key="name", value=Bind(ref="entity.Name", default="Ann")))
    assert ids(mem_store.run_pattern("t1", p, bindings())) == ["TIER_Platinum"]
    # the seed value matches t2's customer name only in t2
    p2 = pattern(seed=Seed(type="Customer", key="name", value=Literal_(value="Bob")))
    assert ids(mem_store.run_pattern("t1", p2, bindings())) == []
    assert ids(mem_store.run_pattern("t2", p2, bindings("t2"))) == ["TIER_Platinum"]


def test_predicates_and_relative_time_use_as_of(mem_store):
    p = pattern(**HOLDS_EVENTS, predicates=(
        Predicate(property="type", value=Literal_(value="Transaction")),
        Predicate(property="timestamp", op="gte", value=RelativeTime(amount=-24, unit="months")),
    ))
    assert ids(mem_store.run_pattern("t1", p, bindings())) == ["E1"]
    # replay at an as_of in 2024: the 2026 event is "in the future", the 2023 one within 24 months
    p_upto = p.model_copy(update={"predicates": p.predicates + (
        Predicate(property="timestamp", op="lte", value=RelativeTime(amount=0)),)})
    assert ids(mem_store.run_pattern("t1", p_upto, bindings(as_of=datetime(2024, 6, 1)))) == ["E2"]


def test_as_of_year_and_in_and_ne_and_exists(mem_store):
    year = pattern(**HOLDS_EVENTS, predicates=(Predicate(property="year", value=AsOfYear()),))
    assert ids(mem_store.run_pattern("t1", year, bindings())) == ["E1", "E3"]
    assert ids(mem_store.run_pattern("t1", year, bindings(as_of=datetime(2023, 3, 1)))) == ["E2"]
    inn = pattern(**HOLDS_EVENTS, predicates=(Predicate(property="type", op="in", value=Literal_(value=("WaiverEvent", "X"))),))
    assert ids(mem_store.run_pattern("t1", inn, bindings())) == ["E3"]
    ne = pattern(**HOLDS_EVENTS, predicates=(Predicate(property="amount", op="ne", value=Literal_(value=5.0)),))
    assert ids(mem_store.run_pattern("t1", ne, bindings())) == ["E2", "E3"]  # missing satisfies ne
    ex = pattern(**HOLDS_EVENTS, predicates=(Predicate(property="amount", op="exists"),))
    assert ids(mem_store.run_pattern("t1", ex, bindings())) == ["E1", "E2"]
    unbound = pattern(**HOLDS_EVENTS, predicates=(Predicate(property="type", value=Bind(ref="entity.EventType")),))
    assert ids(mem_store.run_pattern("t1", unbound, bindings())) == []
    bound = mem_store.run_pattern("t1", unbound, bindings(entities={"EventType": "WaiverEvent"}))
    assert ids(bound) == ["E3"]


def test_predicate_on_intermediate_hop(mem_store):
    p = pattern(**HOLDS_EVENTS, predicates=(Predicate(on=1, property="type", value=Literal_(value="savings")),))
    assert ids(mem_store.run_pattern("t1", p, bindings())) == []
    p = pattern(**HOLDS_EVENTS, predicates=(Predicate(on=1, property="balance", op="gte", value=Literal_(value=10)),))
    assert ids(mem_store.run_pattern("t1", p, bindings())) == ["E1", "E2", "E3"]


def test_bool_equality_is_strict(schema):
    s = NetworkxGraphStore(None, schema)
    s.write("t1", [Node("S", "CaseState", {"name": "open"}), Node("R1", "Rule", {"enabled": True}),
                   Node("R2", "Rule", {"enabled": False}), Node("R3", "Rule", {})],
            [Edge("S", "R1", "MATCHES"), Edge("S", "R2", "MATCHES"), Edge("S", "R3", "MATCHES")])
    base = dict(seed=Seed(type="CaseState", key="name", value=Literal_(value="open")),
                edge_sequence=(EdgeStep(type="MATCHES"),), target_type="Rule")
    on = pattern(**base, predicates=(Predicate(property="enabled", value=Literal_(value=True)),))
    assert ids(s.run_pattern("t1", on, bindings())) == ["R1"]
    one = pattern(**base, predicates=(Predicate(property="enabled", value=Literal_(value=1)),))
    assert ids(s.run_pattern("t1", one, bindings())) == []


def test_order_by_with_missing_values_last_then_id_and_limit(schema):
    s = NetworkxGraphStore(None, schema)
    s.write("t1", [Node("C", "Customer", {}), Node("A", "Account", {})]
            + [Node(f"E{i}", "Event", props) for i, props in enumerate(
                [{"amount": 5.0}, {}, {"amount": 9.0}, {"amount": 5.0}, {}])],
            [Edge("C", "A", "HOLDS")] + [Edge("A", f"E{i}", "HAS_EVENT") for i in range(5)])
    b = bindings(customer="C")
    desc = pattern(**HOLDS_EVENTS, order_by=(OrderBy(property="amount", direction="desc"),))
    assert ids(s.run_pattern("t1", desc, b)) == ["E2", "E0", "E3", "E1", "E4"]
    asc = pattern(**HOLDS_EVENTS, order_by=(OrderBy(property="amount", direction="asc"),))
    assert ids(s.run_pattern("t1", asc, b)) == ["E0", "E3", "E2", "E1", "E4"]
    lim = s.run_pattern("t1", desc.model_copy(update={"limit": 2}), b)
    assert ids(lim) == ["E2", "E0"] and lim.truncated and lim.truncated_reason == "limit"
    exact = s.run_pattern("t1", desc.model_copy(update={"limit": 5}), b)
    assert not exact.truncated and exact.truncated_reason is None


def test_directions_distinct_targets_and_smallest_path(schema):
    s = NetworkxGraphStore(None, schema)
    s.write("t1", [Node(x, "CustomerProfile", {}) for x in ("P1", "P2", "P3", "P4")],
            [Edge("P1", "P2", "SIMILAR_TO"), Edge("P3", "P1", "SIMILAR_TO"), Edge("P2", "P4", "SIMILAR_TO"),
             Edge("P3", "P4", "SIMILAR_TO")])
    seed = Seed(type="CustomerProfile", key="id", value=Literal_(value="P1"))

    def one(d: str):  # -> TraversalPattern
        return pattern(seed=seed, edge_sequence=(EdgeStep(type="SIMILAR_TO", direction=d),),
                       target_type="CustomerProfile")

    b = bindings()
    assert ids(s.run_pattern("t1", one("out"), b)) == ["P2"]
    assert ids(s.run_pattern("t1", one("in"), b)) == ["P3"]
    assert ids(s.run_pattern("t1", one("both"), b)) == ["P2", "P3"]
    two = pattern(seed=seed, edge_sequence=(EdgeStep(type="SIMILAR_TO", direction="both"),) * 2,
                  target_type="CustomerProfile")
    r = s.run_pattern("t1", two, b)
    # homomorphism: P1 is reachable back through either neighbour; P4 via P2 and via P3
    assert ids(r) == ["P1", "P4"]
    paths = {row.node_id: row.path for row in r.rows}
    assert paths == {"P1": ("P1", "P2", "P1"), "P4": ("P1", "P2", "P4")}


def test_via_types_and_schema_labels_constrain_intermediates(schema):
    s = NetworkxGraphStore(None, schema)
    s.write("t1", [Node("D", "DecisionTrace", {}), Node("C", "Customer", {}), Node("O", "Outcome", {}),
                   Node("K", "Conversation", {}), Node("O2", "Outcome", {})],
            [Edge("D", "C", "SAW_FACT"), Edge("D", "O", "SAW_FACT"), Edge("C", "K", "PARTICIPATED_IN"),
             Edge("K", "O2", "RESULTED_IN")])
    p = pattern(seed=Seed(type="DecisionTrace", key="id", value=Literal_(value="D")),
                edge_sequence=(EdgeStep(type="SAW_FACT"), EdgeStep(type="PARTICIPATED_IN")),
                target_type="Conversation")
    assert ids(s.run_pattern("t1", p, bindings())) == ["K"]
    p_via = p.model_copy(update={"via_types": ("Outcome",)})
    assert ids(s.run_pattern("t1", p_via, bindings())) == []


def test_row_properties_hide_pii_unless_allowed(mem_store):
    # Customer -HOLDS-> Account <-HOLDS- Customer returns the customer node itself
    base = dict(edge_sequence=(EdgeStep(type="HOLDS"), EdgeStep(type="HOLDS", direction="in")),
                target_type="Customer")
    all_props = mem_store.run_pattern("t1", pattern(**base), bindings()).rows[0].properties
    assert "name" not in all_props and all_props["tier"] == "Platinum"  # returns empty: all but PII
    allowed = pattern(**base, returns=("name", "tier"), pii_allowed=("name",))
    props = mem_store.run_pattern("t1", allowed, bindings()).rows[0].properties
    assert props == {"id": "C1", "tenant_id": "t1", "name": "Ann", "tier": "Platinum", "summary": "C1 Platinum"}
    # a pattern that slipped past the gate still cannot leak PII
    sneaky = pattern(**base, returns=("name",))
    assert "name" not in mem_store.run_pattern("t1", sneaky, bindings()).rows[0].properties


def _dense(schema, n: int = 120) -> NetworkxGraphStore:
    s = NetworkxGraphStore(None, schema)
    with s.bulk() as b:
        b.write("t1", [Node(f"P{i:04d}", "CustomerProfile", {}) for i in range(2 * n)])
        b.write("t1", [Edge(f"P{i:04d}", f"P{j:04d}", "SIMILAR_TO") for i in range(n) for j in range(n, 2 * n)])
    return s


def _dense_pattern(**kw):
    return pattern(seed=Seed(type="CustomerProfile", key="id", value=Literal_(value="P0000")),
                   edge_sequence=(EdgeStep(type="SIMILAR_TO", direction="both"),) * 4,
                   target_type="CustomerProfile", **kw)


def test_max_visited_truncates_deterministically(schema):
    s = _dense(schema)
    p = _dense_pattern(max_visited=500, budget_ms=10_000)
    r1, r2 = s.run_pattern("t1", p, bindings()), s.run_pattern("t1", p, bindings())
    assert r1.truncated and r1.truncated_reason == "max_visited" and r1.visited == 501
    assert r1.rows and r1.rows == r2.rows
    full = s.run_pattern("t1", _dense_pattern(max_visited=1_000_000, budget_ms=10_000, limit=1000), bindings())
    assert not full.truncated and len(full.rows) == 120


def test_budget_truncates_a_dense_walk(schema):
    s = _dense(schema, n=300)
    r = s.run_pattern("t1", _dense_pattern(budget_ms=2, max_visited=10_000_000), bindings())
    assert r.truncated and r.truncated_reason == "budget_ms"
    # an already-expired deadline stops at the first node
    r = s.run_pattern("t1", _dense_pattern(), bindings(), deadline=time.perf_counter() - 1)
    assert r.truncated and r.truncated_reason == "budget_ms" and r.rows == ()


# ---- hubs: budgets hold, results stay deterministic ------------------------------------------
import hopweave.graph.walk as walk_mod  # noqa: E402
from hopweave.models.metagraph import OrderBy  # noqa: E402,F811


def _hub(schema, n: int) -> NetworkxGraphStore:
    s = NetworkxGraphStore(None, schema)
    with s.bulk() as b:
        b.write("t1", [Node("C1", "Customer", {"name": "hub"})])
        b.write("t1", (Node(f"A{i:06d}", "Account", {"type": "credit", "balance": float((i * 7919) % 101)})
                       for i in range(n)))
        b.write("t2", [Node("B1", "Account", {"type": "credit", "balance": 500.0})])
        b.write("t1", (Edge("C1", f"A{i:06d}", "HOLDS") for i in range(n)))
    return s


def test_sorted_neighbours_merges_chunks_and_dedupes():
    raw = [f"x{i:05d}" for i in range(5000, 0, -1)] + ["x00003", "x04999"]  # repeats across chunks
    out = list(walk_mod.sorted_neighbours(iter(raw), time.perf_counter() + 60))
    assert out == sorted(set(raw))
    try:
        list(walk_mod.sorted_neighbours(iter(raw), time.perf_counter() - 1))
    except walk_mod._Stop as stop:
        assert stop.reason == "budget_ms"
    else:
        raise AssertionError("an expired deadline must stop a multi-chunk read")


def test_hub_rows_are_the_full_sort_order(schema):
    """A hub larger than several chunks: rows equal a brute-force sort (order_by desc, id asc)."""
    n = 5 * walk_mod.CHUNK + 17
    s = _hub(schema, n)
    p = pattern(edge_sequence=(EdgeStep(type="HOLDS"),), target_type="Account", limit=25, budget_ms=2000,
                order_by=(OrderBy(property="balance", direction="desc"),))
    r = s.run_pattern("t1", p, bindings(), deadline=time.perf_counter() + 60)
    want = sorted((-float((i * 7919) % 101), f"A{i:06d}") for i in range(n))[:25]
    assert ids(r) == [i for _, i in want]
    # an order_by hub is read best first from its order index: limit + 1 targets (and ties) examined
    assert r.truncated_reason == "limit" and r.visited < n // 10
    assert r.rows[0].path == ("C1", want[0][1])
    assert r == s.run_pattern("t1", p, bindings(), deadline=time.perf_counter() + 60).model_copy(
        update={"elapsed_ms": r.elapsed_ms})


def test_hub_max_visited_cut_is_exact_and_deterministic(schema):
    s = _hub(schema, 3 * walk_mod.CHUNK)
    p = pattern(edge_sequence=(EdgeStep(type="HOLDS"),), target_type="Account", limit=5, budget_ms=2000,
                max_visited=1500)
    r = s.run_pattern("t1", p, bindings(), deadline=time.perf_counter() + 60)
    assert r.truncated_reason == "max_visited" and r.visited == 1501
    assert ids(r) == [f"A{i:06d}" for i in range(5)]


def test_budget_holds_on_a_hub(schema):
    """The issue-12 defect: a 10 ms pattern on a 100k-edge node ran ~200 ms, because the walker
    read, de-duplicated and sorted the whole adjacency before its first deadline check. With a
    deadline already past, the walker must stop within its first adjacency chunk: no wall-clock
    assertion here (benchmarks/bench_hub.py measures elapsed against budget)."""
    s = _hub(schema, 60_000)
    p = pattern(edge_sequence=(EdgeStep(type="HOLDS"),), target_type="Account", budget_ms=10,
                max_visited=1_000_000, order_by=(OrderBy(property="balance"),))
    r = s.run_pattern("t1", p, bindings(), deadline=time.perf_counter())
    assert r.truncated and r.truncated_reason == "budget_ms"
    assert r.visited <= 2 * 1024, r.visited  # one adjacency chunk, not the 60,000 neighbours
