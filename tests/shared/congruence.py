"""Congruence machinery shared by tests/falkordb (FalkorDB) and tests/integration (Neo4j).

Random property graphs over the real schema (several tenants plus shared ``_global`` vocabulary
nodes; some nodes and edges carry ``recorded_at`` around :data:`AS_OF`), random TraversalPatterns (random walks over the schema's relationship graph, directions,
via types, predicates of every operator with literal / bound / relative-time / as-of-year values,
order_by, limit) and random FilterTrees; helpers that run them on two GraphStores and compare the
rows. Deterministic for a given seed.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Iterable

from hopweave.graph.base import Edge, GraphStore, Node
from hopweave.models.common import Bindings, PatternResult, Session
from hopweave.models.filters import And, Eq, FilterTree, In, Not, Or, Range
from hopweave.models.metagraph import (
    AsOfYear,
    Bind,
    EdgeStep,
    Literal_,
    OrderBy,
    Predicate,
    RelativeTime,
    Seed,
    TraversalPattern,
)
from hopweave.models.schema import GLOBAL_TENANT, GraphSchema

TENANTS = ("t1", "t2")
AS_OF = datetime(2026, 5, 12, 23, 59, 59)
WORDS = ("Platinum", "Gold", "a", "b", "B", "late fee", "US", "EU", "current", "x y")
DATES = ("2023-01-31", "2024-05-12", "2025-12-31", "2026-01-01", "2026-05-12", "2026-06-01")
DATETIMES = (
    "2023-01-31T08:00:00",
    "2024-05-12T23:59:59",
    "2025-12-31T10:00:00",
    "2026-01-01T00:00:00",
    "2026-05-12T12:00:00",
    "2026-05-13T00:00:00",
)
NUMBERS = (0, 1, 2, 3, 5, 39)
FLOATS = (0.0, 0.5, 1.0, 2.5, 39.0, 120.75)


def _value_for(rng: random.Random, ptype: str) -> Any:
    if ptype == "str":
        return rng.choice(WORDS)
    if ptype == "int":
        return rng.choice(NUMBERS)
    if ptype == "float":
        return rng.choice(FLOATS)
    if ptype == "bool":
        return rng.random() < 0.5
    if ptype == "date":
        return rng.choice(DATES)
    if ptype == "datetime":
        return rng.choice(DATETIMES)
    if ptype == "list[str]":
        return sorted(rng.sample(WORDS, rng.randint(0, 3)))
    return '{"k": 1}'  # json


def _any_value(rng: random.Random, ptype: str) -> Any:
    """Mostly a value of the property's type; sometimes another type (semantics must agree)."""
    if rng.random() < 0.12:
        ptype = rng.choice(("str", "int", "float", "bool"))
    return _value_for(rng, "str" if ptype == "list[str]" else ptype)


@dataclass
class RandomGraph:
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    by_label: dict[str, list[Node]] = field(default_factory=dict)


def random_graph(
    schema: GraphSchema, rng: random.Random, n_nodes: int = 120, n_edges: int = 420
) -> RandomGraph:
    """A schema-valid random graph: nodes of every data label (shared labels as ``_global``, others
    spread over TENANTS), random properties (some missing), random edges between visible pairs."""
    from hopweave.graph.write_rules import METAGRAPH_LABELS

    g = RandomGraph()
    # metagraph nodes can only be written through the pattern gates: not random data
    labels = [lab for lab in schema.labels if lab.name not in METAGRAPH_LABELS]
    for i in range(n_nodes):
        lab = labels[i % len(labels)] if i < len(labels) else rng.choice(labels)
        tenant = GLOBAL_TENANT if lab.shared else rng.choice(TENANTS)
        props: dict[str, Any] = {"tenant_id": tenant}
        for p in lab.properties:
            if rng.random() < 0.7:
                props[p.name] = _value_for(rng, p.type)
        if rng.random() < 0.3:  # when the fact was recorded (issue 14: known at as_of)
            props["recorded_at"] = rng.choice(DATETIMES)
        node = Node(id=f"{lab.name[:3].upper()}_{i:03d}", label=lab.name, props=props)
        g.nodes.append(node)
        g.by_label.setdefault(lab.name, []).append(node)
    seen: set[tuple[str, str, str]] = set()
    rels = list(schema.relationships)
    for _ in range(n_edges * 3):
        if len(g.edges) >= n_edges:
            break
        rel = rng.choice(rels)
        srcs = [n for lab in rel.from_labels for n in g.by_label.get(lab, [])]
        dsts = [n for lab in rel.to_labels for n in g.by_label.get(lab, [])]
        if not srcs or not dsts:
            continue
        a, b = rng.choice(srcs), rng.choice(dsts)
        ta, tb = a.props["tenant_id"], b.props["tenant_id"]
        if GLOBAL_TENANT not in (ta, tb) and ta != tb:
            continue  # a cross-tenant edge cannot be written
        if (a.id, rel.name, b.id) in seen:
            continue
        seen.add((a.id, rel.name, b.id))
        props = {p.name: _value_for(rng, p.type) for p in rel.properties}
        if rng.random() < 0.25:
            props["recorded_at"] = rng.choice(DATETIMES)
        g.edges.append(Edge(a.id, b.id, rel.name, props))
    return g


