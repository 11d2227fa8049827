"""Throughput (issue 13): one query embedding per request, understanding without store round
trips, deadlines that hold on every path."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import AS_OF, MARIA

from hopweave.engine.engine import Engine
from hopweave.engine.query_vectors import SharedEmbedder


class _Counting:
    """Counts the texts the base encoder really runs on (the LRU and the memo are in front)."""

    def __init__(self, embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.texts: list[str] = []
        base = embedder.base
        real = base.embed_uncached

        def counted(texts, batch_size=64):  # type: ignore[no-untyped-def]
            self.texts.extend(texts)
            return real(texts, batch_size)

        monkeypatch.setattr(base, "embed_uncached", counted)


def test_one_forward_pass_per_request(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(engine.embedder, SharedEmbedder)
    # warm: the goal question's vector (per goal and tier) and the precedent traces' vectors
    engine.retrieve("Please waive the late fee on my Platinum card", session=MARIA, as_of=AS_OF, record=False)
    counting = _Counting(engine.embedder, monkeypatch)
    utterance = "I was charged a late fee of $39 this month and I would like it reversed"
    r = engine.retrieve(utterance, session=MARIA, as_of=AS_OF, record=False)
    assert r.goal == "LateFeeDispute" and r.chunks and r.precedent
    assert not [d for d in r.degraded if d.stage in ("understand", "search", "precedent")]
    assert counting.texts == [utterance]  # classifier, dense channel and precedent share it


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
    # mapping and vocabulary nodes come from caches keyed by revision
    assert "find_nodes" not in counts and counts["get_node"] == 1
    assert counts["run_pattern"] <= 2  # the product's synonyms, the subject's holdings (tenant data)


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
