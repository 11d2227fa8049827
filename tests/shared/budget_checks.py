"""Budget checks shared by the FalkorDB suite (tests/falkordb/test_budgets.py) and the Neo4j
suite (tests/integration/test_neo4j.py): a hub graph, patterns over it, and the comparison of a
Cypher store with the networkx walker around ``max_visited``.

Both count visits by the walker's rule (hopweave.graph.walk: seed candidates, every distinct
neighbour of every expanded node, a qualifying target once), so within the budget they return
the same rows and ``visited``, and past it both report ``truncated_reason="max_visited"`` with
``visited = max_visited + 1``. The one difference is a capability row
(``max_visited_rows_on_cut``): the walker keeps the rows its depth-first walk found before the
cut, the compiled query keeps none (it stops between hops).
"""

from __future__ import annotations

import random
import time
from typing import Any

from congruence import (
    TENANTS,
    bindings_for,
    comparable,
    graph_batches,
    load_networkx,
    random_graph,
    random_pattern,
)

from hopweave.graph.base import Edge, GraphStore, Node
from hopweave.models.common import Bindings, Session, to_datetime
from hopweave.models.metagraph import EdgeStep, Literal_, OrderBy, Predicate, Seed, TraversalPattern

TENANT = "t1"
ACCOUNTS = 2_000  # the congruence hub: one customer, 2,000 accounts, events shared by two accounts
AS_OF = "2026-05-12T23:59:59"


def far() -> float:
    return time.perf_counter() + 60.0


def hub_pattern(name: str, steps: tuple[EdgeStep, ...], target: str, **kw: Any) -> TraversalPattern:
    base: dict[str, Any] = dict(
        name=name, goal="Hub", sub_question=f"{name}?", seed=Seed(type="Customer", value=Literal_(value="C_HUB")),
        edge_sequence=steps, target_type=target, depth=len(steps), version=1, author="test",
        created_at="2026-01-01T00:00:00", limit=25, budget_ms=10_000, max_visited=10_000_000,
        order_by=(OrderBy(property="id", direction="asc"),),
    )
    base.update(kw)
    return TraversalPattern(**base)


def hub_items(seed: str, accounts: int, events: bool) -> list[tuple[str, list[Node | Edge]]]:
    """A customer ``seed`` holding ``accounts`` accounts; with ``events``, one event per account
    linked from it and from the next account (every event has two accounts)."""
    nodes: list[Node | Edge] = [Node(seed, "Customer", {"tier": "Gold"})]
    edges: list[Node | Edge] = []
    for i in range(accounts):
        aid = f"{seed}_A{i:06d}"
        nodes.append(Node(aid, "Account", {"status": "open" if i % 3 else "closed"}))
        edges.append(Edge(seed, aid, "HOLDS"))
    if events:
        for i in range(accounts):
            eid = f"{seed}_E{i:06d}"
            nodes.append(Node(eid, "Event", {"type": "Transaction" if i % 2 else "Fee", "amount": float(i)}))
            edges.append(Edge(f"{seed}_A{i:06d}", eid, "HAS_EVENT"))
            edges.append(Edge(f"{seed}_A{(i + 1) % accounts:06d}", eid, "HAS_EVENT"))
    return [(TENANT, nodes), (TENANT, edges)]


HUB_PATTERNS = (
    hub_pattern("accounts", (EdgeStep(type="HOLDS"),), "Account"),
    hub_pattern(
        "open_accounts", (EdgeStep(type="HOLDS"),), "Account",
        predicates=(Predicate(on="target", property="status", value=Literal_(value="open")),),
    ),
    # every account leads back to the hub: a qualifying target reached 2,000 times counts once
    hub_pattern("back_to_hub", (EdgeStep(type="HOLDS"), EdgeStep(type="HOLDS", direction="in")), "Customer"),
    # events shared by two accounts; half of them qualify (repeats of non-qualifying ones count)
    hub_pattern(
        "transactions", (EdgeStep(type="HOLDS"), EdgeStep(type="HAS_EVENT")), "Event",
        predicates=(Predicate(on="target", property="type", value=Literal_(value="Transaction")),),
    ),
    hub_pattern(
        "events_of_open_accounts", (EdgeStep(type="HOLDS"), EdgeStep(type="HAS_EVENT")), "Event",
        predicates=(Predicate(on=1, property="status", value=Literal_(value="open")),),
        order_by=(OrderBy(property="amount", direction="desc"),),
    ),
)

