"""Time on the graph (issue 14): every pattern sees, at as_of, exactly the facts known then and
the procedure in force then (hopweave.graph.predicates.time_tree; docs/engine.md, "Time").
The same checks run on FalkorDB in tests/falkordb/test_time.py."""

from __future__ import annotations

from datetime import datetime

import pytest
import time_checks as tc

from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.graph.predicates import time_tree
from hopweave.models.filters import matches
from hopweave.models.schema import GraphSchema, SchemaError


@pytest.fixture
def table_store(schema: GraphSchema):
    store = NetworkxGraphStore(None, schema)
    with store.bulk(replace=True) as b:
        for tenant, items in tc.table_batches():
            b.write(tenant, items)
    yield store
    store.close()


def test_the_table_of_named_cases(table_store) -> None:
    assert tc.check_table(table_store) == []


def test_inspection_views_are_timeless(table_store) -> None:
    assert tc.check_timeless(table_store) == []


def test_a_fact_recorded_after_as_of_never_appears(schema: GraphSchema) -> None:
    """Property: on random graphs with random recorded_at / event times / validity, every random
    pattern at each as_of returns exactly its rows on the graph known at that as_of."""
    store = NetworkxGraphStore(None, schema)

    def load(batches) -> None:
        with store.bulk(replace=True) as b:
            for tenant, items in batches:
                b.write(tenant, items)

    counts: dict[str, int] = {}
    problems = tc.check_time_slices(schema, store, load, graphs=6, patterns_per_graph=40, seed=14, counts=counts)
    store.close()
    assert not problems, f"{len(problems)} problems; first ones:\n" + "\n".join(problems[:5])
    # the property must be exercised on real answers, not only empty ones
    assert counts["time-slice comparisons"] >= 400
    assert counts["time-slice comparisons with rows"] >= 40


def test_time_tree_is_the_documented_definition(schema: GraphSchema) -> None:
    event, rule, customer = schema.label("Event"), schema.label("Rule"), schema.label("Customer")
    at = datetime(2026, 5, 12, 23, 59, 59)
    assert matches(time_tree(event, at), {"timestamp": "2026-05-12T23:59:59"})
    assert not matches(time_tree(event, at), {"timestamp": "2026-05-13T00:00:00"})
    # recorded_at wins over the event time, both ways
    assert not matches(time_tree(event, at), {"timestamp": "2026-05-01T00:00:00", "recorded_at": "2026-05-20T00:00:00"})
    assert matches(time_tree(event, at), {"timestamp": "2026-06-01T00:00:00", "recorded_at": "2026-05-01T00:00:00"})
    assert matches(time_tree(customer, at), {})  # timeless
    assert matches(time_tree(rule, at), {"valid_from": "2026-05-12"})  # from its first day
    assert not matches(time_tree(rule, at), {"valid_until": "2026-05-12"})  # until is exclusive
    assert not matches(time_tree(rule, at), {"valid_from": "2026-05-13"})


def test_time_roles_must_name_date_properties() -> None:
    base = GraphSchema.base()
    with pytest.raises(SchemaError, match="time.event names 'kind'"):
        base.extend({"labels": [{"name": "Thing", "subgraph": "semantic", "time": {"event": "kind"},
                         "properties": [{"name": "kind", "type": "str"}]}]})
    with pytest.raises(SchemaError, match="already declares"):
        base.extend({"labels": [{"extends": "Rule", "time": {"valid_from": "valid_until"}}]})
    ext = base.extend({"labels": [{"extends": "TraceStep", "properties": [{"name": "at", "type": "datetime"}],
                                   "time": {"event": "at"}}]})
    assert ext.label("TraceStep").time is not None and ext.label("TraceStep").time.event == "at"


def test_the_compiled_matcher_is_matches(schema: GraphSchema) -> None:
    """filters.compile_matcher (the walker's hot path for the time rule) answers exactly like
    filters.matches: random trees over random node properties, and every label's time tree."""
    import random

    from congruence import AS_OF, random_filter, random_graph

    from hopweave.graph.predicates import time_matcher
    from hopweave.models.filters import compile_matcher

    rng = random.Random(1414)
    graph = random_graph(schema, rng)
    checked = 0
    for _ in range(300):
        label = rng.choice([lab.name for lab in schema.labels])
        tree = random_filter(schema, rng, label)
        fast = compile_matcher(tree)
        for node in rng.sample(graph.nodes, 20):
            assert fast(node.props) == matches(tree, node.props), (tree, node.props)
            checked += 1
    for lab in schema.labels:
        for as_of in (*tc.AS_OFS, AS_OF):
            fast = time_matcher(lab, as_of)
            for node in graph.by_label.get(lab.name, []):
                assert fast(node.props) == matches(time_tree(lab, as_of), node.props)
                checked += 1
    assert checked > 6000
