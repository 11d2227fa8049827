"""On-disk cache of the goal classifier's example embeddings, so a cold start reads them instead
of re-embedding every GoalType example.

An entry is two files in the cache dir: ``<key>.npy`` (a float32 matrix written with ``np.save``,
read with ``allow_pickle=False``) and ``<key>.json``, the header: format version, embedding space
key, sha256 of the ordered texts, row count, dimensions, sha256 of the ``.npy`` bytes and the
metagraph revision it was built for (informational). ``<key>`` hashes the space key and the texts,
so another model, encoder or example set never reads it. Any mismatch (header, checksum, shape,
dtype) is a miss: the caller re-embeds and rewrites. Writes are atomic (temp file + rename, the
header last) and best-effort: a read-only cache dir only costs the re-embedding.

The cache dir is the store's (``<store>/cache/classifier``) when the graph store lives in a
directory, else ``$HOPWEAVE_CACHE_DIR/classifier`` or ``~/.cache/hopweave/classifier``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

__all__ = ["FORMAT", "cache_dir_for", "load_vectors", "save_vectors", "vectors_key"]

FORMAT = "hopweave-classifier-vectors/1"


def cache_dir_for(store: Any) -> Path:
    """Where a classifier over ``store`` keeps its vectors (see the module docstring)."""
    from hopweave.graph import GRAPH_SUBDIR

    directory = getattr(store, "directory", None)
    if isinstance(directory, Path) and directory.name == GRAPH_SUBDIR:
        return directory.parent / "cache" / "classifier"
    env = os.environ.get("HOPWEAVE_CACHE_DIR")
    return (Path(env) if env else Path.home() / ".cache" / "hopweave") / "classifier"


def _texts_sha256(texts: Sequence[str]) -> str:
    from hopweave.search.eval.cache import texts_hash

    return texts_hash(texts)


def vectors_key(space_key: str, texts: Sequence[str]) -> str:
    """File stem of the entry for ``texts`` embedded in the space ``space_key``."""
    return hashlib.sha256(f"{FORMAT}\0{space_key}\0{_texts_sha256(texts)}".encode()).hexdigest()[:32]


def load_vectors(cache_dir: Path, space_key: str, texts: Sequence[str], dims: int) -> np.ndarray | None:
    """The cached (len(texts), dims) float32 matrix, or None when absent or not exactly valid."""
    stem = cache_dir / vectors_key(space_key, texts)
    try:
        header = json.loads(stem.with_suffix(".json").read_text(encoding="utf-8"))
        raw = stem.with_suffix(".npy").read_bytes()
    except (OSError, ValueError):
        return None
    want = {"format": FORMAT, "space": space_key, "texts_sha256": _texts_sha256(texts),
            "count": len(texts), "dims": dims, "npy_sha256": hashlib.sha256(raw).hexdigest()}
    if not isinstance(header, dict) or any(header.get(k) != v for k, v in want.items()):
        return None
    try:
        import io

        arr = np.load(io.BytesIO(raw), allow_pickle=False)
    except (OSError, ValueError):
        return None
    if arr.dtype != np.float32 or arr.shape != (len(texts), dims):
        return None
    return arr


def save_vectors(cache_dir: Path, space_key: str, texts: Sequence[str], vectors: np.ndarray,
                 metagraph_revision: str) -> Path | None:
    """Write the entry; returns the ``.npy`` path, or None when the dir is not writable."""
    arr = np.ascontiguousarray(vectors, dtype=np.float32)
    stem = cache_dir / vectors_key(space_key, texts)
    tag = f"{os.getpid()}.{id(arr)}.tmp"
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = stem.with_name(f".{stem.name}.npy.{tag}")
        with open(tmp, "wb") as fh:
            np.save(fh, arr, allow_pickle=False)
        raw = tmp.read_bytes()
        os.replace(tmp, stem.with_suffix(".npy"))
        header = {"format": FORMAT, "space": space_key, "texts_sha256": _texts_sha256(texts),
                  "count": int(arr.shape[0]), "dims": int(arr.shape[1]) if arr.ndim == 2 else 0,
                  "dtype": "float32", "npy_sha256": hashlib.sha256(raw).hexdigest(),
                  "metagraph_revision": metagraph_revision}
        tmp_h = stem.with_name(f".{stem.name}.json.{tag}")
        tmp_h.write_text(json.dumps(header, sort_keys=True, indent=1), encoding="utf-8")
        os.replace(tmp_h, stem.with_suffix(".json"))
    except OSError:
        return None
    return stem.with_suffix(".npy")
