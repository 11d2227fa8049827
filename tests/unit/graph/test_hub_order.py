"""The walk's hub path (graph/walk.py ``expand_hub``, graph/_nx_state.py ``ordered_neighbors``): a
precedent hub of thousands of decided traces returns exactly the rows, order and truncation of the
full scan, at every as_of, after new traces are linked and after an ordering property changes,
while examining only a few candidates."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import pytest

from hopweave.graph.base import Edge, Node
from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.models.common import Bindings, Session
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

T = "deltabank"
HUB = 5000
BASE = datetime(2026, 1, 1)


def _pattern(order: str = "desc", limit: int = 10) -> TraversalPattern:
    return TraversalPattern(
        name="hub_precedent", goal="LateFeeDispute", sub_question="Comparable precedent on a hub?",
        seed=Seed(type="Customer", key="id", value=Bind(ref="session.customer_id")),
        edge_sequence=(EdgeStep(type="HAS_PROFILE"), EdgeStep(type="SIMILAR_TO"), EdgeStep(type="RESULTED_IN")),
        via_types=("CustomerProfile", "CustomerProfile"), target_type="DecisionTrace", depth=3,
        predicates=(Predicate(on="target", property="kind", op="eq", value=Literal_(value="precedent")),
                    Predicate(on="target", property="tier", op="eq", value=Literal_(value="Platinum")),
                    Predicate(on="target", property="timestamp", op="gte",
                              value=RelativeTime(amount=-90, unit="days")),
                    Predicate(on="target", property="timestamp", op="lte", value=RelativeTime(amount=0, unit="days"))),
        order_by=(OrderBy(property="timestamp", direction=order),), limit=limit, budget_ms=5_000,
        max_visited=1_000_000, version=1, author="test", created_at=BASE)


def _trace(i: int, rng: random.Random) -> tuple[Node, Edge]:
    at = BASE + timedelta(hours=rng.randrange(0, 24 * 200))
    props: dict[str, Any] = {"kind": rng.choice(["precedent", "precedent", "decision"]),
                             "tier": rng.choice(["Platinum", "Gold"]), "case_type": "LateFeeDispute"}
    if rng.random() < 0.9:  # some traces have no timestamp: they sort last
        props["timestamp"] = at.isoformat()
    if rng.random() < 0.3:
        props["recorded_at"] = (at + timedelta(days=rng.randrange(0, 30))).isoformat()
    eprops = {"recorded_at": props["recorded_at"]} if "recorded_at" in props and rng.random() < 0.5 else {}
    return Node(f"DT_{i:05d}", "DecisionTrace", props), Edge("PROF_HUB", f"DT_{i:05d}", "RESULTED_IN", eprops)


@pytest.fixture()
def hub(schema: GraphSchema) -> NetworkxGraphStore:
    rng = random.Random(7)
    s = NetworkxGraphStore(None, schema)
    pairs = [_trace(i, rng) for i in range(HUB)]
    s.write(T, [Node("CUST_1", "Customer", {"tier": "Platinum"}), Node("PROF_1", "CustomerProfile", {}),
                Node("PROF_HUB", "CustomerProfile", {}), *(n for n, _ in pairs)],
            [Edge("CUST_1", "PROF_1", "HAS_PROFILE"), Edge("PROF_1", "PROF_HUB", "SIMILAR_TO"), *(e for _, e in pairs)])
    return s


def _rows(store: NetworkxGraphStore, p: TraversalPattern, as_of: datetime, *, full: bool) -> tuple[Any, ...]:
    b = Bindings(session=Session(tenant_id=T, customer_id="CUST_1"), as_of=as_of)
    res = store.run_pattern(T, p, b) if not full else _full(store, p, b)
    return tuple((r.node_id, r.path) for r in res.rows), res.truncated_reason, res.visited


def _full(store: NetworkxGraphStore, p: TraversalPattern, b: Bindings) -> Any:
    st = store._st
    hook = st.ordered_neighbors
    st.ordered_neighbors = lambda *a, **k: None  # type: ignore[method-assign]
    try:
        return store.run_pattern(T, p, b)
    finally:
        st.ordered_neighbors = hook  # type: ignore[method-assign]


@pytest.mark.parametrize("order,limit", [("desc", 10), ("asc", 10), ("desc", 1), ("asc", 5000)])
def test_the_hub_path_returns_the_full_scan_rows(hub: NetworkxGraphStore, order: str, limit: int) -> None:
    p = _pattern(order, limit)
    for as_of in (BASE + timedelta(days=d) for d in (20, 95, 150, 199, 260)):
        fast = _rows(hub, p, as_of, full=False)
        ref = _rows(hub, p, as_of, full=True)
        assert fast[:2] == ref[:2], as_of
        if limit < 100:
            assert fast[2] < ref[2] / 10  # a few candidates examined, not the hub


def test_new_links_and_changed_order_keys_keep_the_index_exact(hub: NetworkxGraphStore) -> None:
    p, as_of = _pattern(), BASE + timedelta(days=199)
    assert _rows(hub, p, as_of, full=False)[:2] == _rows(hub, p, as_of, full=True)[:2]  # index built
    rng = random.Random(11)
    pairs = [_trace(HUB + i, rng) for i in range(50)]
    hub.write(T, [n for n, _ in pairs], [e for _, e in pairs])  # inserted in order
    assert _rows(hub, p, as_of, full=False)[:2] == _rows(hub, p, as_of, full=True)[:2]
    _rows(hub, p, as_of, full=False)
    newest = _rows(hub, p, as_of, full=False)[0][0][0]
    hub.write(T, [Node(newest, "DecisionTrace", {"timestamp": (BASE + timedelta(days=1)).isoformat()})])
    fast = _rows(hub, p, as_of, full=False)
    assert newest not in [r[0] for r in fast[0]]
    assert fast[:2] == _rows(hub, p, as_of, full=True)[:2]
