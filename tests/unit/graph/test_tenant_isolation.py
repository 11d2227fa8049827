"""Tenant isolation on randomized data: a pattern run for tenant A never returns (or walks through)
tenant B's nodes, even through shared vocabulary nodes, and returns exactly what it returns on a
store holding only A's data."""

from __future__ import annotations

import random

from graph_helpers import bindings, load_schema, pattern
from hypothesis import HealthCheck, given, settings, strategies as st

from hopweave.graph.base import Edge, Node, visible
from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.models.metagraph import EdgeStep, Literal_, Seed

SCHEMA = load_schema()
TENANTS = ("a", "b")
LABELS = ("Customer", "Account", "Event", "CustomerProfile", "DecisionTrace", "Tier", "Product", "Region", "EventType")
RELS = ("HAS_TIER", "HOLDS", "OF_PRODUCT", "HAS_EVENT", "OF_TYPE", "CAUSED_BY", "LOCATED_IN", "HAS_PROFILE",
        "SIMILAR_TO", "RESULTED_IN", "FOR_CUSTOMER")


def random_items(rng: random.Random) -> dict[str, list]:
    """Items per tenant (incl. '_global'), schema-valid, edges only between visible nodes."""
    nodes: dict[str, list[Node]] = {"_global": [], "a": [], "b": []}
    for i in range(rng.randint(20, 60)):
        label = rng.choice(LABELS)
        shared = SCHEMA.label(label).shared
        tenant = "_global" if shared else rng.choice(TENANTS)
        nodes[tenant].append(Node(f"{label[:3]}{i}", label, {"summary": f"n{i}"}))
    edges: dict[str, list[Edge]] = {"_global": [], "a": [], "b": []}
    for tenant in TENANTS:
        pool = nodes[tenant] + nodes["_global"]
        for _ in range(rng.randint(10, 120)):
            src, dst = rng.choice(pool), rng.choice(pool)
            rels = [r for r in RELS if src.label in SCHEMA.rel(r).from_labels and dst.label in SCHEMA.rel(r).to_labels]
            if rels and (src in nodes[tenant] or dst in nodes[tenant]):
                edges[tenant].append(Edge(src.id, dst.id, rng.choice(rels)))
    return {t: nodes[t] + edges[t] for t in nodes}


def random_pattern(rng: random.Random, seed_node: Node):
    """A random schema-valid walk shape from the seed's label (possibly through shared nodes)."""
    labels, steps = {seed_node.label}, []
    for _ in range(rng.randint(1, 3)):
        options = []
        for r in RELS:
            spec = SCHEMA.rel(r)
            if labels & set(spec.from_labels):
                options.append((r, "out", set(spec.to_labels)))
            if labels & set(spec.to_labels):
                options.append((r, "in", set(spec.from_labels)))
        r, d, nxt = rng.choice(options)
        if rng.random() < 0.2:
            d = "both"
            nxt = set(SCHEMA.rel(r).from_labels) | set(SCHEMA.rel(r).to_labels)
        steps.append(EdgeStep(type=r, direction=d))
        labels = nxt
    return pattern(seed=Seed(type=seed_node.label, key="id", value=Literal_(value=seed_node.id)),
                   edge_sequence=tuple(steps), target_type=rng.choice(sorted(labels)), limit=1000,
                   max_visited=1_000_000, budget_ms=10_000)


def build(items: dict[str, list], tenants) -> NetworkxGraphStore:
    s = NetworkxGraphStore(None, SCHEMA)
    with s.bulk() as b:
        for t in ("_global", *tenants):
            b.write(t, items[t])
    return s


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_patterns_never_cross_tenants(seed):
    rng = random.Random(seed)
    items = random_items(rng)
    both = build(items, TENANTS)
    only_a = build(items, ("a",))
    a_nodes = [n for n in items["a"] if isinstance(n, Node)]
    b_nodes = [n for n in items["b"] if isinstance(n, Node)]
    for _ in range(8):
        seed_node = rng.choice(a_nodes + b_nodes) if a_nodes + b_nodes else None
        if seed_node is None:
            return
        p = random_pattern(rng, seed_node)
        r = both.run_pattern("a", p, bindings("a"))
        for row in r.rows:
            assert row.properties["tenant_id"] in ("a", "_global")
            for nid in row.path:
                assert visible("a", both.graph.nodes[nid]["tenant_id"])
        if seed_node in b_nodes:
            assert r.rows == ()  # another tenant's seed is invisible
        # exactly the rows of a store that never held tenant b's data
        ref = only_a.run_pattern("a", p, bindings("a"))
        assert [(x.node_id, x.path) for x in r.rows] == [(x.node_id, x.path) for x in ref.rows]