def edge_tenant(edge: Edge, tenant_of: dict[str, str]) -> str:
    ts = {tenant_of[edge.src], tenant_of[edge.dst]} - {GLOBAL_TENANT}
    return min(ts) if ts else GLOBAL_TENANT


def graph_batches(graph: RandomGraph) -> list[tuple[str, list[Node | Edge]]]:
    """``(tenant, items)`` batches: nodes by tenant (shared first), then edges by tenant."""
    tenant_of = {n.id: n.props["tenant_id"] for n in graph.nodes}
    out: list[tuple[str, list[Node | Edge]]] = []
    for tenant in (GLOBAL_TENANT, *TENANTS):
        out.append((tenant, [n for n in graph.nodes if n.props["tenant_id"] == tenant]))
    for tenant in (GLOBAL_TENANT, *TENANTS):
        out.append((tenant, [e for e in graph.edges if edge_tenant(e, tenant_of) == tenant]))
    return out


def load_networkx(store: Any, batches: Iterable[tuple[str, Iterable[Node | Edge]]]) -> None:
    """Load ``(tenant, items)`` batches into a NetworkxGraphStore with one bulk block."""
    with store.bulk(replace=True) as b:
        for tenant, items in batches:
            b.write(tenant, items)


def bindings_for(rng: random.Random, tenant: str, graph: RandomGraph) -> Bindings:
    customers = [n.id for n in graph.by_label.get("Customer", []) if n.props["tenant_id"] == tenant]
    return Bindings(
        session=Session(
            tenant_id=tenant,
            customer_id=rng.choice(customers) if customers and rng.random() < 0.9 else None,
            region=rng.choice(("US", "EU", None)),
        ),
        as_of=AS_OF,
        goal="Random",
        entities={
            k: v
            for k, v in (("Tier", rng.choice(("Platinum", "Gold"))), ("Product", "a"))
            if rng.random() < 0.7
        },
    )


def _value_ref(rng: random.Random, ptype: str, op: str) -> Any:
    r = rng.random()
    if ptype in ("date", "datetime") and r < 0.45:
        return RelativeTime(
            amount=rng.choice((-24, -3, -1, 0, 1)),
            unit=rng.choice(("days", "months", "years")),
            start_of=rng.choice((None, None, "year", "month", "day")),
        )
    if ptype == "int" and r < 0.2:
        return AsOfYear(offset=rng.choice((-2, -1, 0)))
    if r < 0.15:
        return Bind(
            ref=rng.choice(("entity.Tier", "session.region", "entity.Missing", "goal.name")),
            default=rng.choice((None, "Gold", "US")),
        )
    if op == "in":
        return Literal_(value=tuple(_any_value(rng, ptype) for _ in range(rng.randint(1, 3))))
    return Literal_(value=_any_value(rng, ptype))


def _props_of(schema: GraphSchema, labels: tuple[str, ...]) -> list[tuple[str, str]]:
    out: dict[str, str] = {}
    for lab in schema.labels:
        if lab.name in labels:
            for name, spec in lab.props.items():
                out.setdefault(name, spec.type)
    return sorted(out.items())


def _graph_walk(graph: RandomGraph, rng: random.Random, depth: int) -> list[tuple[str, str, Node]] | None:
    """A random walk over the graph's actual edges: [(rel, direction, node reached), ...]."""
    by_id = {n.id: n for n in graph.nodes}
    adj: dict[str, list[tuple[str, str, str]]] = {}
    for e in graph.edges:
        adj.setdefault(e.src, []).append((e.type, "out", e.dst))
        adj.setdefault(e.dst, []).append((e.type, "in", e.src))
    node = rng.choice([n for n in graph.nodes if n.id in adj])
    steps: list[tuple[str, str, Node]] = [("", "", node)]
    for _ in range(depth):
        options = adj.get(steps[-1][2].id)
        if not options:
            return None
        rel, d, nxt = rng.choice(options)
        steps.append((rel, "both" if rng.random() < 0.25 else d, by_id[nxt]))
    return steps


