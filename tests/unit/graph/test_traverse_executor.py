"""run_goal_patterns: parallel, per-pattern budgets, failures isolated, results by name."""

from __future__ import annotations

import pytest
from graph_helpers import bindings, pattern, small_graph

from hopweave.errors import TenantError
from hopweave.graph.base import Edge, Node
from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.graph.traverse import run_goal_patterns, seed_entities
from hopweave.models.common import PatternResult, Row
from hopweave.models.metagraph import EdgeStep, Literal_, Seed


@pytest.fixture
def store(schema):
    s = NetworkxGraphStore(None, schema)
    small_graph(s)
    with s.bulk() as b:  # a dense island for an over-budget pattern
        b.write("t1", [Node(f"P{i:03d}", "CustomerProfile", {}) for i in range(400)])
        b.write("t1", [Edge(f"P{i:03d}", f"P{j:03d}", "SIMILAR_TO") for i in range(200) for j in range(200, 400)])
    return s


def _patterns():
    tier = pattern(name="b_tier", sub_question="What is her tier?")
    events = pattern(name="c_events", sub_question="Which events?",
                     edge_sequence=(EdgeStep(type="HOLDS"), EdgeStep(type="HAS_EVENT")), target_type="Event")
    dense = pattern(name="a_dense", sub_question="Dense walk?", budget_ms=3, max_visited=10_000_000,
                    seed=Seed(type="CustomerProfile", key="id", value=Literal_(value="P000")),
                    edge_sequence=(EdgeStep(type="SIMILAR_TO", direction="both"),) * 4,
                    target_type="CustomerProfile")
    broken = pattern(name="d_broken", sub_question="Broken?",  # an unknown rel type mid-walk: the walk raises
                     edge_sequence=(EdgeStep(type="NO_SUCH_REL"), EdgeStep(type="HAS_TIER")), target_type="Tier")
    return [events, broken, tier, dense]


def test_results_by_name_and_failures_isolated(store):
    results = run_goal_patterns(store, "t1", _patterns(), bindings(), max_workers=4)
    assert [r.pattern for r in results] == ["a_dense", "b_tier", "c_events", "d_broken"]
    dense, tier, events, broken = results
    assert dense.truncated and dense.truncated_reason == "budget_ms"
    assert [r.node_id for r in tier.rows] == ["TIER_Platinum"] and not tier.truncated and tier.error is None
    assert [r.node_id for r in events.rows] == ["E1", "E2", "E3"]
    assert broken.error and "NO_SUCH_REL" in broken.error and broken.rows == ()
    # parallel == sequential for the deterministic patterns
    seq = run_goal_patterns(store, "t1", _patterns()[::-1], bindings(), max_workers=1)
    assert [r.rows for r in seq[1:3]] == [r.rows for r in results[1:3]]


def test_empty_and_bad_tenant(store):
    assert run_goal_patterns(store, "t1", [], bindings()) == []
    with pytest.raises(TenantError):
        run_goal_patterns(store, "bad tenant!", _patterns(), bindings())


class LeakyStore(NetworkxGraphStore):
    """A deliberately broken backend that returns another tenant's node."""

    def _run_pattern(self, tenant_id, p, b, deadline):
        r = super()._run_pattern(tenant_id, p, b, deadline)
        leak = Row(node_id="C2", label="Customer", properties={"id": "C2", "tenant_id": "t2"}, path=("C2",))
        return PatternResult(**{**r.model_dump(), "rows": (leak,)})


def test_a_leaking_backend_is_refused_loudly(schema):
    s = LeakyStore(None, schema)
    small_graph(s)
    with pytest.raises(TenantError, match="tenant scoping is broken"):
        run_goal_patterns(s, "t1", _patterns()[1:3], bindings())


def test_seed_entities_from_the_seed_node(store):
    assert seed_entities(store, "t1", "Customer", "C1") == {"Tier": "Platinum"}
    assert seed_entities(store, "t2", "Customer", "C1") == {}


class _SlowFirst(NetworkxGraphStore):
    """Records the thread each pattern runs on; pattern ``a_slow`` waits 40 ms before walking."""

    threads: list[str] = []

    def _run_pattern(self, tenant_id, p, b, deadline):
        import threading
        import time

        self.threads.append(threading.current_thread().name)
        if p.name == "a_slow":
            time.sleep(0.04)
        return super()._run_pattern(tenant_id, p, b, deadline)


def test_in_process_walks_run_on_the_calling_thread_within_the_pools_wait(schema):
    """The embedded store's patterns run one after another on the caller's thread (no pool
    hand-offs), and a pattern queued behind a slow one still stops when the pool would have
    stopped waiting for it (budget x (1 + patterns // workers) from the start), flagged."""
    import threading

    s = _SlowFirst(None, schema)
    small_graph(s)
    slow = pattern(name="a_slow", sub_question="Slow?", budget_ms=10)
    tier = pattern(name="b_tier", sub_question="What is her tier?", budget_ms=10)
    a, b = run_goal_patterns(s, "t1", [tier, slow], bindings(), max_workers=2)
    assert s.threads == [threading.current_thread().name] * 2
    assert a.truncated_reason == "budget_ms"  # slept past its own deadline
    assert b.truncated and b.truncated_reason == "budget_ms" and b.rows == ()  # 40 ms > 10 x 2 ms
    fast = run_goal_patterns(s, "t1", [tier], bindings(), max_workers=2)[0]
    assert [r.node_id for r in fast.rows] == ["TIER_Platinum"] and not fast.truncated


def test_a_proxied_store_runs_its_patterns_on_the_pool(store):
    """Only a store class that declares in-process walks runs inline; a wrapper (which may
    block) keeps the pool, so each pattern stays abandonable."""
    import threading

    seen: list[str] = []

    class Proxy:
        def __init__(self, inner):
            self.inner = inner

        def run_pattern(self, *a, **k):
            seen.append(threading.current_thread().name)
            return self.inner.run_pattern(*a, **k)

    results = run_goal_patterns(Proxy(store), "t1", _patterns()[0::2], bindings(), max_workers=2)
    assert [r.pattern for r in results] == ["b_tier", "c_events"]
    assert seen and all(n.startswith("hopweave-traverse") for n in seen)
