"""Throughput (issue 13): one query embedding per request, understanding without store round
trips, deadlines that hold on every path."""

from __future__ import annotations

from typing import Any

import pytest
from domains import (  # tests/shared (on sys.path via this folder's conftest)
    AS_OF,
    DELTABANK,
    DELTABANK_REGISTRY,
    MARIA,
)

from hopweave.engine.engine import Engine
from hopweave.engine.query_vectors import SharedEmbedder


class _Counting:
    """Counts the texts the base encoder really runs on (the LRU and the memo are in front)."""

    def __init__(self, embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.texts: list[str] = []
        self.calls: list[list[str]] = []  # one list per encoder pass
        base = embedder.base
        real = base.embed_uncached

        def counted(texts, batch_size=64):  # type: ignore[no-untyped-def]
            self.texts.extend(texts)
            self.calls.append(list(texts))
            return real(texts, batch_size)

        monkeypatch.setattr(base, "embed_uncached", counted)


def test_one_forward_pass_per_request(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(engine.embedder, SharedEmbedder)
    # warm: the goal question's vector (per goal and tier) and the precedent traces' vectors
    engine.retrieve("Please waive the late fee on my Platinum card", session=MARIA, as_of=AS_OF, record=False)
    counting = _Counting(engine.embedder, monkeypatch)
    utterance = "I was charged a late fee of $39 this month that I would like reversed"  # one clause
    r = engine.retrieve(utterance, session=MARIA, as_of=AS_OF, record=False)
    assert r.goal == "LateFeeDispute" and r.chunks and r.precedent
    assert not [d for d in r.degraded if d.stage in ("understand", "search", "precedent")]
    assert counting.texts == [utterance]  # classifier, dense channel and precedent share it
    # an utterance of several candidate clauses: the split reads them all in the same one pass
    # (the whole first), and understanding, search and precedent encode nothing more
    counting.calls.clear()
    two = "I was charged a late fee of $39 this month and I would like it reversed"
    r = engine.retrieve(two, session=MARIA, as_of=AS_OF, record=False)
    assert r.goal == "LateFeeDispute" and r.parts == () and r.unhandled == ()
    assert len(counting.calls) == 1 and counting.calls[0][0] == two, counting.calls


def test_shared_vectors_keep_results_byte_identical(engine: Engine) -> None:
    utterance = "Can you take off the late charge, I always pay on time"
    a = engine.retrieve(utterance, session=MARIA, as_of=AS_OF, record=False)
    b = engine.retrieve(utterance, session=MARIA, as_of=AS_OF, record=False)
    assert a.context.text == b.context.text and a.trace_id == b.trace_id
    assert [c.chunk_id for c in a.chunks] == [c.chunk_id for c in b.chunks]


def _count_reads(graph: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name in ("get_node", "find_nodes", "run_pattern"):
        real = getattr(graph, name)

        def counted(*a, _real=real, _name=name, **k):  # type: ignore[no-untyped-def]
            counts[_name] = counts.get(_name, 0) + 1
            return _real(*a, **k)

        monkeypatch.setattr(graph, name, counted)
    return counts


def test_understanding_reads_only_the_subject_and_synonyms(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    from hopweave.models.common import Session

    stage = engine.understander_for(engine.settings_for("deltabank"))
    session = Session(**MARIA)
    stage.understand("Please waive my late fee on the Platinum card", session, AS_OF)  # warm caches
    counts = _count_reads(engine.graph, monkeypatch)
    u = stage.understand("I want to dispute this $39 late fee on my Platinum card.", session, AS_OF)
    assert u.goal == "LateFeeDispute" and u.filter is not None and u.lexical.terms
    # tenant data only (the subject's node, the product's synonyms); vocabulary, filter
    # mapping and vocabulary nodes come from caches keyed by revision, and the subject's record
    # at this as_of from the read cache (understand/read_cache.py) once read
    assert "find_nodes" not in counts and counts.get("get_node", 0) <= 1
    # the product's synonyms, the subject's holdings, the products on record (the accounts she HOLDS)
    assert counts.get("run_pattern", 0) <= 3


def test_a_vocabulary_write_invalidates_the_cached_vocabulary(engine: Engine) -> None:
    from hopweave.graph.base import Node

    stage = engine.understander_for(engine.settings_for("deltabank"))
    resolver = stage.resolver
    fp, _ = resolver.vocabulary("deltabank")
    assert resolver.vocabulary("deltabank")[0] == fp  # cached: same object, no re-read
    label = sorted(engine.graph.schema.vocabulary_labels())[0]
    before = engine.graph.data_generation([label])
    engine.graph.write("_global", [Node(f"{label.upper()}_TP_TEST", label, {"name": "Zzyzx test"})])
    assert engine.graph.data_generation([label]) == before + 1
    assert resolver.vocabulary("deltabank")[0] != fp


# ---- recording: group commit -------------------------------------------------------------------
def test_group_commit_makes_many_traces_durable_in_few_writes(engine: Engine, maria, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import shutil
    import threading
    import time

    from hopweave.engine import record as trace_record
    from hopweave.engine.stages import open_graph
    from hopweave.engine.trace_writer import GroupCommitter
    from hopweave.models.common import Session

    shutil.copytree(engine.store_dir / "graph", tmp_path / "graph")
    shutil.copy(engine.store_dir / "hopweave-store.json", tmp_path)  # the store's schema and domains
    store = open_graph(tmp_path)
    writes: list[int] = []
    real = store.write

    def slow_write(tenant_id, nodes=(), edges=(), **kw):  # type: ignore[no-untyped-def]
        writes.append(len(nodes))
        time.sleep(0.05)  # an fsync on a slow disk: arrivals meanwhile join the next group
        return real(tenant_id, nodes, edges, **kw)

    store.write = slow_write  # type: ignore[method-assign]
    committer = GroupCommitter(store)
    session = Session(**MARIA)
    results = [maria.model_copy(update={"trace_id": f"RT_group_commit_{i:03d}"}) for i in range(40)]
    futures = []

    def submit(r) -> None:  # type: ignore[no-untyped-def]
        futures.append(committer.submit("deltabank", lambda: trace_record.build(r, session, store, DELTABANK.subject),
                                        time.perf_counter() + 5))

    threads = [threading.Thread(target=submit, args=(r,)) for r in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(f.result(timeout=30) is True for f in futures)
    assert sum(writes) == 40 and len(writes) < 40 / 4, writes  # many traces per fsync'd write
    # "crash": the writer is never closed; a fresh opener reads what was acknowledged
    reopened = open_graph(tmp_path)
    for r in results:
        assert reopened.get_node("deltabank", r.trace_id) is not None
    committer.close()


def test_a_failing_trace_does_not_fail_its_group(engine: Engine) -> None:
    import time

    from hopweave.engine.trace_writer import GroupCommitter
    from hopweave.errors import HopweaveError
    from hopweave.graph.base import Node

    committer = GroupCommitter(engine.graph)
    bad = committer.submit("deltabank", lambda: ([Node("X_bad", "NoSuchLabel", {})], []), time.perf_counter() + 5)
    good = committer.submit("deltabank", lambda: ([Node("RT_group_ok", "DecisionTrace",
                                                        {"kind": "retrieval", "summary": "ok"})], []),
                            time.perf_counter() + 5)
    assert good.result(timeout=30) is True
    with pytest.raises(HopweaveError):
        bad.result(timeout=30)
    committer.close()


# ---- deadlines ---------------------------------------------------------------------------------
#: What a burst may overrun its budget by in this test (before: a 60-request aretrieve burst took ~2 s
#: against 250 ms, queued behind 8 workers): a shared 2-core machine (load average ~20 from
#: other work) starves the process; docs/BENCHMARKS.md has the margin measured on a quiet run.
MARGIN_MS = 600
UTTERANCES = [
    "I want to dispute this $39 late fee on my Platinum card.",
    "Why was I charged a late fee, I paid on time",
    "Please raise my credit limit",
    "Someone used my card without permission",
    "I got married and need to change my name",
    "Can you waive the late payment charge this once?",
]


def _overload_engine(engine: Engine, budget_ms: int) -> Engine:

    from hopweave.engine.config import EngineConfig

    eng = Engine(engine.graph, engine.index, domains=DELTABANK_REGISTRY, embedder=engine.embedder,
                 understander=engine.understander_for(DELTABANK), counter=engine.counter,
                 config=EngineConfig(budget_ms=budget_ms))
    eng.warming.mark_warm()
    return eng


@pytest.mark.slow  # wall-clock bound under a burst: run in the slow suite (a quiet CI step), not the default one
def test_aretrieve_under_overload_is_never_late(engine: Engine) -> None:
    import asyncio
    import time

    budget_ms, n = 250, 60
    eng = _overload_engine(engine, budget_ms)

    async def one(i: int) -> tuple[float, Any]:
        t = time.perf_counter()
        r = await eng.aretrieve(f"{UTTERANCES[i % len(UTTERANCES)]} (case {i})", session=MARIA, as_of=AS_OF,
                                record=False)
        return (time.perf_counter() - t) * 1000, r

    async def burst() -> list[tuple[float, Any]]:
        return await asyncio.gather(*(one(i) for i in range(n)))

    try:
        out = asyncio.run(burst())
    finally:
        eng.close_pools()
    late = sorted(ms for ms, _ in out)
    # the stated margin: 150 ms on a shared 2-core machine (docs/BENCHMARKS.md has the measured one)
    assert late[-1] <= budget_ms + MARGIN_MS, late[-5:]
    assert any(r.degraded for _, r in out)  # a 60-request burst on 2 cores cannot all finish
    for _, r in out:
        if r.goal is None and not r.clarify:
            assert any(d.stage == "understand" for d in r.degraded)


@pytest.mark.slow  # wall-clock bound under a burst: run in the slow suite (a quiet CI step), not the default one
def test_threads_under_overload_are_never_late(engine: Engine) -> None:
    import time
    from concurrent.futures import ThreadPoolExecutor

    budget_ms, n = 250, 60
    eng = _overload_engine(engine, budget_ms)

    def one(i: int) -> float:
        t = time.perf_counter()
        eng.retrieve(f"{UTTERANCES[i % len(UTTERANCES)]} (thread {i})", session=MARIA, as_of=AS_OF, record=True)
        return (time.perf_counter() - t) * 1000

    try:
        with ThreadPoolExecutor(n) as pool:
            late = sorted(pool.map(one, range(n)))
    finally:
        eng.trace_writer.close()  # drains the trace queue (the stores are the fixture's)
        eng.close_pools()
    assert late[-1] <= budget_ms + MARGIN_MS, late[-5:]