def random_pattern(schema: GraphSchema, rng: random.Random, graph: RandomGraph, idx: int) -> TraversalPattern:
    """A random pattern of depth 1..4: usually the shape of a random walk over the graph's edges
    (so it has answers before predicates), otherwise a random walk over the schema."""
    rels = list(schema.relationships)
    depth = rng.choice((1, 1, 2, 2, 2, 3, 3, 4))
    walked = _graph_walk(graph, rng, depth) if rng.random() < 0.75 else None
    steps: list[EdgeStep] = []
    if walked is not None:
        seed_label = walked[0][2].label
        positions: list[tuple[str, ...]] = [(seed_label,)]
        for rel_name, d, _node in walked[1:]:
            rel = schema.rel(rel_name)
            steps.append(EdgeStep(type=rel_name, direction=d))
            ends = {"out": rel.to_labels, "in": rel.from_labels, "both": rel.from_labels + rel.to_labels}[d]
            positions.append(tuple(sorted(set(ends))))
        target = walked[-1][2].label
    else:
        start_rel = rng.choice(rels)
        direction = rng.choice(("out", "out", "in", "both"))
        seed_label = rng.choice(start_rel.from_labels if direction != "in" else start_rel.to_labels)
        positions = [(seed_label,)]
        current = {seed_label}
        for _ in range(depth):
            options = []
            for rel in rels:
                if current & set(rel.from_labels):
                    options.append((rel, "out", rel.to_labels))
                if current & set(rel.to_labels):
                    options.append((rel, "in", rel.from_labels))
                if current & (set(rel.from_labels) | set(rel.to_labels)):
                    options.append((rel, "both", rel.from_labels + rel.to_labels))
            rel, d, ends = rng.choice(options)
            steps.append(EdgeStep(type=rel.name, direction=d))
            ends = tuple(sorted(set(ends)))
            positions.append(ends)
            current = set(ends)
        target = rng.choice(positions[-1])
    positions[-1] = (target,)
    via: list[str | None] = []
    for k in range(1, depth):
        if rng.random() < 0.3:
            choice = (
                walked[k][2].label if walked is not None and rng.random() < 0.7 else rng.choice(positions[k])
            )
            via.append(choice)
            positions[k] = (choice,)
        else:
            via.append(None)
    preds: list[Predicate] = []
    for _ in range(rng.choice((0, 1, 1, 2, 3))):
        k = rng.choice(["target", "target", *range(depth)])
        pos = depth if k == "target" else int(k)
        props = _props_of(schema, positions[pos])
        name, ptype = rng.choice(props)
        op = rng.choice(("eq", "eq", "ne", "in", "lt", "lte", "gt", "gte", "exists"))
        value = None if op == "exists" else _value_ref(rng, ptype, op)
        seen = walked[pos][2].props.get(name) if walked is not None else None
        if value is not None and seen is not None and not isinstance(seen, list) and rng.random() < 0.5:
            value = Literal_(value=(seen,) if op == "in" else seen)  # a value the walk actually has
        preds.append(Predicate(on=k, property=name, op=op, value=value))
    tprops = [n for n, _ in _props_of(schema, (target,))]
    scalar = [n for n, t in _props_of(schema, (target,)) if t != "list[str]"]
    order = tuple(
        OrderBy(property=rng.choice(scalar), direction=rng.choice(("asc", "desc")))
        for _ in range(rng.choice((0, 1, 1, 2)))
    )
    seeds = graph.by_label.get(seed_label, [])
    r = rng.random()
    if walked is not None and r < 0.5:
        seed = Seed(type=seed_label, key="id", value=Literal_(value=walked[0][2].id))
    elif r < 0.6 and seeds:
        seed = Seed(type=seed_label, key="id", value=Literal_(value=rng.choice(seeds).id))
    elif r < 0.7 and seed_label == "Customer":
        seed = Seed(type=seed_label, key="id", value=Bind(ref="session.customer_id"))
    elif r < 0.8 and len(seeds) > 1:
        seed = Seed(
            type=seed_label, key="id", value=Literal_(value=tuple(n.id for n in rng.sample(seeds, 2)))
        )
    else:  # a non-unique key: every node with that property value is a seed
        key, ktype = rng.choice(
            [(n, t) for n, t in _props_of(schema, (seed_label,)) if t in ("str", "int", "bool")]
        )
        seed = Seed(type=seed_label, key=key, value=Literal_(value=_value_for(rng, ktype)))
    returns = tuple(rng.sample(tprops, rng.randint(0, min(3, len(tprops))))) if rng.random() < 0.6 else ()
    return TraversalPattern(
        name=f"random_{idx}",
        goal="Random",
        sub_question=f"random pattern {idx}?",
        seed=seed,
        edge_sequence=tuple(steps),
        target_type=target,
        via_types=tuple(via),
        predicates=tuple(preds),
        depth=depth,
        budget_ms=10_000,
        max_visited=10_000_000,
        order_by=order,
        limit=rng.choice((1, 3, 10, 50)),
        returns=returns,
        pii_allowed=tuple(p for p in returns if rng.random() < 0.5),
        version=1,
        author="congruence",
        created_at=AS_OF,
    )


