"""Rerankers: rescore the fused top-N with the document title prepended.

* :class:`BiEncoderReranker` - exact cosine of ``title. chunk`` against the query with the default
  embedder. Works out of the box (no extra weights).
* :class:`CrossEncoderReranker` - a sentence-transformers ``CrossEncoder`` loaded from a local
  folder given by the ``HOPWEAVE_RERANKER_PATH`` setting (no weights ship with hopweave, nothing is
  downloaded). Unset -> ConfigError naming the setting.

A reranker reorders the first ``top_n`` hits by its score (ties by fused rank, then chunk id) and
keeps the remaining hits after them in fused order. Each reranked hit carries ``rerank`` (model,
score, fused rank).
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from hopweave.errors import ConfigError, MissingDependencyError
from hopweave.models.ranking import Hit, RerankScore
from hopweave.search.embedder import Embedder

RERANKER_PATH_SETTING = "HOPWEAVE_RERANKER_PATH"
DEFAULT_TOP_N = 40


class Candidate(Protocol):
    """What a reranker reads of a candidate: a search :class:`Hit` or the engine's ``ChunkItem``."""

    @property
    def chunk_id(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def text(self) -> str: ...


def title_text(hit: Candidate) -> str:
    """``title. text`` (the title is what tells a short chunk which document it is from)."""
    t = hit.title.strip()
    if not t:
        return hit.text
    return f"{t} {hit.text}" if t[-1] in ".?!:" else f"{t}. {hit.text}"


class Reranker(ABC):
    """Rescores (query, hit) pairs."""

    name: str

    @abstractmethod
    def score(self, query: str, hits: Sequence[Candidate], query_vector: np.ndarray | None = None) -> list[float]:
        """One score per hit (higher is better). ``query_vector``: the query's embedding if known."""

    def rerank(
        self,
        query: str,
        hits: Sequence[Hit],
        top_n: int = DEFAULT_TOP_N,
        query_vector: np.ndarray | None = None,
    ) -> list[Hit]:
        """Reorder the first ``top_n`` hits by score; the rest follow in fused order.

        Returns:
            New Hit objects with ``rerank`` set on the rescored ones.
        """
        head, tail = list(hits[:top_n]), list(hits[top_n:])
        if not head:
            return list(hits)
        scores = self.score(query, head, query_vector)
        order = sorted(range(len(head)), key=lambda i: (-scores[i], i, head[i].chunk_id))
        out = [
            head[i].model_copy(update={"rerank": RerankScore(model=self.name, score=float(scores[i]), fused_rank=i + 1)})
            for i in order
        ]
        return out + tail


class BiEncoderReranker(Reranker):
    """Exact cosine between the query and ``title. chunk`` with an embedder (default MiniLM).

    Args:
        embedder: the bi-encoder (default: the process-wide MiniLM).
        stored_vectors: optional ``chunk ids -> {chunk id: vector}`` lookup of vectors already
            stored for exactly ``title. chunk`` in the embedder's space (e.g.
            ``lambda ids: index.dense_vectors(tenant, ids)``); chunks found there are not
            re-embedded (same cosine, a fraction of the cost).
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        stored_vectors: Callable[[list[str]], dict[str, np.ndarray]] | None = None,
    ) -> None:
        self._embedder = embedder
        self._stored = stored_vectors

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from hopweave.search.embedder import default_embedder

            self._embedder = default_embedder()
        return self._embedder

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"bi-encoder:{self.embedder.space.key}"

    def score(self, query: str, hits: Sequence[Candidate], query_vector: np.ndarray | None = None) -> list[float]:
        q = query_vector if query_vector is not None else self.embedder.embed_query(query)
        known = self._stored([h.chunk_id for h in hits]) if self._stored is not None else {}
        missing = [h for h in hits if h.chunk_id not in known]
        if missing:
            vecs = self.embedder.embed([title_text(h) for h in missing])
            known = {**known, **{h.chunk_id: v for h, v in zip(missing, vecs)}}
        return [float(np.asarray(known[h.chunk_id], dtype=np.float32) @ q) for h in hits]


class CrossEncoderReranker(Reranker):
    """A sentence-transformers CrossEncoder from a local folder.

    Args:
        model_path: folder with the model; default: the ``HOPWEAVE_RERANKER_PATH`` setting.
        batch_size: pairs per forward pass.

    Raises:
        ConfigError: no path configured, or the folder does not exist (names the setting).
    """

    def __init__(self, model_path: str | Path | None = None, batch_size: int = 32, device: str = "cpu") -> None:
        path = model_path or os.environ.get(RERANKER_PATH_SETTING)
        if not path:
            raise ConfigError(
                f"no cross-encoder configured: set {RERANKER_PATH_SETTING} to a local folder with a "
                "sentence-transformers CrossEncoder (no reranker weights ship with hopweave), or use "
                "the bi-encoder reranker"
            )
        self.path = Path(path)
        if not self.path.is_dir():
            raise ConfigError(f"{RERANKER_PATH_SETTING}={self.path} is not a folder with a CrossEncoder model")
        self.batch_size = batch_size
        self._device = device
        self._model: Any = None
        self._lock = threading.Lock()
        self.name = f"cross-encoder:{self.path.name}"

    @property
    def model(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    os.environ["HF_HUB_OFFLINE"] = "1"
                    os.environ["TRANSFORMERS_OFFLINE"] = "1"
                    try:
                        from sentence_transformers import CrossEncoder
                    except ImportError as exc:
                        raise MissingDependencyError("sentence-transformers", "embed", "the cross-encoder reranker") from exc
                    try:
                        self._model = CrossEncoder(str(self.path), device=self._device, local_files_only=True)
                    except Exception as exc:
                        raise ConfigError(f"cannot load a CrossEncoder from {RERANKER_PATH_SETTING}={self.path}: {exc}") from exc
        return self._model

    def score(self, query: str, hits: Sequence[Candidate], query_vector: np.ndarray | None = None) -> list[float]:
        pairs = [(query, title_text(h)) for h in hits]
        scores = self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        return [float(s) for s in np.asarray(scores, dtype=np.float64).reshape(-1)]


def get_reranker(
    name: str | None,
    embedder: Embedder | None = None,
    stored_vectors: Callable[[list[str]], dict[str, np.ndarray]] | None = None,
) -> Reranker | None:
    """``None``/"none" -> None, "bi_encoder" -> BiEncoderReranker, "cross_encoder" -> CrossEncoderReranker.

    Raises:
        ConfigError: an unknown name, or a cross-encoder without a configured path.
    """
    if name in (None, "", "none"):
        return None
    if name in ("bi_encoder", "bi-encoder", "biencoder"):
        return BiEncoderReranker(embedder, stored_vectors)
    if name in ("cross_encoder", "cross-encoder", "crossencoder"):
        return CrossEncoderReranker()
    raise ConfigError(f"unknown reranker {name!r}: use none, bi_encoder or cross_encoder")
