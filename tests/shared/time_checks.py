"""Time on the graph (issue 14), checked the same way on every store.

``known_slice`` is the graph as it was known at an as_of, computed here from the plain definition
(docs/engine.md, "Time"), independently of ``hopweave.graph.predicates``: a node is kept when it
was recorded at or before as_of (``recorded_at``, else its label's event time, else timeless) and
is in force then (``valid_from <= as_of < valid_until``); an edge when both ends are kept and its
``recorded_at`` (if any) is at or before as_of. A pattern run at as_of on the whole graph must
return exactly the rows it returns on that slice: a fact recorded after as_of never appears, and
nothing known at as_of is lost.

``TABLE`` is the same property as a table of named cases on a small hand-made graph.
"""

from __future__ import annotations

import random
import time
from datetime import datetime
from typing import Any, Callable, Iterable

from congruence import (
    TENANTS,
    RandomGraph,
    bindings_for,
    graph_batches,
    random_graph,
    random_pattern,
)

from hopweave.graph.base import Edge, GraphStore, Node
from hopweave.models.common import Bindings, Session, to_datetime
from hopweave.models.metagraph import Bind, EdgeStep, Literal_, Seed, TraversalPattern
from hopweave.models.schema import GraphSchema

#: as_of values around the random graphs' dates (congruence.DATES / DATETIMES)
AS_OFS = (datetime(2024, 5, 12, 23, 59, 59), datetime(2025, 12, 31, 10, 0, 0), datetime(2026, 5, 12, 23, 59, 59))


def _at(as_of: datetime, ptype: str) -> str:
    return as_of.date().isoformat() if ptype == "date" else as_of.strftime("%Y-%m-%dT%H:%M:%S")


def node_known(schema: GraphSchema, node: Node, as_of: datetime) -> bool:
    """The plain definition: recorded (recorded_at, else event time) at or before as_of, and in force."""
    lab = schema.label(node.label)
    t, props = lab.time, node.props
    rec = props.get("recorded_at")
    if isinstance(rec, str):
        if not rec <= _at(as_of, "datetime"):
            return False
    elif rec is None and t is not None and t.event is not None and props.get(t.event) is not None:
        ev = props[t.event]
        if not (isinstance(ev, str) and ev <= _at(as_of, lab.props[t.event].type)):
            return False
    elif rec is not None:
        return False  # a recorded_at that is not a string compares with nothing
    if t is not None and t.valid_from is not None and props.get(t.valid_from) is not None:
        vf = props[t.valid_from]
        if not (isinstance(vf, str) and vf <= _at(as_of, lab.props[t.valid_from].type)):
            return False
    if t is not None and t.valid_until is not None and props.get(t.valid_until) is not None:
        vu = props[t.valid_until]
        if not (isinstance(vu, str) and vu > _at(as_of, lab.props[t.valid_until].type)):
            return False
    return True


def edge_known(edge: Edge, as_of: datetime) -> bool:
    rec = edge.props.get("recorded_at") if edge.props else None
    return rec is None or (isinstance(rec, str) and rec <= _at(as_of, "datetime"))


def known_slice(schema: GraphSchema, graph: RandomGraph, as_of: datetime) -> RandomGraph:
    out = RandomGraph()
    for n in graph.nodes:
        if node_known(schema, n, as_of):
            out.nodes.append(n)
            out.by_label.setdefault(n.label, []).append(n)
    kept = {n.id for n in out.nodes}
    out.edges = [e for e in graph.edges if e.src in kept and e.dst in kept and edge_known(e, as_of)]
    return out


def _rows(store: GraphStore, tenant: str, pattern: TraversalPattern, b: Bindings) -> tuple[Any, ...] | None:
    r = store.run_pattern(tenant, pattern, b, deadline=time.perf_counter() + 30)
    if r.error or r.truncated_reason in ("max_visited", "budget_ms"):
        return None  # visit counts differ between the graph and its slice: not comparable
    return tuple((row.node_id, row.path) for row in r.rows), r.truncated


