"""qdrant-edge adapter: Qdrant's own engine in-process, one shard on disk (the embedded default).

Layout under ``<store_dir>/vectors/``: ``shard/`` (the EdgeShard: segments + WAL),
``collection.json`` (the CollectionInfo: embedding space, BM25 parameters, tokenizer) and the
completion markers. Payload indexes are created for every indexed chunk field of the schema
(``tenant_id`` as the tenant index) plus ``embedding_space``. Call :meth:`optimize` after a bulk
load (builds HNSW and payload indexes on the optimized segments).

Completion markers (never an index served silently half-built): before its first write an
EdgeIndex writes ``INCOMPLETE`` (and drops ``COMPLETE.json``); :meth:`flush` / :meth:`close` after
successful writes write ``COMPLETE.json`` (point count, plus what the ingest recorded) and drop
``INCOMPLETE``; an ingest that raised leaves ``INCOMPLETE``. Opening a shard whose directory has
``INCOMPLETE``, or no ``COMPLETE.json``, or another point count than recorded raises
StoreIncompleteError / StoreCorruptError. Loads build a fresh directory and swap it in
atomically (:mod:`hopweave.search.staging`), so a crash leaves the previous complete index.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Sequence

from hopweave.errors import (
    MissingDependencyError,
    StoreCorruptError,
    StoreError,
    StoreIncompleteError,
    StoreIOError,
    StoreUnavailableError,
)
from hopweave.models.filters import Eq, FilterTree
from hopweave.models.schema import GraphSchema
from hopweave.search.index_base import (
    DENSE,
    LEXICAL,
    SPACE_FIELD,
    Candidate,
    ChannelRequest,
    CollectionInfo,
    IndexPoint,
    VectorIndex,
    payload_index_kinds,
    point_id,
)
from hopweave.search.qdrant_filter import to_edge

INFO_FILE = "collection.json"
VECTORS_DIR = "vectors"
#: Siblings of ``vectors`` used by :mod:`hopweave.search.staging` (build aside, swap in).
STAGING_DIR = ".vectors.staging"
PREVIOUS_DIR = ".vectors.prev"
LOCK_FILE = "vectors.lock"
COMPLETE_FILE = "COMPLETE.json"
INCOMPLETE_FILE = "INCOMPLETE"
#: The marker the eval runner's frozen indexes carry (written after their own complete build).
_LEGACY_COMPLETE = "complete"
_CANDIDATE_FIELDS = ("chunk_id", "tenant_id")
#: Below this many points passing a filter, the sparse (BM25) channel scores the filtered points
#: directly instead of walking the inverted index with a filter check per posting (Qdrant's
#: ``full_scan_threshold`` of the sparse index). None keeps Qdrant's default.
SPARSE_FULL_SCAN_THRESHOLD: int | None = (int(os.environ["HOPWEAVE_SPARSE_FULL_SCAN"])
                                          if os.environ.get("HOPWEAVE_SPARSE_FULL_SCAN") else None)
SHARD_DIR = "shard"
#: Qdrant's default HNSW ``full_scan_threshold`` (KB of vectors): a segment whose filtered points
#: hold fewer vectors scores them all instead of walking the graph.
HNSW_FULL_SCAN_KB = 10_000
#: Threads of a shard's search pool. qdrant-edge derives 8 from this machine's 2 CPUs; a query
#: over our two segments then cost ~20% more CPU and more wall time than on one thread (3.4 vs
#: 4.0 ms per query batch of the example pack at 50,000 points), and its Python binding holds the GIL for
#: the whole query anyway, so concurrent queries of one process never overlap.
SEARCH_THREADS = 1


def _q() -> Any:
    try:
        import qdrant_edge
    except ImportError as exc:  # pragma: no cover - core dependency
        raise MissingDependencyError("qdrant-edge-py", "all", "the embedded vector index") from exc
    return qdrant_edge


class EdgeIndex(VectorIndex):
    """A chunk collection in a qdrant-edge shard under ``<store_dir>/vectors``.

    Nothing is opened in the constructor; the shard is opened (or created) on first use. A shard
    is locked by one process, so this object is the only writer (``exclusive_writer``).
    """

    exclusive_writer = True

    def __init__(self, store_dir: str | Path, schema: GraphSchema, *, root: str | Path | None = None) -> None:
        """``root`` overrides the index directory (default ``<store_dir>/vectors``; staging uses it)."""
        self.root = Path(root) if root is not None else Path(store_dir) / VECTORS_DIR
        self.schema = schema
        self.info = None
        self._shard: Any = None
        self._lock = threading.RLock()
        self._dirty = False  # this object wrote since the last completion marker
        self._ingesting = 0  # open begin_ingest() calls: no completion marker meanwhile
        self._failed = False  # the last ingest raised: its partial writes are never marked complete
        self._marker: dict[str, Any] = {}
        self._payloads = CandidatePayloads()
        self._scan_kb: int | None = None  # the shard's HNSW full-scan threshold, read once

    # ---- lifecycle ----------------------------------------------------------------------
    def _load_info(self) -> CollectionInfo | None:
        path = self.root / INFO_FILE
        if not path.is_file():
            return None
        try:
            return CollectionInfo.model_validate_json(path.read_text())
        except Exception as exc:
            raise StoreCorruptError(f"{path} is unreadable ({exc}); rebuild the store") from exc

    def _open(self) -> Any:
        if self._shard is None:
            with self._lock:
                if self._shard is None:
                    shard_dir = self.root / SHARD_DIR
                    if self.root.name == VECTORS_DIR and not self.root.exists():
                        recover(self.root.parent)  # a crash between the two renames of a swap
                    if not (self.root / INFO_FILE).is_file() or not shard_dir.is_dir():
                        if (self.root / INCOMPLETE_FILE).exists():
                            check_complete(self.root)
                        raise StoreError(f"no vector collection at {self.root}: ingest documents first")
                    marker = check_complete(self.root)
                    try:
                        shard = _load_shard(shard_dir)
                    except Exception as exc:
                        if "WouldBlock" in str(exc):
                            raise StoreUnavailableError(
                                f"the vector shard at {shard_dir} is open in another process "
                                "(one process at a time): close it there first"
                            ) from exc
                        raise StoreCorruptError(f"cannot open the vector shard at {shard_dir}: {exc}") from exc
                    _check_points(self.root, marker, shard)
                    self._shard = shard
        return self._shard

    # ---- completion markers -------------------------------------------------------------
    def _mark_dirty(self) -> None:
        if self._dirty:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        note = {"pid": os.getpid(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        _write_durably(self.root / INCOMPLETE_FILE, json.dumps(note).encode())
        (self.root / COMPLETE_FILE).unlink(missing_ok=True)
        self._dirty = True

    def _mark_complete(self) -> None:
        if not self._dirty or self._ingesting or self._failed or self._shard is None:
            return
        points = int(self._shard.count(_q().CountRequest(exact=True)))
        marker = {"format": 1, "points": points,
                  "completed": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **self._marker}
        _write_durably(self.root / COMPLETE_FILE, json.dumps(marker, sort_keys=True, indent=2).encode())
        (self.root / INCOMPLETE_FILE).unlink(missing_ok=True)
        _fsync_dir(self.root)
        self._dirty = False

    def begin_ingest(self) -> None:
        """An ingest starts writing: no completion marker until :meth:`end_ingest`."""
        with self._lock:
            self._ingesting += 1

    def end_ingest(self, marker: dict[str, Any] | None = None, failed: bool = False) -> None:
        """The ingest ended: record ``marker`` (counts, input checksum) in COMPLETE.json at the
        next flush. ``failed`` keeps the index INCOMPLETE until a later ingest succeeds."""
        with self._lock:
            self._ingesting = max(0, self._ingesting - 1)
            self._failed = failed
            if marker:
                self._marker.update(marker)

    def _create(self, info: CollectionInfo) -> None:
        q = _q()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreIOError(f"cannot create {self.root} ({exc.strerror})", path=str(self.root),
                               errno=exc.errno) from exc
        cfg = q.EdgeConfig(
            vectors={DENSE: q.EdgeVectorParams(size=info.space.dimensions, distance=q.Distance.Cosine)},
            sparse_vectors={LEXICAL: q.EdgeSparseVectorParams(modifier=q.Modifier.Idf,
                                                              full_scan_threshold=SPARSE_FULL_SCAN_THRESHOLD)},
            max_search_threads=SEARCH_THREADS,
        )
        with self._lock:
            self._mark_dirty()
            try:
                shard = q.EdgeShard.create(str(self.root / SHARD_DIR), cfg)
            except Exception as exc:
                raise StoreError(f"cannot create the vector shard under {self.root}: {exc}") from exc
            for name, schema in self._index_specs():
                shard.update(q.UpdateOperation.create_field_index(name, schema))
            shard.flush()
            self._shard = shard
            _write_durably(self.root / INFO_FILE, info.model_dump_json(indent=2).encode())

    def _index_specs(self) -> list[tuple[str, Any]]:
        q = _q()
        types = {
            "tenant": q.KeywordIndexParams(is_tenant=True),
            "datetime": q.PayloadSchemaType.Datetime,
            "integer": q.PayloadSchemaType.Integer,
            "float": q.PayloadSchemaType.Float,
            "bool": q.PayloadSchemaType.Bool,
            "keyword": q.PayloadSchemaType.Keyword,
        }
        return [(name, types[kind]) for name, kind in payload_index_kinds(self.schema)]

    def close(self) -> None:
        """Flush (marking the index complete unless an ingest is unfinished) and release it."""
        with self._lock:
            if self._shard is not None:
                self._shard.flush()
                self._mark_complete()
                self._shard.close()
                self._shard = None

    def flush(self) -> None:
        """Persist writes; after successful writes (no ingest in progress) mark the index complete."""
        with self._lock:
            if self._shard is not None:
                self._shard.flush()
                self._mark_complete()

    def optimize(self) -> None:
        with self._lock:
            self._open().optimize()

    # ---- hooks --------------------------------------------------------------------------
    def _compile(self, tree: FilterTree | None) -> Any:
        return to_edge(tree, self.field_types)

    def _plain_search_bound(self, dimensions: int) -> int:
        """Three quarters of the shard's HNSW full-scan threshold in points (``full_scan_threshold``
        KB of ``dimensions`` float32 vectors, Qdrant's default 10,000 KB when the shard records
        none): below its threshold a segment's planner scores the filtered points exactly."""
        if self._scan_kb is None:
            try:
                raw = json.loads((self.root / SHARD_DIR / "edge_config.json").read_text())
                kb = (raw.get("hnsw_config") or {}).get("full_scan_threshold")
            except (OSError, ValueError, AttributeError):
                kb = None
            self._scan_kb = int(kb) if isinstance(kb, int) and kb > 0 else HNSW_FULL_SCAN_KB
        return self._scan_kb * 1024 // (4 * max(dimensions, 1)) * 3 // 4

    def _unit_corpus(self) -> Any:
        # tenant ids are never empty (check_tenant): no point passes, IDF = ln 2 for every term
        return to_edge(Eq(field="tenant_id", value=""), self.field_types)

    def _upsert(self, points: Sequence[IndexPoint]) -> None:
        q = _q()
        out = []
        for p in points:
            vec: dict[str, Any] = {LEXICAL: q.SparseVector(list(p.sparse.indices), list(p.sparse.values))}
            if p.dense is not None:
                vec[DENSE] = [float(x) for x in p.dense]
            out.append(q.Point(point_id(p.chunk_id), vec, p.payload))
        with self._lock:
            shard = self._open()
            self._mark_dirty()
            # A point re-upserted without a dense vector must lose its old one.
            self._update(shard, q.UpdateOperation.upsert_points(out))

    def _set_payload(self, flt: Any, payload: dict[str, Any]) -> None:
        with self._lock:
            shard = self._open()
            self._mark_dirty()
            self._update(shard, _q().UpdateOperation.set_payload_by_filter(flt, payload))

    def _delete_dense(self, flt: Any) -> None:
        q = _q()
        with self._lock:
            shard = self._open()
            self._mark_dirty()
            self._update(shard, q.UpdateOperation.delete_vectors_by_filter(flt, [DENSE]))
            self._update(shard, q.UpdateOperation.delete_payload_by_filter(flt, [SPACE_FIELD]))

    def _update(self, shard: Any, op: Any) -> None:
        """Apply one update; a backend failure (disk full, I/O) becomes a StoreError and the
        index stays marked INCOMPLETE."""
        try:
            shard.update(op)
        except Exception as exc:
            raise StoreError(
                f"writing to the vector shard at {self.root / SHARD_DIR} failed ({exc}); free space / check "
                "the disk and re-run the load or ingest"
            ) from exc

    def _count(self, flt: Any) -> int:
        return int(self._open().count(_q().CountRequest(exact=True, filter=flt)))

    def _retrieve(
        self, point_ids: Sequence[str], with_vector: bool = True
    ) -> list[tuple[dict[str, Any], list[float] | None]]:
        if not point_ids:
            return []
        recs = self._open().retrieve(list(point_ids), with_payload=True, with_vector=[DENSE] if with_vector else False)
        out = []
        for r in recs:
            vec = r.vector.get(DENSE) if isinstance(r.vector, dict) else None
            out.append((dict(r.payload or {}), list(vec) if vec is not None else None))
        return out

    def _retrieve_fields(self, point_ids: Sequence[int], fields: Sequence[str]) -> dict[int, dict[str, Any]]:
        """point id (UUID integer) -> payload restricted to ``fields``, for the existing points
        among ``point_ids``."""
        recs = self._open().retrieve([str(uuid.UUID(int=i)) for i in point_ids],
                                     with_payload=_q().PayloadSelector.Include(list(fields)), with_vector=False)
        return {uuid.UUID(str(r.id)).int: dict(r.payload or {}) for r in recs}

    def _scroll(self, flt: Any, limit: int | None) -> list[dict[str, Any]]:
        q = _q()
        shard = self._open()
        out: list[dict[str, Any]] = []
        offset = None
        while True:
            page = 1000 if limit is None else min(1000, limit - len(out))
            if page <= 0:
                break
            recs, offset = shard.scroll(q.ScrollRequest(offset=offset, limit=page, filter=flt, with_payload=True))
            out.extend(dict(r.payload or {}) for r in recs)
            if offset is None:
                break
        return out

    def _query(self, requests: Sequence[ChannelRequest]) -> list[list[Candidate]]:
        """Run the requests as one batch, asking the engine for ids and scores only; candidate
        payloads (chunk_id, tenant_id and the requests' feature fields) come from
        :class:`CandidatePayloads`. The engine stores payloads compressed as whole JSON documents
        (text included): reading them inside the query cost about half of its CPU at 50,000 points."""
        generation = self._generation
        scored = self._scored(requests)
        fields = tuple(dict.fromkeys(_CANDIDATE_FIELDS + tuple(f for r in requests for f in r.fields)))
        payloads = self._payloads.get(self, generation, [k for lst in scored for k, _ in lst], fields)
        out: list[list[Candidate]] = []
        for lst in scored:
            cands = []
            for key, score in lst:
                payload = payloads.get(key)
                if payload is not None:  # None: deleted by a concurrent write since the query
                    cands.append(Candidate(str(payload.get("chunk_id")), float(score), payload))
            out.append(cands)
        return out

    def _scored(self, requests: Sequence[ChannelRequest]) -> list[list[tuple[int, float]]]:
        """(point id as a UUID integer, score) lists of the requests, run as one engine batch."""
        q = _q()
        reqs = []
        for r in requests:
            if r.channel == LEXICAL:
                vec = q.SparseVector(list(r.vector.indices), list(r.vector.values))
                params = q.SearchParams(idf=q.IdfParams(corpus=r.idf_filter))
            else:
                vec = r.vector
                params = None
            reqs.append(q.QueryRequest(limit=r.limit, query=q.Query.Nearest(vec, using=r.channel), filter=r.filter,
                                       with_payload=False, params=params))
        shard = self._open()
        res = shard.query_batch(q.QueryBatchRequest(reqs)) if len(reqs) > 1 else [shard.query(reqs[0])]
        # point ids arrive as uuid.UUID: keyed by their integer (str() costs ~1 us each)
        return [[(p.id.int, p.score) for p in lst] for lst in res]