def random_filter(schema: GraphSchema, rng: random.Random, label: str, depth: int = 0) -> FilterTree:
    """A random FilterTree over ``label``'s declared properties."""
    props = _props_of(schema, (label,))
    r = rng.random()
    if depth < 2 and r < 0.3:
        kids = tuple(random_filter(schema, rng, label, depth + 1) for _ in range(rng.randint(1, 3)))
        return And(clauses=kids) if rng.random() < 0.5 else Or(clauses=kids)
    if depth < 2 and r < 0.4:
        return Not(clause=random_filter(schema, rng, label, depth + 1))
    name, ptype = rng.choice(props)
    kind = rng.choice(("eq", "eq", "in", "range"))
    if kind == "eq":
        return Eq(field=name, value=_any_value(rng, ptype))
    if kind == "in":
        return In(field=name, values=tuple(_any_value(rng, ptype) for _ in range(rng.randint(1, 3))))
    bounds = {}
    for b in rng.sample(("gt", "gte", "lt", "lte"), rng.randint(1, 2)):
        bounds[b] = _any_value(rng, ptype)
    return Range(field=name, **bounds)


def comparable(result: PatternResult) -> dict[str, Any]:
    """The parts of a PatternResult both backends must agree on (not timings or visit counts)."""
    return {
        "rows": [(r.node_id, r.label, r.properties, r.path) for r in result.rows],
        "truncated": result.truncated,
        "truncated_reason": result.truncated_reason,
        "seed_id": result.seed_id,
        "error": result.error,
    }


def run(store: GraphStore, tenant: str, pattern: TraversalPattern, bindings: Bindings) -> dict[str, Any]:
    return comparable(store.run_pattern(tenant, pattern, bindings, deadline=time.perf_counter() + 30))


@dataclass
class Tally:
    """Counts reported in the test session's summary."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n


def run_random_suite(
    schema: GraphSchema,
    make_reference: Callable[[], Any],
    server: GraphStore,
    load_server: Callable[[RandomGraph], None],
    *,
    graphs: int,
    patterns_per_graph: int,
    filters_per_graph: int,
    seed: int,
    tally: Tally,
) -> list[str]:
    """Run random patterns and filters on the reference (networkx) and the server store.
    Returns human-readable mismatch descriptions (empty = congruent)."""
    problems: list[str] = []
    for gi in range(graphs):
        rng = random.Random(seed * 1000 + gi)
        graph = random_graph(schema, rng)
        tenant_of = {n.id: n.props["tenant_id"] for n in graph.nodes}
        ref = make_reference()
        load_networkx(ref, graph_batches(graph))
        load_server(graph_batches(graph))
        tally.add("random graphs")
        for pi in range(patterns_per_graph):
            pattern = random_pattern(schema, rng, graph, pi)
            tenant = rng.choice(TENANTS)
            seed_value = getattr(pattern.seed.value, "value", None)
            owner = tenant_of.get(seed_value) if isinstance(seed_value, str) else None
            if owner in TENANTS and rng.random() < 0.85:
                tenant = owner  # mostly the seed's own tenant; sometimes another (must see nothing)
            b = bindings_for(rng, tenant, graph)
            want, got = run(ref, tenant, pattern, b), run(server, tenant, pattern, b)
            tally.add("random patterns")
            tally.add("random patterns with rows", bool(want["rows"]))
            if want != got:
                problems.append(
                    f"graph {gi} pattern {pi}: {pattern.model_dump_json()}\n  networkx: {want}\n  server:   {got}"
                )
        for fi in range(filters_per_graph):
            label = rng.choice([lab.name for lab in schema.labels])
            tree = random_filter(schema, rng, label)
            tenant = rng.choice(TENANTS)
            limit = rng.choice((None, None, 3))
            want_n = [(n.id, n.label, n.props) for n in ref.find_nodes(tenant, label, tree, limit)]
            got_n = [(n.id, n.label, n.props) for n in server.find_nodes(tenant, label, tree, limit)]
            tally.add("random filters")
            tally.add("random filters with matches", bool(want_n))
            if want_n != got_n:
                problems.append(
                    f"graph {gi} filter {fi} on {label}: {tree.model_dump_json()}\n  networkx: {want_n}\n  server:   {got_n}"
                )
        ref.close()
    return problems