def check_time_slices(
    schema: GraphSchema,
    store: GraphStore,
    load: Callable[[list[tuple[str, list[Node | Edge]]]], None],
    *,
    graphs: int,
    patterns_per_graph: int,
    seed: int,
    counts: dict[str, int],
) -> list[str]:
    """Random patterns at each of :data:`AS_OFS` on random graphs (with random ``recorded_at`` on
    nodes and edges): rows on the whole graph == rows on :func:`known_slice`, and no row or path
    node is unknown at as_of. ``load(batches)`` replaces the store's content. Returns problems."""
    problems: list[str] = []
    for gi in range(graphs):
        rng = random.Random(seed * 7919 + gi)
        graph = random_graph(schema, rng)
        by_id = {n.id: n for n in graph.nodes}
        cases = []
        for pi in range(patterns_per_graph):
            pattern = random_pattern(schema, rng, graph, pi)
            tenant = rng.choice(TENANTS)
            seed_value = getattr(pattern.seed.value, "value", None)
            owner = by_id[seed_value].props["tenant_id"] if isinstance(seed_value, str) and seed_value in by_id else None
            if owner in TENANTS:
                tenant = owner
            base = bindings_for(rng, tenant, graph)
            for as_of in AS_OFS:
                cases.append((pi, pattern, tenant, base.model_copy(update={"as_of": as_of})))
        load(graph_batches(graph))
        whole = [_rows(store, t, p, b) for _pi, p, t, b in cases]
        for as_of in AS_OFS:
            sliced = known_slice(schema, graph, as_of)
            load(graph_batches(sliced))
            for (pi, p, t, b), want in zip(cases, whole):
                if b.as_of != as_of or want is None:
                    continue
                got = _rows(store, t, p, b)
                if got is None:
                    continue
                counts["time-slice comparisons"] = counts.get("time-slice comparisons", 0) + 1
                counts["time-slice comparisons with rows"] = counts.get("time-slice comparisons with rows", 0) + bool(
                    want[0])
                unknown = sorted({nid for _row, path in want[0] for nid in path
                                  if not node_known(schema, by_id[nid], as_of)})
                if unknown:
                    problems.append(f"graph {gi} pattern {pi} at {as_of}: rows walk through {unknown}, "
                                    f"recorded after as_of or not in force")
                if want != got:
                    problems.append(f"graph {gi} pattern {pi} at {as_of}: {p.model_dump_json()}\n"
                                    f"  whole graph: {want}\n  known slice: {got}")
    return problems


# ---- a table of named cases ---------------------------------------------------------------------
TENANT = "t1"


def _n(nid: str, label: str, **props: Any) -> Node:
    return Node(id=nid, label=label, props={"tenant_id": TENANT, **props})


#: A customer, an account, events and a case state with rule revisions. Everything "LATE" is
#: recorded (or happened, or takes effect) after 2026-05-12.
TABLE_GRAPH: list[Node | Edge] = [
    _n("C1", "Customer", tier="Gold"),
    _n("A1", "Account", opened="2020-01-01"),
    _n("A_LATE", "Account", opened="2026-06-01"),
    _n("E_OLD", "Event", type="Fee", timestamp="2026-05-01T10:00:00"),
    _n("E_SAME_DAY", "Event", type="Fee", timestamp="2026-05-12T18:00:00"),
    _n("E_LATE", "Event", type="Fee", timestamp="2026-05-13T00:00:00"),
    _n("E_BACKDATED", "Event", type="Fee", timestamp="2026-05-02T10:00:00", recorded_at="2026-05-20T09:00:00"),
    _n("E_RECORDED_EARLY", "Event", type="Fee", timestamp="2026-05-30T10:00:00", recorded_at="2026-05-01T09:00:00"),
    _n("E_NO_TIME", "Event", type="Fee"),
    _n("E_VIA_LATE_EDGE", "Event", type="Fee", timestamp="2026-04-01T10:00:00"),
    _n("S1", "CaseState", name="Open"),
    _n("R_V1", "Rule", name="r", valid_from="2024-01-01", valid_until="2026-01-01"),
    _n("R_V2", "Rule", name="r", valid_from="2026-01-01", valid_until="2026-09-01"),
    _n("R_V3", "Rule", name="r", valid_from="2026-09-01"),
    _n("R_ALWAYS", "Rule", name="always"),
    _n("R_CLOSED_ON_AS_OF", "Rule", name="closed", valid_until="2026-05-12"),
    _n("C_LATE", "Customer", tier="Gold", recorded_at="2026-05-13T08:00:00"),
    Edge("C1", "A1", "HOLDS"),
    Edge("C1", "A_LATE", "HOLDS"),
    *(Edge("A1", e, "HAS_EVENT") for e in ("E_OLD", "E_SAME_DAY", "E_LATE", "E_BACKDATED",
                                           "E_RECORDED_EARLY", "E_NO_TIME")),
    Edge("A1", "E_VIA_LATE_EDGE", "HAS_EVENT", {"recorded_at": "2026-06-01T00:00:00"}),
    *(Edge("S1", r, "MATCHES") for r in ("R_V1", "R_V2", "R_V3", "R_ALWAYS", "R_CLOSED_ON_AS_OF")),
    Edge("C_LATE", "A1", "HOLDS"),
]


def _pattern(name: str, seed: Seed, edges: tuple[EdgeStep, ...], target: str, via: tuple[str | None, ...] = ()
             ) -> TraversalPattern:
    return TraversalPattern(name=name, goal="G", sub_question="which facts are known?", seed=seed,
                            edge_sequence=edges, target_type=target, via_types=via, depth=len(edges), version=1,
                            author="test", created_at=datetime(2026, 1, 1), limit=100)