class CandidatePayloads:
    """Candidate payloads (a few fields) by point id, for one index and one write generation.

    Search candidates need ``chunk_id``, ``tenant_id`` and the ranking features' fields of a
    few hundred points per request, mostly the same points again and again. Only the writer of
    the shard changes payloads, and every write moves the index's generation, which empties this
    cache: a payload here is always the stored one. Unknown points are read in one ``retrieve``.
    Payload dicts are shared between requests: callers read them, never modify them.
    """

    #: Most points kept (about 1 KB each); past it, the oldest half is dropped (not the whole
    #: cache: at 500,000 points an emptied cache made the next ~20 requests read payloads again).
    MAX_POINTS = 50_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation = -1
        #: point id -> (the fields read, the payload restricted to them)
        self._points: dict[int, tuple[frozenset[str], dict[str, Any]]] = {}

    def get(self, index: "EdgeIndex", generation: int, point_ids: Sequence[int],
            fields: Sequence[str]) -> dict[int, dict[str, Any]]:
        """point id (its UUID as an integer) -> payload holding ``fields`` (when the point has
        them) for every existing point among ``point_ids``, read at ``generation`` (the index's
        generation before its query ran)."""
        want = frozenset(fields)
        with self._lock:
            if generation != self._generation:
                self._generation, self._points = generation, {}
            points = self._points
        out: dict[int, dict[str, Any]] = {}
        missing: list[int] = []
        for pid in point_ids:
            hit = points.get(pid)
            if hit is not None and want <= hit[0]:
                out[pid] = hit[1]
            elif pid not in out:
                missing.append(pid)
        if missing:
            missing = list(dict.fromkeys(missing))
            for pid, payload in index._retrieve_fields(missing, tuple(sorted(want))).items():
                out[pid] = payload
            with self._lock:
                if self._generation == generation and index._generation == generation:
                    over = len(self._points) + len(missing) - self.MAX_POINTS
                    if over > 0:  # the oldest first (insertion order), down to half
                        drop = min(len(self._points), over + self.MAX_POINTS // 2)
                        for old in list(itertools.islice(self._points, drop)):
                            del self._points[old]
                    for pid in missing:
                        if pid in out:
                            self._points[pid] = (want, out[pid])
        return out


_VECTOR_KEYS = frozenset({"size", "distance"})
_SPARSE_KEYS = frozenset({"modifier", "full_scan_threshold"})
_HNSW_KEYS = frozenset({"m", "ef_construct", "full_scan_threshold", "max_indexing_threads", "on_disk"})
_CONFIG_KEYS = frozenset({"on_disk_payload", "payload_memory", "vectors", "sparse_vectors", "hnsw_config",
                          "max_search_threads"})


def _load_shard(shard_dir: Path) -> Any:
    """The shard, loaded with :data:`SEARCH_THREADS` search threads when its configuration can be
    rebuilt with that count (else, or when qdrant-edge refuses the rebuilt one, as stored)."""
    q = _q()
    config = _load_config(shard_dir, SEARCH_THREADS)
    if config is not None:
        try:
            return q.EdgeShard.load(str(shard_dir), config)
        except Exception as exc:  # noqa: BLE001 - a lock held elsewhere is reported by the plain load
            if "WouldBlock" in str(exc):
                raise
    return q.EdgeShard.load(str(shard_dir))


def _load_config(shard_dir: Path, threads: int) -> Any | None:
    """The shard's own configuration (its ``edge_config.json``) with ``max_search_threads`` set
    to ``threads``, to load it with; None to load it as it is: it already has that count, or it
    holds a setting this adapter does not rebuild (qdrant-edge checks the rebuilt configuration
    against the shard and then stores it in place of the old one)."""
    q = _q()
    try:
        raw = json.loads((shard_dir / "edge_config.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or raw.get("max_search_threads") == threads or set(raw) - _CONFIG_KEYS:
        return None
    vectors, sparse, hnsw = raw.get("vectors") or {}, raw.get("sparse_vectors") or {}, raw.get("hnsw_config")
    if (any(set(v) - _VECTOR_KEYS for v in vectors.values()) or any(set(v) - _SPARSE_KEYS for v in sparse.values())
            or (hnsw is not None and set(hnsw) - _HNSW_KEYS)):
        return None
    try:
        memory = {"cold": q.Memory.Cold, "cached": q.Memory.Cached, None: None}[raw.get("payload_memory")]
        return q.EdgeConfig(
            vectors={k: q.EdgeVectorParams(size=v["size"], distance=getattr(q.Distance, v["distance"]))
                     for k, v in vectors.items()},
            sparse_vectors={k: q.EdgeSparseVectorParams(
                modifier=q.Modifier.Idf if v.get("modifier") == "idf" else None,
                full_scan_threshold=v.get("full_scan_threshold")) for k, v in sparse.items()},
            hnsw_config=None if hnsw is None else q.HnswIndexConfig(**hnsw),
            on_disk_payload=raw.get("on_disk_payload"), payload_memory=memory, max_search_threads=threads)
    except (KeyError, AttributeError, TypeError, ValueError):
        return None


def read_info(store_dir: str | Path) -> dict[str, Any] | None:
    """The raw collection.json of a store (for diagnostics), or None."""
    path = Path(store_dir) / VECTORS_DIR / INFO_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def read_marker(root: Path) -> dict[str, Any] | None:
    """The COMPLETE.json of an index directory, None when absent. Raises StoreCorruptError."""
    path = root / COMPLETE_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {"legacy": True} if (root / _LEGACY_COMPLETE).is_file() else None
    except OSError as exc:
        raise StoreError(f"cannot read {path} ({exc.strerror})") from exc
    try:
        marker = json.loads(raw)
    except ValueError as exc:
        raise StoreCorruptError(f"{path} is unreadable ({exc}); rebuild the index with `hopweave load`") from exc
    if not isinstance(marker, dict) or not isinstance(marker.get("points"), int):
        raise StoreCorruptError(f"{path} lacks a point count; rebuild the index with `hopweave load`")
    return marker


def check_complete(root: Path) -> dict[str, Any]:
    """The completion marker of the index at ``root``. Raises StoreIncompleteError when an ingest
    did not finish there (INCOMPLETE present, or no COMPLETE.json)."""
    incomplete = root / INCOMPLETE_FILE
    if incomplete.exists():
        try:
            note = incomplete.read_text(errors="replace").strip()
        except OSError:
            note = ""
        raise StoreIncompleteError(
            f"the vector index at {root} was left unfinished by an interrupted ingest ({note or 'no details'}); "
            "re-run the load (`hopweave load`) or the ingest to rebuild it"
        )
    marker = read_marker(root)
    if marker is None:
        raise StoreIncompleteError(
            f"the vector index at {root} has no completion marker ({COMPLETE_FILE}): it was built by an "
            "interrupted or older ingest; re-run the load (`hopweave load`) to rebuild it"
        )
    return marker


def _check_points(root: Path, marker: dict[str, Any], shard: Any) -> None:
    want = marker.get("points")
    if not isinstance(want, int):
        return  # a legacy marker records no count
    have = int(shard.count(_q().CountRequest(exact=True)))
    if have != want:
        shard.close()
        raise StoreCorruptError(
            f"the vector index at {root} holds {have} points, its {COMPLETE_FILE} records {want}: "
            "it was altered after it was built; rebuild it with `hopweave load`"
        )


def _write_durably(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise StoreIOError(f"writing {path} failed ({exc.strerror}); free space / check the disk and re-run "
                           "the ingest", path=str(path), errno=exc.errno) from exc


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise StoreIOError(f"syncing {directory} failed ({exc.strerror})", path=str(directory),
                           errno=exc.errno) from exc


def recover(store_dir: str | Path, locked: bool = False) -> None:
    """Finish or undo a swap that a crash interrupted (see :mod:`hopweave.search.staging`):
    with no ``vectors`` directory, a complete staging index is swapped in, else the previous
    complete index is put back. No-op when ``vectors`` exists, or (unless ``locked``: the caller
    holds the rebuild lock) while a rebuild holds the lock."""
    store = Path(store_dir)
    live = store / VECTORS_DIR
    if live.exists() or not store.is_dir():
        return
    fd = None
    if not locked:
        try:
            fd = os.open(store / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # a rebuild is running: it finishes the swap itself
            os.close(fd)  # type: ignore[arg-type]
            return
        except OSError:
            if fd is not None:
                os.close(fd)
            return
    try:
        for candidate in (store / STAGING_DIR, store / PREVIOUS_DIR):
            if not live.exists() and (candidate / COMPLETE_FILE).is_file():
                os.rename(candidate, live)
                _fsync_dir(store)
                return
    finally:
        if fd is not None:
            os.close(fd)
