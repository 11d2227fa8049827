"""On-disk cache of corpus embeddings, keyed by embedding space and a hash of the exact texts.

A cache entry is ``<cache_dir>/embeddings/<space slug>/<sha256 of texts>.npy`` with a small JSON
sidecar. Any change of model, revision or text produces a different key, so a stale vector can
never be served. Entries are written atomically (temp file + rename).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from hopweave.search.embedder import Embedder, EmbeddingSpace


def default_cache_dir() -> Path:
    """``$HOPWEAVE_CACHE_DIR`` or ``~/.cache/hopweave``."""
    env = os.environ.get("HOPWEAVE_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "hopweave"


def texts_hash(texts: Sequence[str]) -> str:
    """sha256 over the ordered texts (length-prefixed, so boundaries are unambiguous)."""
    h = hashlib.sha256()
    for t in texts:
        b = t.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def _slug(space: EmbeddingSpace) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", space.key)


def cache_path(space: EmbeddingSpace, texts: Sequence[str], cache_dir: Path) -> Path:
    """Where the vectors for ``texts`` in ``space`` are (or would be) cached."""
    return cache_dir / "embeddings" / _slug(space) / f"{texts_hash(texts)[:32]}.npy"


def embed_cached(
    embedder: Embedder,
    texts: Sequence[str],
    cache_dir: Path | None = None,
    batch_size: int = 64,
    progress: Callable[[int, int], None] | None = None,
    chunk: int = 512,
) -> tuple[np.ndarray, bool]:
    """Embed ``texts`` or load them from the cache.

    Returns:
        (float32 matrix (len(texts), dims), True when served from the cache).
    """
    cache_dir = cache_dir or default_cache_dir()
    path = cache_path(embedder.space, texts, cache_dir)
    if path.is_file():
        arr = np.load(path, mmap_mode=None)
        if arr.shape == (len(texts), embedder.space.dimensions) and arr.dtype == np.float32:
            return arr, True
    parts: list[np.ndarray] = []
    done = 0
    for start in range(0, len(texts), chunk):
        part = embedder.embed(list(texts[start : start + chunk]), batch_size=batch_size)
        parts.append(part)
        done += len(part)
        if progress:
            progress(done, len(texts))
    arr = (
        np.concatenate(parts).astype(np.float32, copy=False)
        if parts
        else np.zeros((0, embedder.space.dimensions), dtype=np.float32)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as fh:
        np.save(fh, arr)
    os.replace(tmp, path)
    path.with_suffix(".json").write_text(
        json.dumps({"space": embedder.space.model_dump(), "count": len(texts)}, sort_keys=True)
    )
    return arr, False
