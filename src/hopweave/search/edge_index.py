"""qdrant-edge adapter: Qdrant's own engine in-process, one shard on disk (the embedded default).

Layout under ``<store_dir>/vectors/``: ``shard/`` (the EdgeShard: segments + WAL) and
``collection.json`` (the CollectionInfo: embedding space, BM25 parameters, tokenizer). Payload
indexes are created for every indexed chunk field of the schema (``tenant_id`` as the tenant
index) plus ``embedding_space``. Call :meth:`optimize` after a bulk load (builds HNSW and payload
indexes on the optimized segments).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Sequence

from hopweave.errors import MissingDependencyError, StoreCorruptError, StoreError, StoreUnavailableError
from hopweave.models.filters import FilterTree
from hopweave.models.schema import GraphSchema
from hopweave.search.index_base import (
    DENSE,
    payload_index_kinds,
    LEXICAL,
    SPACE_FIELD,
    Candidate,
    ChannelRequest,
    CollectionInfo,
    IndexPoint,
    VectorIndex,
    point_id,
)
from hopweave.search.qdrant_filter import to_edge

INFO_FILE = "collection.json"
_CANDIDATE_FIELDS = ("chunk_id", "tenant_id")
SHARD_DIR = "shard"


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

    def __init__(self, store_dir: str | Path, schema: GraphSchema) -> None:
        self.root = Path(store_dir) / "vectors"
        self.schema = schema
        self.info = None
        self._shard: Any = None
        self._lock = threading.RLock()

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
                    if not (self.root / INFO_FILE).is_file() or not shard_dir.is_dir():
                        raise StoreError(f"no vector collection at {self.root}: ingest documents first")
                    try:
                        self._shard = _q().EdgeShard.load(str(shard_dir))
                    except Exception as exc:
                        if "WouldBlock" in str(exc):
                            raise StoreUnavailableError(
                                f"the vector shard at {shard_dir} is open in another process "
                                "(one process at a time): close it there first"
                            ) from exc
                        raise StoreCorruptError(f"cannot open the vector shard at {shard_dir}: {exc}") from exc
        return self._shard

    def _create(self, info: CollectionInfo) -> None:
        q = _q()
        self.root.mkdir(parents=True, exist_ok=True)
        cfg = q.EdgeConfig(
            vectors={DENSE: q.EdgeVectorParams(size=info.space.dimensions, distance=q.Distance.Cosine)},
            sparse_vectors={LEXICAL: q.EdgeSparseVectorParams(modifier=q.Modifier.Idf)},
        )
        with self._lock:
            try:
                shard = q.EdgeShard.create(str(self.root / SHARD_DIR), cfg)
            except Exception as exc:
                raise StoreError(f"cannot create the vector shard under {self.root}: {exc}") from exc
            for name, schema in self._index_specs():
                shard.update(q.UpdateOperation.create_field_index(name, schema))
            shard.flush()
            self._shard = shard
            tmp = self.root / (INFO_FILE + ".tmp")
            tmp.write_text(info.model_dump_json(indent=2))
            os.replace(tmp, self.root / INFO_FILE)

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
        with self._lock:
            if self._shard is not None:
                self._shard.flush()
                self._shard.close()
                self._shard = None

    def flush(self) -> None:
        with self._lock:
            if self._shard is not None:
                self._shard.flush()

    def optimize(self) -> None:
        with self._lock:
            self._open().optimize()

    # ---- hooks --------------------------------------------------------------------------
    def _compile(self, tree: FilterTree | None) -> Any:
        return to_edge(tree, self.field_types)

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
            # A point re-upserted without a dense vector must lose its old one.
            shard.update(q.UpdateOperation.upsert_points(out))

    def _set_payload(self, flt: Any, payload: dict[str, Any]) -> None:
        with self._lock:
            self._open().update(_q().UpdateOperation.set_payload_by_filter(flt, payload))

    def _delete_dense(self, flt: Any) -> None:
        q = _q()
        with self._lock:
            shard = self._open()
            shard.update(q.UpdateOperation.delete_vectors_by_filter(flt, [DENSE]))
            shard.update(q.UpdateOperation.delete_payload_by_filter(flt, [SPACE_FIELD]))

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
        q = _q()
        reqs = []
        for r in requests:
            if r.channel == LEXICAL:
                vec = q.SparseVector(list(r.vector.indices), list(r.vector.values))
                params = q.SearchParams(idf=q.IdfParams(corpus=r.idf_filter))
            else:
                vec = r.vector
                params = None
            reqs.append(
                q.QueryRequest(
                    limit=r.limit,
                    query=q.Query.Nearest(vec, using=r.channel),
                    filter=r.filter,
                    with_payload=q.PayloadSelector.Include(list(_CANDIDATE_FIELDS)),
                    params=params,
                )
            )
        shard = self._open()
        res = shard.query_batch(q.QueryBatchRequest(reqs)) if len(reqs) > 1 else [shard.query(reqs[0])]
        out: list[list[Candidate]] = []
        for lst in res:
            cands = []
            for p in lst:
                payload = dict(p.payload or {})
                cands.append(Candidate(str(payload.get("chunk_id")), float(p.score), payload))
            out.append(cands)
        return out


def read_info(store_dir: str | Path) -> dict[str, Any] | None:
    """The raw collection.json of a store (for diagnostics), or None."""
    path = Path(store_dir) / "vectors" / INFO_FILE
    return json.loads(path.read_text()) if path.is_file() else None
