"""qdrant-client adapter: a Qdrant server (``url=``), or qdrant-client's local mode for tests.

Same collection layout as the edge adapter: a named dense vector ``dense`` (cosine), a named
sparse vector ``lexical`` with the IDF modifier, payload indexes for the schema's indexed chunk
fields (``tenant_id`` as the tenant index) and the CollectionInfo recorded as collection metadata.

Local mode (``location=":memory:"`` or ``path=``) goes through the same client code path as a
server; it is a pure-Python engine, fine for small fixtures and congruence tests, far too slow for
real corpora (use the edge adapter for embedded use).
"""

from __future__ import annotations

import threading
import warnings
from typing import Any, Sequence

from hopweave.errors import MissingDependencyError, StoreCorruptError, StoreError, StoreUnavailableError
from hopweave.models.filters import FilterTree
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
from hopweave.search.qdrant_filter import to_qdrant

_META_KEY = "hopweave"


def _models() -> Any:
    try:
        from qdrant_client import models
    except ImportError as exc:  # pragma: no cover - core dependency
        raise MissingDependencyError("qdrant-client", "all", "the Qdrant server adapter") from exc
    return models


class ClientIndex(VectorIndex):
    """A chunk collection behind ``qdrant_client.QdrantClient``.

    Args:
        schema: the graph schema (chunk fields -> payload indexes, filter vocabulary).
        collection: collection name.
        url / api_key: a Qdrant server; or
        location / path: local mode (``":memory:"`` or a folder).
    """

    def __init__(
        self,
        schema: GraphSchema,
        collection: str = "hopweave_chunks",
        url: str | None = None,
        api_key: str | None = None,
        location: str | None = None,
        path: str | None = None,
        timeout: int = 10,
    ) -> None:
        self.schema = schema
        self.collection = collection
        self.info = None
        self._kw: dict[str, Any] = {"url": url, "api_key": api_key, "location": location, "path": path, "timeout": timeout}
        self._client: Any = None
        self._lock = threading.RLock()

    @property
    def client(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    from qdrant_client import QdrantClient

                    kw = {k: v for k, v in self._kw.items() if v is not None}
                    if not any(k in kw for k in ("url", "location", "path")):
                        kw["location"] = ":memory:"
                    try:
                        self._client = QdrantClient(**kw)
                    except Exception as exc:
                        raise StoreUnavailableError(f"cannot reach Qdrant ({kw.get('url') or kw.get('path') or kw.get('location')}): {exc}") from exc
        return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # ---- lifecycle ----------------------------------------------------------------------
    def _load_info(self) -> CollectionInfo | None:
        try:
            if not self.client.collection_exists(self.collection):
                return None
            cfg = self.client.get_collection(self.collection).config
        except Exception as exc:
            raise StoreUnavailableError(f"cannot read collection {self.collection!r}: {exc}") from exc
        meta = (getattr(cfg, "metadata", None) or {}).get(_META_KEY)
        if meta is None:
            raise StoreCorruptError(
                f"collection {self.collection!r} exists but was not created by hopweave (no metadata)"
            )
        return CollectionInfo.model_validate(meta)

    def _create(self, info: CollectionInfo) -> None:
        m = _models()
        try:
            self.client.create_collection(
                self.collection,
                vectors_config={DENSE: m.VectorParams(size=info.space.dimensions, distance=m.Distance.COSINE)},
                sparse_vectors_config={LEXICAL: m.SparseVectorParams(modifier=m.Modifier.IDF)},
                metadata={_META_KEY: info.model_dump(mode="json")},
            )
            with warnings.catch_warnings():
                # local mode warns that payload indexes are no-ops there; a server builds them
                warnings.filterwarnings("ignore", message="Payload indexes have no effect")
                for name, schema in self._index_specs():
                    self.client.create_payload_index(self.collection, name, field_schema=schema)
        except Exception as exc:
            raise StoreError(f"cannot create collection {self.collection!r}: {exc}") from exc

    def _index_specs(self) -> list[tuple[str, Any]]:
        m = _models()
        types = {
            "tenant": m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD, is_tenant=True),
            "datetime": m.PayloadSchemaType.DATETIME,
            "integer": m.PayloadSchemaType.INTEGER,
            "float": m.PayloadSchemaType.FLOAT,
            "bool": m.PayloadSchemaType.BOOL,
            "keyword": m.PayloadSchemaType.KEYWORD,
        }
        return [(name, types[kind]) for name, kind in payload_index_kinds(self.schema)]

    # ---- hooks --------------------------------------------------------------------------
    def _compile(self, tree: FilterTree | None) -> Any:
        return to_qdrant(tree, self.field_types)

    def _upsert(self, points: Sequence[IndexPoint]) -> None:
        m = _models()
        out = []
        for p in points:
            vec: dict[str, Any] = {LEXICAL: m.SparseVector(indices=list(p.sparse.indices), values=list(p.sparse.values))}
            if p.dense is not None:
                vec[DENSE] = [float(x) for x in p.dense]
            out.append(m.PointStruct(id=point_id(p.chunk_id), vector=vec, payload=p.payload))
        self.client.upsert(self.collection, points=out, wait=True)

    def _set_payload(self, flt: Any, payload: dict[str, Any]) -> None:
        self.client.set_payload(self.collection, payload=payload, points=_models().FilterSelector(filter=flt), wait=True)

    def _delete_dense(self, flt: Any) -> None:
        m = _models()
        self.client.delete_vectors(self.collection, vectors=[DENSE], points=m.FilterSelector(filter=flt), wait=True)
        self.client.delete_payload(self.collection, keys=[SPACE_FIELD], points=m.FilterSelector(filter=flt), wait=True)

    def _count(self, flt: Any) -> int:
        return int(self.client.count(self.collection, count_filter=flt, exact=True).count)

    def _retrieve(
        self, point_ids: Sequence[str], with_vector: bool = True
    ) -> list[tuple[dict[str, Any], list[float] | None]]:
        if not point_ids:
            return []
        recs = self.client.retrieve(
            self.collection, ids=list(point_ids), with_payload=True, with_vectors=[DENSE] if with_vector else False
        )
        out = []
        for r in recs:
            vec = r.vector.get(DENSE) if isinstance(r.vector, dict) else None
            out.append((dict(r.payload or {}), list(vec) if vec is not None else None))
        return out

    def _scroll(self, flt: Any, limit: int | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        offset = None
        while True:
            page = 1000 if limit is None else min(1000, limit - len(out))
            if page <= 0:
                break
            recs, offset = self.client.scroll(
                self.collection, scroll_filter=flt, limit=page, offset=offset, with_payload=True
            )
            out.extend(dict(r.payload or {}) for r in recs)
            if offset is None:
                break
        return out

    def _query(self, requests: Sequence[ChannelRequest]) -> list[list[Candidate]]:
        m = _models()
        reqs = []
        for r in requests:
            if r.channel == LEXICAL:
                query: Any = m.SparseVector(indices=list(r.vector.indices), values=list(r.vector.values))
                params = m.SearchParams(idf=m.IdfCorpusParams(corpus=r.idf_filter))
            else:
                query, params = r.vector, None
            reqs.append(
                m.QueryRequest(query=query, using=r.channel, filter=r.filter, limit=r.limit, with_payload=list(dict.fromkeys(("chunk_id", "tenant_id") + r.fields)), params=params)
            )
        res = self.client.query_batch_points(self.collection, requests=reqs)
        return [
            [Candidate(str((p.payload or {}).get("chunk_id")), float(p.score), dict(p.payload or {})) for p in resp.points]
            for resp in res
        ]
