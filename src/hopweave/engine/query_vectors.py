"""One query embedding per request, shared by the classifier, the dense channel and precedent.

The classifier embeds the utterance (and the clauses of a mixed request) in one call; the
document search and the precedent ranking reuse that vector instead of running the encoder again
on their own texts:

- dense channel: the utterance vector, or, when the goal has a search question
  (``search_template``), the normalised mean of the utterance vector and the question's vector.
  A question depends only on the goal and a few entity values (the tier), so its vector is
  computed once, alone, and kept in the embedder's LRU (no forward pass once warm);
- precedent: the utterance vector is the case's semantic side; the entity values and derived
  facts stay in the BM25 side of the case text.

:class:`RequestVectors` is the per-request memo and :class:`SharedEmbedder` the embedder the
engine hands to its stages: inside :func:`bound` work it serves any text already embedded in the
same request. Vectors do not depend on what else was in a call (the ONNX encoder runs each text
alone), and the calls of a request come in a fixed order, so replays stay byte-identical.
"""

from __future__ import annotations

import threading
import time
from contextvars import ContextVar
from pathlib import Path
from typing import Callable, Sequence, TypeVar

import numpy as np

from hopweave.errors import DeadlineError
from hopweave.search.embedder import Embedder, EmbeddingSpace
from hopweave.search.text_vectors import TextVectorCache, vectors_dir

T = TypeVar("T")
__all__ = ["RequestVectors", "SharedEmbedder", "bound", "dense_vector", "shared_embedder", "utterance_vector"]

_CURRENT: ContextVar["RequestVectors | None"] = ContextVar("hopweave_request_vectors", default=None)


class RequestVectors:
    """The vectors one request has computed, by exact text; counts the texts it had to encode."""

    def __init__(self) -> None:
        self._vecs: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self.encoded = 0

    def get(self, text: str) -> np.ndarray | None:
        with self._lock:
            return self._vecs.get(text)

    def put(self, texts: Sequence[str], vecs: np.ndarray) -> None:
        with self._lock:
            for t, v in zip(texts, vecs):
                self._vecs.setdefault(t, np.asarray(v, dtype=np.float32))
            self.encoded += len(texts)


def bound(memo: RequestVectors, work: Callable[[], T], deadline: float | None = None) -> Callable[[], T]:
    """``work`` run with ``memo`` as the current request's vectors (for a pool thread).
    Returns a callable that returns what ``work`` returns, and raises DeadlineError when it
    starts after ``deadline`` (``time.perf_counter()`` clock): a queued stage whose request
    has already answered does no work."""

    def run() -> T:
        if deadline is not None and time.perf_counter() >= deadline:
            raise DeadlineError("the stage started after its request's deadline; skipped")
        token = _CURRENT.set(memo)
        try:
            return work()
        finally:
            _CURRENT.reset(token)

    return run


class SharedEmbedder(Embedder):
    """``base`` with the current request's memo in front (outside a request: ``base`` itself)."""

    def __init__(self, base: Embedder, questions: "TextVectorCache | None" = None) -> None:
        self.base = base
        #: The goals' search questions, kept on disk with the store (see text_vectors.py).
        self.questions = questions

    @property
    def space(self) -> EmbeddingSpace:  # type: ignore[override]
        return self.base.space

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """L2-normalised float32 matrix (len(texts), dims); texts already embedded in this request
        are not encoded again. Raises what the base embedder raises."""
        memo = _CURRENT.get()
        if memo is None or isinstance(texts, str):
            return self.base.embed(texts, batch_size)
        missing = [t for t in dict.fromkeys(texts) if memo.get(t) is None]
        if missing:
            memo.put(missing, self.base.embed(missing, batch_size))
        if not texts:
            return np.zeros((0, self.space.dimensions), dtype=np.float32)
        return np.stack([memo.get(t) for t in texts])  # type: ignore[misc]

    def embed_query(self, text: str) -> np.ndarray:
        """One text through the store's question vectors (when given), else the base embedder's
        cross-request LRU (computed alone, so its bytes never depend on the request that first
        asked)."""
        if self.questions is not None:
            return self.questions.vector(self.base, text)
        return self.base.embed_query(text)


def shared_embedder(embedder: Embedder, store_dir: Path | None) -> SharedEmbedder:
    """``embedder`` behind the current request's memo and the store's cached question vectors
    (kept on disk under ``store_dir``; in memory without one)."""
    return SharedEmbedder(embedder, TextVectorCache(vectors_dir(store_dir) if store_dir is not None else None,
                                                    "questions"))


def utterance_vector(embedder: Embedder, utterance: str) -> np.ndarray:
    """The request's one query vector: the classifier's view of the whole utterance (its
    stripped text), computed here only when understanding did not run. Raises what the
    embedder raises."""
    from hopweave.understand.text import check_utterance

    return np.asarray(embedder.embed([check_utterance(utterance).strip()])[0], dtype=np.float32)


def dense_vector(embedder: Embedder, utterance: str, dense_query: str) -> np.ndarray:
    """The dense channel's vector for a plan whose search text is ``dense_query``: the utterance
    vector, or its normalised mean with the goal question's vector (``dense_query`` is
    ``"<question> <utterance>"`` or a question that embeds the utterance itself)."""
    u = utterance_vector(embedder, utterance)
    if dense_query.strip() == utterance.strip():
        return u
    question = dense_query[: -len(utterance)].rstrip() if dense_query.endswith(utterance) else dense_query
    q = np.asarray(embedder.embed_query(question), dtype=np.float32)
    v = (u + q).astype(np.float32)
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else u