#: The full visit counts of four hub patterns, by the walker's rule (1 seed candidate).
HUB_VISITS = {
    "accounts": 1 + ACCOUNTS,
    "open_accounts": 1 + ACCOUNTS,
    "back_to_hub": 1 + ACCOUNTS + 1,  # the hub counts once as a target
    # 2,000 accounts x 2 events each; each qualifying (Transaction) event counts once, each Fee
    # event twice (it is no target, so both of its accounts examine it)
    "transactions": 1 + ACCOUNTS + ACCOUNTS // 2 + 2 * (ACCOUNTS // 2),
}


def load_hub(schema: Any, server: GraphStore) -> Any:
    """The congruence hub in a fresh networkx store (returned) and in ``server`` (replaced)."""
    from hopweave.graph.networkx_store import NetworkxGraphStore

    batches = hub_items("C_HUB", ACCOUNTS, events=True)
    ref = NetworkxGraphStore(None, schema)
    load_networkx(ref, batches)
    server.bulk_load(batches, replace=True)  # type: ignore[attr-defined]
    return ref


def hub_bindings() -> Bindings:
    return Bindings(session=Session(tenant_id=TENANT), as_of=to_datetime(AS_OF), goal="Hub")


def _budgets(full: int) -> list[int]:
    """max_visited values around the interesting points of a walk whose full count is ``full``."""
    return sorted({1, 2, full // 3, full // 2, full - 1, full, full + 1, 10_000_000} - {0})


def agree(ref: GraphStore, server: GraphStore, tenant: str, pattern: TraversalPattern, b: Bindings) -> str | None:
    """None when the server agrees with the walker on ``pattern`` (see the module docstring),
    else a description of the difference."""
    want = ref.run_pattern(tenant, pattern, b, deadline=far())
    got = server.run_pattern(tenant, pattern, b, deadline=far())
    caps = server.caps  # type: ignore[attr-defined]
    same = (want.truncated, want.truncated_reason, want.visited) == (got.truncated, got.truncated_reason, got.visited)
    if got.truncated_reason == "max_visited":
        same = same and got.rows == () and caps.max_visited_rows_on_cut == "none"
    else:
        same = same and comparable(want) == comparable(got)
    if same:
        return None
    return (f"{pattern.name} max_visited={pattern.max_visited}: {pattern.model_dump_json()}\n"
            f"  networkx {comparable(want)} visited={want.visited}\n"
            f"  server   {comparable(got)} visited={got.visited}")


def check_hub(ref: GraphStore, server: GraphStore) -> tuple[int, int]:
    """Every hub pattern at max_visited values around its full count; returns (cut runs, full
    runs); raises AssertionError listing the mismatches."""
    b = hub_bindings()
    problems, cuts, full_runs = [], 0, 0
    for p in HUB_PATTERNS:
        full = ref.run_pattern(TENANT, p, b, deadline=far())
        assert not full.truncated or full.truncated_reason == "limit", full
        assert full.visited > ACCOUNTS  # the hub was really expanded
        if p.name in HUB_VISITS:
            assert full.visited == HUB_VISITS[p.name], (p.name, full.visited)
        for mv in _budgets(full.visited):
            cuts += mv < full.visited
            full_runs += mv >= full.visited
            problem = agree(ref, server, TENANT, p.model_copy(update={"max_visited": mv}), b)
            if problem:
                problems.append(problem)
    assert not problems, "\n".join(problems)
    return cuts, full_runs


def check_random_cuts(schema: Any, server: GraphStore, *, graphs: int, patterns: int, seed: int = 7) -> int:
    """Random patterns on random graphs with max_visited at 1, half, the full count - 1 and the
    full count; returns the runs; raises AssertionError listing the mismatches."""
    from hopweave.graph.networkx_store import NetworkxGraphStore

    problems, runs = [], 0
    for gi in range(graphs):
        rng = random.Random(seed * 1000 + gi)
        graph = random_graph(schema, rng)
        ref = NetworkxGraphStore(None, schema)
        load_networkx(ref, graph_batches(graph))
        server.bulk_load(graph_batches(graph), replace=True)  # type: ignore[attr-defined]
        for pi in range(patterns):
            p = random_pattern(schema, rng, graph, pi)
            tenant = rng.choice(TENANTS)
            b = bindings_for(rng, tenant, graph)
            full = ref.run_pattern(tenant, p, b, deadline=far()).visited
            for mv in sorted({1, max(1, full // 2), max(1, full - 1), max(1, full)}):
                runs += 1
                problem = agree(ref, server, tenant, p.model_copy(update={"max_visited": mv}), b)
                if problem:
                    problems.append(f"graph {gi} pattern {pi}: {problem}")
        ref.close()
    assert not problems, f"{len(problems)} mismatches; first ones:\n" + "\n".join(problems[:3])
    return runs
