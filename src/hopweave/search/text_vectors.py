"""Vectors of texts the engine meets again and again, kept on disk per embedding space.

Two kinds: the precedent traces' texts (``traces``: embedded when a store is loaded, see
:func:`precompute_trace_vectors`, so precedent ranking runs no forward pass at request time) and
the goals' search questions (``questions``: one per goal and entity values, embedded the first
time and then kept). A text's vector depends only on the text and the embedding space (the ONNX
encoders never pad), so a vector read back is the one the encoder would compute: replays stay
byte-identical.

Layout: ``<store>/cache/vectors/<kind>/<space hash>/<shard>.npy`` (float32 rows, written with
``np.save``, read with ``allow_pickle=False``) and ``<shard>.json`` (format, space key, the sha256
of each row's text, the ``.npy`` sha256). A shard is written atomically (temp file + rename, the
header last); one whose header, checksum or shape does not match is ignored (its texts are
embedded again). Writes are best-effort: a read-only store only costs the embedding. Each new
text seen at request time adds a small shard; opening a directory of more than
:data:`COMPACT_AT` shards merges them into one.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.search.embedder import Embedder

__all__ = ["COMPACT_AT", "FORMAT", "NOT_PRECEDENT_KINDS", "TRACE_LABEL", "TextVectorCache", "precedent_texts",
           "precompute_trace_vectors", "vectors_dir"]

FORMAT = "hopweave-text-vectors/1"
#: More shards than this in one directory are merged into one when it is opened.
COMPACT_AT = 64
#: The graph label of decision traces, and the kinds of trace that are never precedent
#: (recorded retrievals, and the audit copies of recorded outcomes: the decided trace itself is
#: the precedent).
TRACE_LABEL = "DecisionTrace"
NOT_PRECEDENT_KINDS = frozenset({"retrieval", "outcome_version"})


def vectors_dir(store_dir: str | Path) -> Path:
    """Where a store keeps its text vectors."""
    return Path(store_dir) / "cache" / "vectors"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class TextVectorCache:
    """Vectors by (embedding space, text), in memory and, with ``directory``, on disk.

    Thread-safe; the shards of a space are read on its first use. ``kind`` names the
    subdirectory (``traces``, ``questions``)."""

    def __init__(self, directory: str | Path | None, kind: str) -> None:
        self.directory = Path(directory) / kind if directory is not None else None
        self._vecs: dict[tuple[str, str], np.ndarray] = {}
        self._loaded: set[str] = set()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vecs)

    def _space_dir(self, space_key: str) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / hashlib.sha256(space_key.encode()).hexdigest()[:16]

    def _load(self, space_key: str, dims: int) -> None:
        """Read the space's shards once (caller holds the lock)."""
        if space_key in self._loaded:
            return
        self._loaded.add(space_key)
        d = self._space_dir(space_key)
        if d is None or not d.is_dir():
            return
        headers = sorted(d.glob("*.json"))
        rows: dict[str, np.ndarray] = {}
        for h in headers:
            got = _read_shard(h, space_key, dims)
            if got is not None:
                rows.update(got)
        for k, v in rows.items():
            self._vecs.setdefault((space_key, k), v)
        if len(headers) > COMPACT_AT and rows and \
                _write_shard(d, space_key, list(rows), np.stack(list(rows.values()))) is not None:
            keep = _shard_name(list(rows))
            for h in headers:
                if h.stem != keep:
                    for p in (h, h.with_suffix(".npy")):
                        try:
                            p.unlink()
                        except OSError:
                            pass

    def vectors(self, embedder: "Embedder", texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dims) float32: cached rows, the others embedded (one call) and kept."""
        space = embedder.space
        keys = [_sha(t) for t in texts]
        with self._lock:
            self._load(space.key, space.dimensions)
            missing = sorted({(k, t) for k, t in zip(keys, texts) if (space.key, k) not in self._vecs})
        if missing:
            vecs = np.asarray(embedder.embed([t for _, t in missing]), dtype=np.float32)
            self.add(space.key, [k for k, _ in missing], vecs)
        with self._lock:
            if not keys:
                return np.zeros((0, space.dimensions), dtype=np.float32)
            return np.stack([self._vecs[(space.key, k)] for k in keys])

    def vector(self, embedder: "Embedder", text: str) -> np.ndarray:
        """The vector of one text (see :meth:`vectors`)."""
        space = embedder.space
        key = (space.key, _sha(text))
        with self._lock:
            self._load(space.key, space.dimensions)
            hit = self._vecs.get(key)
        return hit if hit is not None else self.vectors(embedder, [text])[0]

    def add(self, space_key: str, keys: Sequence[str], vecs: np.ndarray) -> None:
        """Keep rows (by text sha256) in memory and write them as one shard."""
        rows = {}
        for k, v in zip(keys, vecs):
            v = np.array(v, dtype=np.float32)
            v.setflags(write=False)
            rows[k] = v
        with self._lock:
            for k, v in rows.items():
                self._vecs.setdefault((space_key, k), v)
        d = self._space_dir(space_key)
        if d is not None and rows:
            _write_shard(d, space_key, list(rows), np.stack(list(rows.values())))


def _shard_name(keys: Sequence[str]) -> str:
    return hashlib.sha256("\0".join(keys).encode()).hexdigest()[:24]


def _read_shard(header_path: Path, space_key: str, dims: int) -> dict[str, np.ndarray] | None:
    try:
        header = json.loads(header_path.read_text(encoding="utf-8"))
        raw = header_path.with_suffix(".npy").read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("space") != space_key \
            or header.get("npy_sha256") != hashlib.sha256(raw).hexdigest() or not isinstance(header.get("keys"), list):
        return None
    try:
        arr = np.load(io.BytesIO(raw), allow_pickle=False)
    except (OSError, ValueError):
        return None
    keys = header["keys"]
    if arr.dtype != np.float32 or arr.shape != (len(keys), dims):
        return None
    arr.setflags(write=False)
    return {str(k): arr[i] for i, k in enumerate(keys)}


def _write_shard(d: Path, space_key: str, keys: list[str], arr: np.ndarray) -> Path | None:
    stem = d / _shard_name(keys)
    tag = f"{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        d.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(arr, dtype=np.float32), allow_pickle=False)
        raw = buf.getvalue()
        tmp = stem.with_name(f".{stem.name}.npy.{tag}")
        tmp.write_bytes(raw)
        os.replace(tmp, stem.with_suffix(".npy"))
        header = {"format": FORMAT, "space": space_key, "keys": keys, "dims": int(arr.shape[1]),
                  "npy_sha256": hashlib.sha256(raw).hexdigest()}
        tmp_h = stem.with_name(f".{stem.name}.json.{tag}")
        tmp_h.write_text(json.dumps(header), encoding="utf-8")
        os.replace(tmp_h, stem.with_suffix(".json"))
    except OSError:
        return None
    return stem.with_suffix(".npy")


def precedent_texts(graph: Any, tenants: Iterable[str]) -> list[str]:
    """The texts precedent ranking compares with: each precedent trace's ``text`` (else its
    ``summary``) for the tenants of ``graph`` (a GraphStore), distinct, sorted. Recorded
    retrievals are not precedent."""
    out: set[str] = set()
    for tenant in tenants:
        for node in graph.find_nodes(tenant, TRACE_LABEL):
            if node.props.get("kind") in NOT_PRECEDENT_KINDS:
                continue
            text = str(node.props.get("text") or node.props.get("summary") or "")
            if text:
                out.add(text)
    return sorted(out)


def precompute_trace_vectors(store_dir: str | Path, graph: Any, tenants: Iterable[str],
                             embedder: "Embedder | None" = None) -> dict[str, Any]:
    """Embed the precedent traces' texts of a store once, at load time, into its text-vector
    cache (texts already there are skipped). Returns ``{"texts": n, "embedded": m}``. Raises
    what the embedder raises."""
    if embedder is None:
        from hopweave.search.embedder import default_embedder

        embedder = default_embedder()
    texts = precedent_texts(graph, tenants)
    cache = TextVectorCache(vectors_dir(store_dir), "traces")
    with cache._lock:
        cache._load(embedder.space.key, embedder.space.dimensions)
        before = len(cache)
    if texts:
        cache.vectors(embedder, texts)
    return {"texts": len(texts), "embedded": len(cache) - before}
