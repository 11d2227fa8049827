"""Opt-in micro-batching of concurrent query embeddings (issue 7).

Under agent-scale concurrency most of a retrieval's CPU is spent in small ``embed`` calls (the
classifier's views, the search query, the precedent case text), one transformer forward pass
each. :class:`BatchingEmbedder` coalesces the calls that arrive while a forward pass is running
into the next pass ("continuous batching": a lone call never waits), which costs far less CPU per
text than one pass per call.

Trade-off, why it is opt-in: a text embedded inside a batch differs from the same text embedded
alone by float rounding (about 1e-7 per component on CPU), so batching makes scores depend on
which requests happened to run together; an audit replay that must be byte-identical should use
the plain embedder. Usage::

    engine = Engine.open(store, embedder=BatchingEmbedder(default_embedder()))
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from hopweave.search.embedder import Embedder


class _Call:
    __slots__ = ("texts", "result", "error", "done")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.result: np.ndarray | None = None
        self.error: BaseException | None = None
        self.done = False


class BatchingEmbedder(Embedder):
    """Wraps an embedder; concurrent ``embed`` calls of at most ``small_call`` texts share
    forward passes of up to ``max_batch`` texts. Larger calls (ingest) go straight through.
    Results of identical calls are kept in an LRU of ``cache_size`` entries (0 disables).
    Thread-safe; no background thread (the caller that finds the model idle runs the pass)."""

    def __init__(self, inner: Embedder, *, max_batch: int = 64, small_call: int = 8, cache_size: int = 1024) -> None:
        self.inner = inner
        self.space = inner.space
        self.max_batch = max_batch
        self.small_call = small_call
        self._cv = threading.Condition()
        self._queue: list[_Call] = []
        self._busy = False
        self._cache: OrderedDict[tuple[str, ...], np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        #: Forward passes run and calls served (for benchmarks).
        self.passes = 0
        self.calls = 0

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """L2-normalised float32 matrix (len(texts), dims); raises what the inner embedder raises."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings; use embed_one() for one text")
        if len(texts) == 0 or len(texts) > self.small_call:
            return self.inner.embed(texts, batch_size=batch_size)
        key = tuple(texts)
        call = _Call(list(texts))
        with self._cv:
            self.calls += 1
            hit = self._cache.get(key) if self._cache_size else None
            if hit is not None:
                self._cache.move_to_end(key)
                return hit.copy()
            self._queue.append(call)
        while True:
            with self._cv:
                while not call.done and self._busy:
                    self._cv.wait()
                if call.done:
                    return self._result(call)
                self._busy = True  # the model is idle: this caller runs the next pass
                batch, self._queue = self._take()
            self._run(batch)

    def _take(self) -> tuple[list[_Call], list[_Call]]:
        """(calls for this pass up to max_batch texts, the rest). Called with the lock held."""
        taken: list[_Call] = []
        n = 0
        for i, c in enumerate(self._queue):
            if taken and n + len(c.texts) > self.max_batch:
                return taken, self._queue[i:]
            taken.append(c)
            n += len(c.texts)
        return taken, []

    def _run(self, batch: list[_Call]) -> None:
        distinct = list(dict.fromkeys(t for c in batch for t in c.texts))
        error: BaseException | None = None
        vecs: Any = None
        try:
            vecs = self.inner.embed(distinct, batch_size=max(len(distinct), 1))
        except BaseException as exc:  # delivered to every caller of this pass
            error = exc
        with self._cv:
            self.passes += 1
            row = {t: i for i, t in enumerate(distinct)}
            for c in batch:
                if error is not None:
                    c.error = error
                else:
                    c.result = np.stack([vecs[row[t]] for t in c.texts]).astype(np.float32, copy=False)
                    if self._cache_size:
                        self._cache[tuple(c.texts)] = c.result.copy()
                        while len(self._cache) > self._cache_size:
                            self._cache.popitem(last=False)
                c.done = True
            self._busy = False
            self._cv.notify_all()

    @staticmethod
    def _result(call: _Call) -> np.ndarray:
        if call.error is not None:
            raise call.error
        assert call.result is not None
        return call.result.copy()

    def __getattr__(self, name: str) -> Any:  # model, embed_query, ... of the inner embedder
        return getattr(self.inner, name)
