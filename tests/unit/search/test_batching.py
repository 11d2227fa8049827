"""BatchingEmbedder: concurrent small calls share forward passes; results and errors reach the
right callers; large calls pass through."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from hopweave.search.batching import BatchingEmbedder
from hopweave.search.embedder import Embedder, EmbeddingSpace


class SlowEmbedder(Embedder):
    """Deterministic per-text vectors; each call sleeps so that concurrent callers pile up."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.space = EmbeddingSpace(provider="t", model="slow", revision="1", dimensions=4)
        self.calls: list[list[str]] = []
        self.fail_on = fail_on
        self._lock = threading.Lock()

    def embed(self, texts, batch_size=64):
        with self._lock:
            self.calls.append(list(texts))
        time.sleep(0.05)
        if self.fail_on is not None and self.fail_on in texts:
            raise RuntimeError("model failed")
        out = np.array([[len(t), sum(map(ord, t)) % 97, 1.0, i % 2] for i, t in enumerate(texts)], dtype=np.float32)
        out[:, 3] = 0.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_concurrent_calls_are_coalesced_and_correct() -> None:
    inner = SlowEmbedder()
    b = BatchingEmbedder(inner, cache_size=0)
    texts = [[f"query {i}", f"clause {i}"] for i in range(16)]
    start = threading.Barrier(16)

    def one(ts):
        start.wait()
        return b.embed(ts)

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, texts))
    for ts, got in zip(texts, results):
        assert np.allclose(got, SlowEmbedder().embed(ts))
    assert len(inner.calls) < 16 and b.passes == len(inner.calls)
    assert sum(len(c) for c in inner.calls) == 32


def test_errors_reach_every_caller_of_the_failed_pass() -> None:
    b = BatchingEmbedder(SlowEmbedder(fail_on="bad"), cache_size=0)
    with pytest.raises(RuntimeError):
        b.embed(["bad"])
    assert b.embed(["good"]).shape == (1, 4)  # the embedder recovers


def test_large_calls_pass_through_and_cache_hits() -> None:
    inner = SlowEmbedder()
    b = BatchingEmbedder(inner, small_call=2)
    b.embed(["a", "b", "c"])
    assert inner.calls == [["a", "b", "c"]]
    first = b.embed(["x"])
    again = b.embed(["x"])
    assert np.array_equal(first, again) and len(inner.calls) == 2
    again[0, 0] = 42.0  # callers get copies
    assert not np.array_equal(b.embed(["x"]), again)