EVENTS = _pattern("events", Seed(type="Customer", value=Bind(ref="session.customer_id")),
                  (EdgeStep(type="HOLDS"), EdgeStep(type="HAS_EVENT")), "Event", ("Account",))
ACCOUNTS = _pattern("accounts", Seed(type="Customer", value=Bind(ref="session.customer_id")),
                    (EdgeStep(type="HOLDS"),), "Account")
RULES = _pattern("rules", Seed(type="CaseState", key="name", value=Literal_(value="Open")),
                 (EdgeStep(type="MATCHES"),), "Rule")
HOLDERS = _pattern("holders", Seed(type="Account", value=Literal_(value="A1")),
                   (EdgeStep(type="HOLDS", direction="in"),), "Customer")

#: (case, pattern, as_of, the row ids expected)
TABLE: list[tuple[str, TraversalPattern, str, list[str]]] = [
    ("events known on 2026-05-12 (the as_of day counts; back-dated and late ones do not)", EVENTS, "2026-05-12",
     ["E_NO_TIME", "E_OLD", "E_RECORDED_EARLY", "E_SAME_DAY"]),
    ("the back-dated fee appears once recorded", EVENTS, "2026-05-20",
     ["E_BACKDATED", "E_NO_TIME", "E_OLD", "E_RECORDED_EARLY", "E_SAME_DAY", "E_LATE"]),
    ("an edge recorded after as_of is not walked", EVENTS, "2026-05-31",
     ["E_BACKDATED", "E_NO_TIME", "E_OLD", "E_RECORDED_EARLY", "E_SAME_DAY", "E_LATE"]),
    ("...and is walked once recorded", EVENTS, "2026-06-01",
     ["E_BACKDATED", "E_NO_TIME", "E_OLD", "E_RECORDED_EARLY", "E_SAME_DAY", "E_LATE", "E_VIA_LATE_EDGE"]),
    ("before anything happened: only the timeless event", EVENTS, "2026-04-30", ["E_NO_TIME"]),
    ("an account opened after as_of", ACCOUNTS, "2026-05-12", ["A1"]),
    ("the account once opened", ACCOUNTS, "2026-06-01", ["A1", "A_LATE"]),
    ("a customer recorded after as_of", HOLDERS, "2026-05-12", ["C1"]),
    ("the customer once recorded", HOLDERS, "2026-05-13T08:00:00", ["C1", "C_LATE"]),
    ("rules in force before the first revision", RULES, "2023-06-30", ["R_ALWAYS", "R_CLOSED_ON_AS_OF"]),
    ("rule revision v1", RULES, "2025-12-31", ["R_ALWAYS", "R_CLOSED_ON_AS_OF", "R_V1"]),
    ("rule revision v2 from its first day", RULES, "2026-01-01", ["R_ALWAYS", "R_CLOSED_ON_AS_OF", "R_V2"]),
    ("valid_until is exclusive", RULES, "2026-05-12", ["R_ALWAYS", "R_V2"]),
    ("rule revision v3", RULES, "2026-09-01", ["R_ALWAYS", "R_V3"]),
]


def table_bindings(as_of: str) -> Bindings:
    when = to_datetime(as_of)
    assert when is not None
    return Bindings(session=Session(tenant_id=TENANT, customer_id="C1"), as_of=when, goal="G", entities={})


def check_table(store: GraphStore) -> list[str]:
    """Run :data:`TABLE` on ``store`` (loaded with :data:`TABLE_GRAPH`). Returns problems."""
    problems = []
    for case, pattern, as_of, want in TABLE:
        r = store.run_pattern(TENANT, pattern, table_bindings(as_of), deadline=time.perf_counter() + 30)
        got = [row.node_id for row in r.rows]
        if sorted(got) != sorted(want) or r.error:
            problems.append(f"{case} ({pattern.name} at {as_of}): got {sorted(got)}, want {sorted(want)} {r.error or ''}")
    return problems


def table_batches() -> Iterable[tuple[str, list[Node | Edge]]]:
    return [(TENANT, [x for x in TABLE_GRAPH if isinstance(x, Node)]),
            (TENANT, [x for x in TABLE_GRAPH if isinstance(x, Edge)])]


def check_timeless(store: GraphStore) -> list[str]:
    """The store's inspection views (``Bindings.timeless``) see every node and edge of
    :data:`TABLE_GRAPH` whatever its dates. Returns problems."""
    problems = []
    for pattern, want in ((EVENTS, [n.id for n in TABLE_GRAPH if isinstance(n, Node) and n.label == "Event"]),
                          (RULES, [n.id for n in TABLE_GRAPH if isinstance(n, Node) and n.label == "Rule"])):
        b = table_bindings("2000-01-01").model_copy(update={"timeless": True})
        got = sorted(r.node_id for r in store.run_pattern(TENANT, pattern, b, deadline=time.perf_counter() + 30).rows)
        if got != sorted(want):
            problems.append(f"timeless {pattern.name}: got {got}, want {sorted(want)}")
    return problems
