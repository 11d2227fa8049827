"""Rerankers: the bi-encoder works out of the box; the cross-encoder names its setting."""

from __future__ import annotations

import pytest

from hopweave.errors import ConfigError
from hopweave.models.ranking import Hit
from hopweave.search.rerank import (
    RERANKER_PATH_SETTING,
    BiEncoderReranker,
    CrossEncoderReranker,
    get_reranker,
    title_text,
)


def _hit(cid, title, text, score):
    return Hit(chunk_id=cid, document_id=cid, title=title, text=text, score=score)


def test_cross_encoder_needs_a_configured_path(monkeypatch, tmp_path):
    monkeypatch.delenv(RERANKER_PATH_SETTING, raising=False)
    with pytest.raises(ConfigError, match=RERANKER_PATH_SETTING):
        CrossEncoderReranker()
    with pytest.raises(ConfigError, match=RERANKER_PATH_SETTING):
        CrossEncoderReranker(tmp_path / "missing")
    with pytest.raises(ConfigError, match="unknown reranker"):
        get_reranker("colbert")
    assert get_reranker("none") is None


def test_title_is_prepended():
    assert title_text(_hit("a", "Waiver policy", "One waiver per year.", 1)) == "Waiver policy. One waiver per year."
    assert title_text(_hit("a", "", "Body", 1)) == "Body"


def test_bi_encoder_reranks_head_keeps_tail(embedder):
    hits = [
        _hit("a", "Mortgage rates", "Fixed rate mortgages for first-time buyers.", 0.9),
        _hit("b", "Late fee waiver policy", "Platinum customers may receive one late fee waiver per year.", 0.8),
        _hit("c", "Lounge access", "Airport lounges for card members.", 0.7),
        _hit("d", "Tail", "not reranked", 0.1),
    ]
    out = BiEncoderReranker(embedder).rerank("can my late fee be waived?", hits, top_n=3)
    assert out[0].chunk_id == "b" and out[0].rerank.fused_rank == 2
    assert out[-1].chunk_id == "d" and out[-1].rerank is None
    assert [h.chunk_id for h in out] == [h.chunk_id for h in BiEncoderReranker(embedder).rerank("can my late fee be waived?", hits, top_n=3)]


def test_bi_encoder_stored_vectors_give_the_same_scores(embedder):
    hits = [
        _hit("a", "Mortgage rates", "Fixed rate mortgages.", 0.9),
        _hit("b", "Late fee waiver policy", "One late fee waiver per year.", 0.8),
    ]
    stored = {"b": embedder.embed([title_text(hits[1])])[0]}
    plain = BiEncoderReranker(embedder).score("late fee waived?", hits)
    cached = BiEncoderReranker(embedder, lambda ids: {i: stored[i] for i in ids if i in stored}).score("late fee waived?", hits)
    assert cached == [pytest.approx(x, abs=1e-5) for x in plain]
