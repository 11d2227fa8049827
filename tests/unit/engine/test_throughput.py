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
