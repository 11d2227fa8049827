"""The read cache (understand/read_cache.py): values read from the graph are served again only
while what they read is unchanged. Each check compares the cached answer with the same read made
with caching off, on a real networkx store of the DeltaBank generator, across writes (related and
unrelated), other customers, another tenant and another as_of."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterator

import pytest
from domains import DELTABANK, deltabank_schema
from generator.build import metagraph_items
from generator.generate import generate

from hopweave.graph.base import Edge, Node
from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.graph.traverse import run_goal_patterns
from hopweave.models.common import Bindings, Session
from hopweave.models.schema import GLOBAL_TENANT
from hopweave.understand.read_cache import ReadCache, cache_of, cached, goal_patterns, pattern_reads
from hopweave.understand.scope import read_record, record_reads

AS_OF = datetime(2026, 5, 12, 12, 0)


def _metagraph(store: NetworkxGraphStore) -> None:
    store.bulk_write(GLOBAL_TENANT, metagraph_items())  # goals, patterns and the FilterMapping node

MARIA = Session(tenant_id="deltabank", customer_id="CUST_4421", region="US", channel="phone")
OTHER = Session(tenant_id="deltabank", customer_id="CUST_100001", region="US", channel="phone")
NORTH = Session(tenant_id="northbank", customer_id="NB_CUST_4421", region="US", channel="phone")


@pytest.fixture(scope="module")
def store() -> Iterator[NetworkxGraphStore]:
    """A writable store of its own (the tests write to it)."""
    s = NetworkxGraphStore(None, deltabank_schema())
    with s.bulk() as b:
        for tenant, items in generate(nodes=1500, seed=4421):
            b.write(tenant, items)
    _metagraph(s)
    yield s
    s.close()


_GOALS: dict[int, tuple[Any, str, list[Any]]] = {}


def _goal(store: NetworkxGraphStore) -> tuple[str, list[Any]]:
    """The goal with the most patterns and its patterns, with budgets no loaded machine reaches
    (a walk cut by time is not deterministic); the same objects on every call."""
    got = _GOALS.get(id(store))
    if got is None or got[0] is not store:
        goal = max({p.goal for p in store.patterns()}, key=lambda g: (len(store.patterns(g)), g))
        got = _GOALS[id(store)] = (store, goal, [p.model_copy(update={"budget_ms": 60_000})
                                                 for p in store.patterns(goal)])
    return got[1], got[2]


def _bindings(session: Session, as_of: datetime = AS_OF, goal: str | None = None) -> Bindings:
    return Bindings(session=session, as_of=as_of, goal=goal, entities={})


def _rows(results: list[Any]) -> list[Any]:
    return [r.model_dump(exclude={"elapsed_ms"}) for r in results]


def _uncached(store: NetworkxGraphStore, session: Session, as_of: datetime = AS_OF) -> list[Any]:
    goal, pats = _goal(store)
    return _rows(run_goal_patterns(store, session.tenant_id, pats, _bindings(session, as_of, goal)))


def _cached(store: NetworkxGraphStore, session: Session, as_of: datetime = AS_OF) -> list[Any]:
    goal, pats = _goal(store)
    return _rows(goal_patterns(store, session.tenant_id, pats, _bindings(session, as_of, goal)))


def test_the_lru_is_bounded_and_a_changed_token_is_a_miss() -> None:
    c = ReadCache(capacity=2)
    for k in ("a", "b", "c"):
        c.put(k, 1, k.upper())
    assert len(c) == 2 and c.get("a", 1) is None and c.get("c", 1) == "C"
    assert c.get("b", 2) is None and c.get("b", 1) is None  # read under another token: dropped


def test_the_second_turn_is_served_from_the_cache_and_equals_a_fresh_walk(store: NetworkxGraphStore) -> None:
    cache = cache_of(store)
    first = _cached(store, MARIA)
    hits = cache.hits
    assert _cached(store, MARIA) == first == _uncached(store, MARIA)
    assert cache.hits - hits == len(_goal(store)[1])  # every pattern of the second turn was a hit


def test_a_write_between_two_turns_is_seen_by_the_second(store: NetworkxGraphStore) -> None:
    before = _cached(store, MARIA)
    acct = next(r.node_id for f in run_goal_patterns(store, "deltabank", _goal(store)[1],
                                                     _bindings(MARIA, goal=_goal(store)[0]))
                for r in f.rows if r.label == "Account")
    store.write("deltabank", [Node("EVT_CACHE_1", "Event", {
        "type": "LateFeeCharged", "amount": 11.0, "timestamp": "2026-05-01T10:00:00", "status": "posted",
        "summary": "LateFeeCharged $11 on 2026-05-01"})], [Edge(acct, "EVT_CACHE_1", "HAS_EVENT")])
    after = _cached(store, MARIA)
    assert after == _uncached(store, MARIA) and after != before
    assert any(r["node_id"] == "EVT_CACHE_1" for f in after for r in f["rows"])


def test_a_write_a_walk_cannot_read_keeps_its_entry(store: NetworkxGraphStore) -> None:
    goal, pats = _goal(store)
    reads = {p.name: pattern_reads(p, store.schema) for p in pats}
    events = [p for p in pats if "n:Event" in reads[p.name]]
    assert events and all(p.seed.type != "Event" for p in pats)
    tokens = {p.name: store.change_token(reads[p.name]) for p in pats}
    # a new node no edge reaches (as a recorded trace is to a walk along other edges): no walk changes
    store.write("deltabank", [Node("EVT_CACHE_2", "Event", {"type": "Payment", "amount": 5.0,
                                                           "timestamp": "2026-05-02T10:00:00", "status": "posted"})],
                [])
    assert all(store.change_token(reads[p.name]) == tokens[p.name] for p in pats)
    hits = cache_of(store).hits
    assert _cached(store, MARIA) == _uncached(store, MARIA)
    assert cache_of(store).hits - hits == len(pats)
    # a changed Event: the walks that can reach an Event read again, the others keep their entries
    store.write("deltabank", [Node("EVT_CACHE_1", "Event", {"amount": 12.0})], [])
    changed = {p.name for p in pats if store.change_token(reads[p.name]) != tokens[p.name]}
    assert changed == {p.name for p in events}
    assert _cached(store, MARIA) == _uncached(store, MARIA)


def test_other_customers_tenants_and_instants_never_get_an_entry_of_another(store: NetworkxGraphStore) -> None:
    mine = _cached(store, MARIA)
    for session, as_of in ((OTHER, AS_OF), (NORTH, AS_OF), (MARIA, datetime(2025, 1, 15, 9, 30))):
        got = _cached(store, session, as_of)
        assert got == _uncached(store, session, as_of) and got != mine
        assert _cached(store, session, as_of) == got  # and its own second turn
    north = _cached(store, NORTH)
    assert all(r["properties"].get("tenant_id") in ("northbank", "_global") for f in north for r in f["rows"])


def test_the_subject_record_follows_writes(store: NetworkxGraphStore) -> None:
    def fresh() -> Any:
        return read_record(store, DELTABANK, MARIA, None)  # without as_of: never cached

    first = read_record(store, DELTABANK, MARIA, AS_OF)
    assert read_record(store, DELTABANK, MARIA, AS_OF) is first  # the second read is the kept one
    assert first.values == fresh().values
    tier = store.get_node("deltabank", "CUST_4421")
    assert tier is not None and "n:Customer" in record_reads(DELTABANK, store.schema)
    store.write("deltabank", [Node("CUST_4421", "Customer", {"tier": "Gold"})], [])
    again = read_record(store, DELTABANK, MARIA, AS_OF)
    assert again is not first and again.values == fresh().values
    store.write("deltabank", [Node("CUST_4421", "Customer", {"tier": tier.props["tier"]})], [])
    assert read_record(store, DELTABANK, OTHER, AS_OF).subject_id == "CUST_100001"


def test_a_store_without_a_token_is_never_cached(store: NetworkxGraphStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "change_token", lambda reads=None: None)
    calls: list[int] = []
    for _ in range(2):
        cached(store, ("x",), lambda: calls.append(1) or len(calls))
    assert len(calls) == 2


def test_another_process_write_is_seen_after_the_catch_up(tmp_path: Any) -> None:
    """Two store objects on one directory (as ``serve`` workers share it): what one writes, the
    other's cached walks and record see once it has caught up, exactly as its uncached reads do."""
    d = tmp_path / "graph"
    a = NetworkxGraphStore(d, deltabank_schema())
    with a.bulk() as b:
        for tenant, items in generate(nodes=1500, seed=4421):
            b.write(tenant, items)
    _metagraph(a)
    other = NetworkxGraphStore(d, deltabank_schema())
    try:
        first, rec = _cached(a, MARIA), read_record(a, DELTABANK, MARIA, AS_OF)
        other.write("deltabank", [Node("CUST_4421", "Customer", {"tier": "Gold"})], [])
        assert _cached(a, MARIA) == first and read_record(a, DELTABANK, MARIA, AS_OF) is rec  # not caught up yet
        a.refresh()
        assert _cached(a, MARIA) == _uncached(a, MARIA)
        again = read_record(a, DELTABANK, MARIA, AS_OF)
        assert again is not rec and again.values == read_record(a, DELTABANK, MARIA, None).values
    finally:
        other.close()
        a.close()
