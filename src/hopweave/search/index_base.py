"""The VectorIndex interface: one collection of chunks, a dense and a sparse (BM25) channel.

Tenant scoping and the always-on lifecycle filter live here, in template methods that adapters do
not override: :meth:`VectorIndex.search`, :meth:`count`, :meth:`upsert`, :meth:`set_payload`,
:meth:`invalidate_vectors`, :meth:`fetch`. Each adds ``tenant_id = T`` (and, for search,
``version = current``) to the filter *before* the adapter runs, and re-checks every returned
payload afterwards (a second wall: a violation raises TenantError instead of leaking).

Both channels read only points that pass the filter; BM25 idf is computed over that filtered
population (``IdfCorpusParams``), so another tenant's documents never shape a tenant's scores.
The semantic channel only compares vectors of the query's embedding space: every point records
``embedding_space`` in its payload and the dense prefetch requires it to equal the query's.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from hopweave.errors import EmbeddingSpaceError, InputError, StoreError, TenantError
from hopweave.models.common import check_tenant
from hopweave.models.documents import CURRENT, SUPERSEDED
from hopweave.models.filters import Eq, FilterTree, In, Not, and_, check_fields, compile_matcher, parse_filter
from hopweave.models.ranking import Coverage, RankingProfile, SearchResult
from hopweave.models.schema import GraphSchema
from hopweave.search.embedder import EmbeddingSpace
from hopweave.search.features import with_features
from hopweave.search.fusion import Fused, fuse_raw, fused_of, rank_channel
from hopweave.search.idf_cache import IdfCache
from hopweave.search.index_types import (
    DENSE,
    INTERNAL_KEYWORD_FIELDS,
    LEXICAL,
    SPACE_FIELD,
    Candidate,
    ChannelRequest,
    CollectionInfo,
    IndexPoint,
    dense_request,
    hit_of,
    lexical_request,
    payload_index_kinds,
    point_id,
)

__all__ = ["DENSE", "INTERNAL_KEYWORD_FIELDS", "LEXICAL", "LEXICAL_CUT_HEADROOM", "LEXICAL_TIE_HEADROOM",
           "SPACE_FIELD", "Candidate", "ChannelRequest", "CollectionInfo", "IndexPoint", "VectorIndex", "payload_index_kinds", "point_id"]

#: The BM25 channel's first fetch is this many times its cap (+1) when the profile fills channels
#: (:meth:`VectorIndex._fill` reads BM25 scores below the cap from that deeper list): templated
#: corpora tie at the cut often (two queries per search).
LEXICAL_TIE_HEADROOM = 4
#: ... and this many times otherwise, where the points fetched beyond the cap only make the cut
#: at a score tie exact (:meth:`VectorIndex._query_exact` fetches more while the tie reaches the
#: fetch's end). DeltaBank at 50,000 chunks: the tie at the cap of 50 reaches past 101 points in 4
#: of 113 channel lists (refetched), past 201 in none; each point fetched costs the engine and a
#: UUID conversion and payload lookup here.
LEXICAL_CUT_HEADROOM = 2
#: ... and the dense channel's first fetch is this many times its cap (+1) when the engine scores
#: every eligible point (``ChannelRequest.full_scan``): a full scan costs the same for any limit
#: and returns the same best points, and templated corpora hold identical chunks whose cosines
#: tie at the cut often (each tie a second filtered query otherwise). A graph search keeps the
#: cap + 1: its answer depends on the limit.
DENSE_SCAN_HEADROOM = 4


class VectorIndex(ABC):
    """A chunk collection with a named dense vector and a named IDF sparse vector.

    Adapters implement the ``_``-prefixed hooks; filters reach them already compiled by
    :meth:`_compile` and already carrying the tenant clause.
    """

    schema: GraphSchema
    info: CollectionInfo | None = None
    #: True when this process is the only writer (embedded shard): filtered counts may then be
    #: cached until the next write through this object.
    exclusive_writer: bool = False
    _generation: int = 0
    _count_cache: dict[tuple[int, str], int] | None = None
    #: Cache the lexical channel's filtered IDF per (write generation, filter, term) when this
    #: object is the only writer and the adapter has a unit corpus (:mod:`hopweave.search.idf_cache`).
    idf_cache_enabled: bool = True
    _idf: IdfCache | None = None
    _compiled_cache: dict[str, Any] | None = None
    _matcher_cache: dict[str, Callable[[dict[str, Any]], bool]] | None = None
    _hits: "_HitCache | None" = None

    # ---- adapter hooks ------------------------------------------------------------------
    @abstractmethod
    def _compile(self, tree: FilterTree | None) -> Any:
        """Compile a FilterTree for this backend."""

    @abstractmethod
    def _create(self, info: CollectionInfo) -> None:
        """Create the collection (vectors, payload indexes) and record ``info`` with it."""

    @abstractmethod
    def _load_info(self) -> CollectionInfo | None:
        """The recorded CollectionInfo, or None when the collection does not exist yet."""

    @abstractmethod
    def _upsert(self, points: Sequence[IndexPoint]) -> None: ...

    @abstractmethod
    def _set_payload(self, flt: Any, payload: dict[str, Any]) -> None: ...

    @abstractmethod
    def _delete_dense(self, flt: Any) -> None:
        """Remove the dense vector (and the ``embedding_space`` payload key) of matching points."""

    @abstractmethod
    def _count(self, flt: Any) -> int: ...

    @abstractmethod
    def _retrieve(
        self, point_ids: Sequence[str], with_vector: bool = True
    ) -> list[tuple[dict[str, Any], list[float] | None]]:
        """(payload, dense vector or None) of the existing points among ``point_ids``."""

    @abstractmethod
    def _scroll(self, flt: Any, limit: int | None) -> list[dict[str, Any]]:
        """Payloads of matching points (any order)."""

    @abstractmethod
    def _query(self, requests: Sequence[ChannelRequest]) -> list[list[Candidate]]:
        """Run the channel requests (one list of candidates each, best first); each candidate's
        payload holds at least ``chunk_id`` and ``tenant_id`` (full payloads are fetched later
        for the returned hits only)."""

    def _plain_search_bound(self, dimensions: int) -> int:
        """The most eligible points for which this backend's dense search scores every eligible
        point anyway (its planner's full-scan threshold, with a margin): up to it the dense
        request's answer does not depend on its limit, so it is fetched deeper at once instead
        of again at a score tie. 0 (never) by default."""
        return 0

    def _unit_corpus(self) -> Any:
        """A compiled filter no point passes (the IDF corpus of cached-IDF queries), or None when
        the adapter cannot take one (no IDF cache then)."""
        return None

    def close(self) -> None:  # noqa: B027 (optional hook)  # pragma: no cover - adapters override when they hold resources
        """Release the backend."""

    def flush(self) -> None:  # noqa: B027 (optional hook)
        """Persist pending writes (no-op where writes are durable already)."""

    def optimize(self) -> None:  # noqa: B027 (optional hook)
        """Build indexes / merge segments after a bulk load (no-op where not applicable)."""

    def begin_ingest(self) -> None:  # noqa: B027 (optional hook)
        """An ingest starts writing (adapters with completion markers hold them back)."""

    def end_ingest(self, marker: dict[str, Any] | None = None, failed: bool = False) -> None:  # noqa: B027 (optional hook)
        """The ingest ended; ``marker`` describes it, ``failed`` keeps the index marked incomplete."""

    # ---- collection lifecycle -----------------------------------------------------------
    def ensure_collection(self, info: CollectionInfo) -> CollectionInfo:
        """Create the collection with ``info`` if missing; return the recorded info.

        Raises:
            EmbeddingSpaceError: the existing collection has other dimensions than ``info``.
        """
        existing = self._load_info()
        if existing is None:
            self._create(info)
            self.info = info
            return info
        if existing.space.dimensions != info.space.dimensions:
            raise EmbeddingSpaceError(
                f"the collection holds {existing.space.dimensions}-d vectors ({existing.space.key}); "
                f"cannot add {info.space.dimensions}-d vectors ({info.space.key}): use a new store"
            )
        self.info = existing
        return existing

    def require_info(self) -> CollectionInfo:
        """The collection's info. Raises StoreError when the collection was never created."""
        if self.info is None:
            self.info = self._load_info()
        if self.info is None:
            raise StoreError("the vector collection does not exist yet: ingest documents first")
        return self.info

    @property
    def field_types(self) -> dict[str, str]:
        types: dict[str, str] = {f.name: f.type for f in self.schema.chunk_fields}
        types.setdefault(SPACE_FIELD, "str")
        return types

    # ---- tenant scoping (template methods) ----------------------------------------------
    def scoped_filter(
        self, tenant_id: str, where: FilterTree | Mapping[str, Any] | None, current_only: bool
    ) -> FilterTree:
        """``tenant_id = T AND [version = current] AND where``. Raises FilterError/TenantError."""
        check_tenant(tenant_id)
        tree = parse_filter(where) if where is not None else None
        if tree is not None:
            check_fields(tree, self.schema.filter_fields())
        scoped = and_(
            Eq(field="tenant_id", value=tenant_id),
            Eq(field="version", value=CURRENT) if current_only else None,
            tree,
        )
        assert scoped is not None
        return scoped

    def _post_check(self, tenant_id: str, scoped: FilterTree, payloads: Iterable[dict[str, Any]],
                    keys: "_TreeKeys | None" = None) -> set[str]:
        """Second wall. Raises TenantError for another tenant's point; returns the chunk ids
        that fail the rest of the filter in Python (dropped by the caller, never returned)."""
        bad: set[str] = set()
        match = self._matcher(scoped, keys)
        for p in payloads:
            if p.get("tenant_id") != tenant_id:
                raise TenantError(
                    f"the index returned chunk {p.get('chunk_id')!r} of another tenant: refusing"
                )
            if not match(p):
                bad.add(str(p.get("chunk_id")))
        return bad

    def _matcher(self, tree: FilterTree, keys: "_TreeKeys | None" = None) -> Callable[[dict[str, Any]], bool]:
        """``compile_matcher(tree)`` (equal to ``matches(tree, payload)``), kept per tree: the
        post-check tests every returned payload against the search's tree."""
        if self._matcher_cache is None:
            self._matcher_cache = {}
        out: Callable[[dict[str, Any]], bool] = _kept(self._matcher_cache, tree, keys, compile_matcher)
        return out

    def upsert(self, tenant_id: str, points: Sequence[IndexPoint]) -> None:
        """Upsert points that all belong to ``tenant_id``. Raises TenantError otherwise."""
        check_tenant(tenant_id)
        info = self.require_info()
        for p in points:
            if p.payload.get("tenant_id") != tenant_id:
                raise TenantError(f"point {p.chunk_id!r} does not belong to tenant {tenant_id!r}")
            if p.dense is not None:
                if p.dense.shape != (info.space.dimensions,):
                    raise EmbeddingSpaceError(
                        f"point {p.chunk_id!r}: vector of shape {p.dense.shape}, collection "
                        f"expects ({info.space.dimensions},)"
                    )
                if p.payload.get(SPACE_FIELD) is None:
                    raise EmbeddingSpaceError(f"point {p.chunk_id!r} has a vector but no {SPACE_FIELD}")
            elif SPACE_FIELD in p.payload:
                raise EmbeddingSpaceError(f"point {p.chunk_id!r} names a space but has no vector")
        if points:
            self._bump()
            self._upsert(points)

    def set_payload(
        self, tenant_id: str, payload: dict[str, Any], where: FilterTree | Mapping[str, Any] | None = None
    ) -> None:
        """Set payload keys on the tenant's points matching ``where`` (all versions)."""
        if "tenant_id" in payload and payload["tenant_id"] != tenant_id:
            raise TenantError("set_payload cannot move points to another tenant")
        self._bump()
        self._set_payload(self._compile(self.scoped_filter(tenant_id, where, False)), payload)

    def invalidate_vectors(self, tenant_id: str, where: FilterTree | Mapping[str, Any]) -> None:
        """Drop the dense vectors of the tenant's matching points (until re-embedded)."""
        self._bump()
        self._delete_dense(self._compile(self.scoped_filter(tenant_id, where, False)))

    def count(
        self, tenant_id: str, where: FilterTree | Mapping[str, Any] | None = None, current_only: bool = True
    ) -> int:
        """Number of the tenant's points matching ``where``."""
        return self._count_tree(self.scoped_filter(tenant_id, where, current_only))

    def fetch(
        self,
        tenant_id: str,
        where: FilterTree | Mapping[str, Any] | None = None,
        current_only: bool = False,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Payloads of the tenant's points matching ``where``, sorted by chunk id."""
        scoped = self.scoped_filter(tenant_id, where, current_only)
        rows = self._scroll(self._compile(scoped), limit)
        bad = self._post_check(tenant_id, scoped, rows)
        return sorted((r for r in rows if str(r.get("chunk_id")) not in bad), key=lambda p: str(p.get("chunk_id")))

    def _bump(self) -> None:
        self._generation += 1
        self._count_cache = None
        self._hits = None
        if self._idf is not None:
            self._idf.clear()

    def _with_cached_idf(self, lexical: ChannelRequest | None, scoped: FilterTree,
                         keys: "_TreeKeys | None" = None) -> ChannelRequest | None:
        """The lexical request with its filtered IDF taken from the cache (same scores), when
        this object is the only writer and the adapter supports it; else unchanged."""
        if lexical is None or not (self.exclusive_writer and self.idf_cache_enabled):
            return lexical
        unit = self._unit_corpus()
        if unit is None:
            return lexical
        if self._idf is None:
            self._idf = IdfCache()
        key = (keys or _TreeKeys()).of(scoped)
        return self._idf.rewrite(lexical, self._generation, key, lambda: self._count_tree(scoped, keys), unit,
                                 self._query)

    def _count_tree(self, tree: FilterTree, keys: "_TreeKeys | None" = None) -> int:
        """Exact count of points matching ``tree`` (cached per write generation when exclusive)."""
        if not self.exclusive_writer:
            return self._count(self._compile(tree))
        key = (self._generation, (keys or _TreeKeys()).of(tree))
        cache = self._count_cache if self._count_cache is not None else {}
        if key not in cache:
            if len(cache) > 256:
                cache.clear()
            cache[key] = self._count(self._compiled(tree, keys))
        self._count_cache = cache
        return cache[key]

    def _all_in_space(self, space: EmbeddingSpace) -> bool:
        """True when every point of the collection carries a vector in ``space``: a filter's
        embedded count is then its eligible count, without a second count over a compound filter
        (about 10-30 ms at 50,000 points for each new filter). Only the index's only writer knows
        (the count is kept per write generation); otherwise False."""
        if not self.exclusive_writer:
            return False
        return self._count_tree(Not(clause=Eq(field=SPACE_FIELD, value=space.key))) == 0

    def _compiled(self, tree: FilterTree, keys: "_TreeKeys | None" = None) -> Any:
        """``_compile(tree)``, kept per tree (a compiled filter depends only on the tree and the
        schema's field types, never on the data)."""
        if self._compiled_cache is None:
            self._compiled_cache = {}
        return _kept(self._compiled_cache, tree, keys, self._compile)

    def dense_vectors(
        self, tenant_id: str, chunk_ids: Sequence[str], space: EmbeddingSpace | None = None
    ) -> dict[str, np.ndarray]:
        """Stored dense vectors of the tenant's chunks (in ``space`` when given; others absent)."""
        check_tenant(tenant_id)
        out: dict[str, np.ndarray] = {}
        for payload, vec in self._retrieve([point_id(c) for c in chunk_ids]):
            if payload.get("tenant_id") != tenant_id:
                raise TenantError(f"chunk {payload.get('chunk_id')!r} belongs to another tenant")
            if space is not None and payload.get(SPACE_FIELD) != space.key:
                continue
            if vec is not None:
                out[str(payload["chunk_id"])] = np.asarray(vec, dtype=np.float32)
        return out

    # ---- search -------------------------------------------------------------------------
    def search(
        self,
        tenant_id: str,
        query: str,
        profile: RankingProfile,
        where: FilterTree | Mapping[str, Any] | None = None,
        limit: int = 10,
        query_vector: np.ndarray | None = None,
        query_space: EmbeddingSpace | None = None,
        include_superseded: bool = False,
        scope: Mapping[str, Sequence[Any]] | None = None,
    ) -> SearchResult:
        """Pre-filtered hybrid search for one tenant.

        Args:
            tenant_id: the authenticated tenant (always added to the filter).
            query: query text (the lexical channel; also what was embedded).
            profile: the ranking profile (echoed in the result).
            where: extra filter in the shared vocabulary.
            limit: hits to return.
            query_vector: the query embedding, in ``query_space``; None skips the semantic channel.
            include_superseded: also search superseded revisions (documents in force at a past
                as_of, audit); default current only. Staging points are never searched.
            scope: the goal's document scope (field -> values, first = primary), read by a
                profile's ``scope`` feature; it does not filter.

        Returns:
            SearchResult with hits sorted by fused score then chunk id.

        Raises:
            TenantError, FilterError, InputError, StoreError.
        """
        t0 = time.perf_counter()
        if limit < 1:
            raise InputError("limit must be >= 1")
        info = self.require_info()
        scoped = self.scoped_filter(tenant_id, where, not include_superseded)
        if include_superseded:  # every loaded revision, never a half-written (staging) one
            scoped = and_(scoped, In(field="version", values=(CURRENT, SUPERSEDED))) or scoped
        space = query_space or info.space
        space_tree = and_(scoped, Eq(field=SPACE_FIELD, value=space.key))
        assert space_tree is not None
        cap = profile.candidates_per_channel
        fields = profile.features.payload_fields() if profile.features else ()
        keys = _TreeKeys()
        lexical, lexical_reason = lexical_request(info, profile, query, self._compiled(scoped, keys), cap, fields)
        lexical = self._with_cached_idf(lexical, scoped, keys)
        dense, semantic_reason = dense_request(info, profile, query_vector, query_space,
                                               lambda: self._compiled(space_tree, keys), cap, fields)
        counts: tuple[int, int] | None = None
        if dense is not None and self._plain_search_bound(space.dimensions) > 0:
            counts = self._counts(scoped, space_tree, space, keys)
            if counts[1] <= self._plain_search_bound(space.dimensions):
                dense = replace(dense, full_scan=True)
        main = [r for r in (lexical, dense) if r is not None]
        extra = self._authority_requests(profile, scoped, space_tree, lexical, dense, keys)
        timings = {"prepare": _ms(t0)}

        t1 = time.perf_counter()
        # one engine batch: both channels and the authority prefetches
        room = LEXICAL_TIE_HEADROOM if profile.fill_channels else LEXICAL_CUT_HEADROOM  # _fill reads the deeper list
        ranked, fetched = self._query_exact([*main, *extra], [
            room if r is lexical else DENSE_SCAN_HEADROOM if r.full_scan else LEXICAL_CUT_HEADROOM
            for r in [*main, *extra]])
        self._check_candidates(tenant_id, ranked)
        lex, sem = _by_channel(main, ranked[:len(main)])
        if extra:
            lex, sem = _with_extra(lex, sem, *_by_channel(extra, ranked[len(main):]))
        if profile.fill_channels:
            deep = fetched[0] if lexical is not None else []
            lex, sem = self._fill(tenant_id, lexical, dense, lex, sem, space, deep)
        timings["channels"] = _ms(t1)

        t2 = time.perf_counter()
        coverage = self._coverage(counts or self._counts(scoped, space_tree, space, keys), dense is not None,
                                  semantic_reason, lexical_reason, info, space)
        timings["count"] = _ms(t2)

        t3 = time.perf_counter()
        fused, payloads, dropped = self._fuse_checked(tenant_id, scoped, profile, lex, sem, limit,
                                                      (query, info, scope), keys)
        hits = tuple(hit_of(f, payloads[f.chunk_id]) for f in fused)
        timings["fuse"] = _ms(t3)
        timings["total"] = _ms(t0)
        return SearchResult(
            hits=hits,
            profile=profile,
            coverage=coverage,
            candidates={LEXICAL: len(lex), "semantic": len(sem), "dropped_by_post_check": len(dropped)},
            candidates_truncated={LEXICAL: len(lex) >= cap, "semantic": len(sem) >= cap},
            query_space=query_space,
            collection_space=info.space,
            filter=scoped.model_dump(mode="json"),
            timings_ms={k: round(v, 3) for k, v in timings.items()},
        )

    @staticmethod
    def _check_candidates(tenant_id: str, lists: Sequence[Sequence[Candidate]]) -> None:
        """Candidates carry chunk_id + tenant_id: raises TenantError for another tenant's point."""
        for cands in lists:
            for c in cands:
                if c.payload.get("tenant_id") != tenant_id:
                    raise TenantError(f"the index returned chunk {c.chunk_id!r} of another tenant: refusing")

    def _counts(self, scoped: FilterTree, space_tree: FilterTree, space: EmbeddingSpace,
                keys: "_TreeKeys | None" = None) -> tuple[int, int]:
        """(eligible records, eligible records with a vector in ``space``)."""
        eligible = self._count_tree(scoped, keys)
        embedded = 0
        if eligible:
            embedded = eligible if self._all_in_space(space) else self._count_tree(space_tree, keys)
        return eligible, embedded

    def _coverage(
        self,
        counts: tuple[int, int],
        semantic_ok: bool,
        semantic_reason: str | None,
        lexical_reason: str | None,
        info: CollectionInfo,
        space: EmbeddingSpace,
    ) -> Coverage:
        """The coverage of ``counts`` (:meth:`_counts`): how many eligible records there are and
        how many carry a vector in the query's space."""
        eligible, embedded = counts
        if semantic_ok and eligible > 0 and embedded == 0:
            semantic_reason = (
                f"no eligible record has a vector in the query's space {space.key} "
                f"(collection space {info.space.key}): no semantic candidates"
            )
        return Coverage(
            eligible_records=eligible,
            embedded_records=embedded,
            embedding_coverage="full" if embedded == eligible else ("missing" if embedded == 0 else "partial"),
            semantic_skipped_reason=semantic_reason,
            lexical_skipped_reason=lexical_reason,
        )

    def _fuse_checked(
        self,
        tenant_id: str,
        scoped: FilterTree,
        profile: RankingProfile,
        lex: list[Candidate],
        sem: list[Candidate],
        limit: int,
        request: tuple[str, CollectionInfo, Mapping[str, Sequence[Any]] | None] | None = None,
        keys: "_TreeKeys | None" = None,
    ) -> tuple[list[Fused], dict[str, dict[str, Any]], set[str]]:
        """The top ``limit`` fused candidates whose payloads pass the second wall, their payloads,
        and the chunk ids dropped on the way (re-fused without them until none fails).

        Raises:
            TenantError: a payload belongs to another tenant.
        """
        dropped: set[str] = set()
        while True:
            raw = fuse_raw(
                profile,
                [(c.chunk_id, c.score) for c in lex if c.chunk_id not in dropped],
                [(c.chunk_id, c.score) for c in sem if c.chunk_id not in dropped],
            )
            if profile.features is not None and request is not None:
                fused = with_features(profile.features, raw, {c.chunk_id: c.payload for c in [*sem, *lex]},
                                      request[0], request[1].encoder().tokenizer, request[2], limit)[:limit]
            else:
                fused = [fused_of(r) for r in raw[:limit]]
            payloads, passed = self._hit_payloads([f.chunk_id for f in fused], scoped, keys)
            missing = {f.chunk_id for f in fused if f.chunk_id not in payloads}
            # second wall on what is returned: another tenant raises, a filter disagreement
            # between engine and Python (e.g. date vs datetime) is dropped (fail closed)
            fresh = [p for cid, p in payloads.items() if cid not in passed]
            bad = self._post_check(tenant_id, scoped, fresh, keys) | missing
            if self._hits is not None:
                self._hits.passed(scoped, keys, (str(p.get("chunk_id")) for p in fresh), bad)
            if not bad:
                return fused, payloads, dropped
            dropped |= bad

    def _hit_payloads(self, chunk_ids: Sequence[str], scoped: FilterTree, keys: "_TreeKeys | None" = None
                      ) -> tuple[dict[str, dict[str, Any]], frozenset[str]]:
        """(chunk id -> full payload of the existing points among ``chunk_ids``, the chunk ids
        among them whose payload passed the post-check of ``scoped`` before). The index's only
        writer keeps both per write generation (a payload cannot change without a write through
        this object); otherwise every payload is read and none counts as checked."""
        if not self.exclusive_writer:
            return {str(p.get("chunk_id")): p for p, _ in self._retrieve([point_id(c) for c in chunk_ids], False)}, \
                frozenset()
        hits = self._hits
        if hits is None or hits.generation != self._generation:
            hits = self._hits = _HitCache(self._generation)
        generation = self._generation
        out = {c: p for c in chunk_ids if (p := hits.payloads.get(c)) is not None}
        need = [c for c in chunk_ids if c not in out]
        if need:
            read = {str(p.get("chunk_id")): p for p, _ in self._retrieve([point_id(c) for c in need], False)}
            out.update(read)
            if generation == self._generation:  # no write meanwhile
                hits.keep(read)
        return out, hits.checked(scoped, keys, out)

    def _authority_requests(
        self,
        profile: RankingProfile,
        scoped: FilterTree,
        space_tree: FilterTree,
        lexical: ChannelRequest | None,
        dense: ChannelRequest | None,
        keys: "_TreeKeys | None" = None,
    ) -> list[ChannelRequest]:
        """The authority prefetches of a feature profile: each channel's best
        ``authority_candidates`` points among the authoritative document types (the same filter
        and IDF population, so scores stay comparable; :func:`_with_extra` appends them after the
        channel's own list). None when the profile has none or the schema has no ``doc_type``."""
        w = profile.features
        if w is None or not w.authority_candidates or not w.authority_types \
                or "doc_type" not in self.schema.chunk_field_map:
            return []
        only = In(field="doc_type", values=tuple(w.authority_types))
        reqs = []
        if lexical is not None:
            reqs.append(replace(lexical, filter=self._compiled(_and(scoped, only), keys), limit=w.authority_candidates))
        if dense is not None:
            reqs.append(replace(dense, filter=self._compiled(_and(space_tree, only), keys),
                                limit=w.authority_candidates))
        return reqs

    def _fill(
        self,
        tenant_id: str,
        lexical: ChannelRequest | None,
        dense: ChannelRequest | None,
        lex: list[Candidate],
        sem: list[Candidate],
        space: EmbeddingSpace,
        lex_deep: Sequence[Candidate] = (),
    ) -> tuple[list[Candidate], list[Candidate]]:
        """Both channels' scores for every candidate either found (``fill_channels``): the exact
        cosine of the stored vectors of lexical-only candidates (in the query's space); for
        semantic-only ones their BM25 from the lexical channel's deeper fetch
        (``LEXICAL_TIE_HEADROOM`` x its cap), else 0 (below that depth BM25 counts as 0; on
        SciFact train this equals exact filling, nDCG@10 0.7382 vs 0.7380, without a second
        filtered-IDF query). Returns (lexical, semantic), best first.

        Raises:
            TenantError: a point of another tenant came back.
        """
        by_id = {c.chunk_id: c.payload for c in [*lex, *sem]}
        if dense is not None:
            have = {c.chunk_id for c in sem}
            need = sorted({c.chunk_id for c in lex} - have)
            if need:
                vecs = self.dense_vectors(tenant_id, need, space)
                q = np.asarray(dense.vector, dtype=np.float32)
                q = q / (float(np.linalg.norm(q)) or 1.0)
                for cid, v in sorted(vecs.items()):
                    sem.append(Candidate(cid, float(v @ q / (float(np.linalg.norm(v)) or 1.0)), by_id[cid]))
        if lexical is not None:
            have = {c.chunk_id for c in lex}
            deeper = {c.chunk_id: c.score for c in lex_deep}
            lex = lex + [Candidate(c.chunk_id, deeper.get(c.chunk_id, 0.0), c.payload)
                         for c in sem if c.chunk_id not in have]
        key = lambda c: (-c.score, c.chunk_id)  # noqa: E731
        return sorted(lex, key=key), sorted(sem, key=key)

    def _query_exact(
        self, requests: Sequence[ChannelRequest], headroom: Sequence[int] | None = None
    ) -> tuple[list[list[Candidate]], list[list[Candidate]]]:
        """Run the requests (one engine batch) and make each list deterministic under score ties:
        (each request's candidates cut to its limit, everything each request fetched).

        Candidates are ranked by (score desc, chunk id asc). Each request asks the engine for more
        points than the cap (one more for dense; for BM25, whose scores tie often on templated
        text, and for a ``full_scan`` dense request, its ``headroom`` times the cap plus one,
        default ``LEXICAL_TIE_HEADROOM``); while
        the last fetched point ties with the last one inside the cap, more are fetched, so the cut is made by chunk id, never by the engine's
        internal order.
        """
        if not requests:
            return [], []
        rooms = headroom if headroom is not None else [LEXICAL_TIE_HEADROOM] * len(requests)
        first = [r.limit * h + 1 if r.channel == LEXICAL or r.full_scan else r.limit + 1
                 for r, h in zip(requests, rooms)]
        out = self._query([replace(r, limit=f) for r, f in zip(requests, first)])
        final: list[list[Candidate]] = []
        fetched: list[list[Candidate]] = []
        for req, cands, fetch in zip(requests, out, first):
            n = req.limit
            while len(cands) >= fetch and cands[-1].score == cands[n - 1].score:
                fetch *= 2
                cands = self._query([replace(req, limit=fetch)])[0]
            ranked = rank_channel([(c.chunk_id, c.score) for c in cands], n)
            pay = {c.chunk_id: c.payload for c in cands}
            final.append([Candidate(cid, sc, pay[cid]) for cid, sc in ranked])
            fetched.append(cands)
        return final, fetched


class _HitCache:
    """The full payloads of returned hits and the post-check verdicts of (filter, hit), for one
    write generation of an index (its only writer's): a hit returned again under the same
    filter is neither read nor checked again. Payload dicts are shared: read, never modified."""

    #: Most payloads kept (past it the cache starts again empty).
    MAX_POINTS = 4096

    def __init__(self, generation: int) -> None:
        self.generation = generation
        self.payloads: dict[str, dict[str, Any]] = {}
        self._passed: dict[str, set[str]] = {}  # filter key -> chunk ids whose payload passed it

    def keep(self, payloads: Mapping[str, dict[str, Any]]) -> None:
        if len(self.payloads) + len(payloads) > self.MAX_POINTS:
            self.payloads, self._passed = {}, {}
        self.payloads.update(payloads)

    def checked(self, tree: FilterTree, keys: "_TreeKeys | None", payloads: Mapping[str, dict[str, Any]]
                ) -> frozenset[str]:
        """The chunk ids among ``payloads`` whose kept payload passed ``tree`` before."""
        ok = self._passed.get((keys or _TreeKeys()).of(tree))
        if not ok:
            return frozenset()
        return frozenset(c for c, p in payloads.items() if c in ok and self.payloads.get(c) is p)

    def passed(self, tree: FilterTree, keys: "_TreeKeys | None", chunk_ids: Iterable[str], bad: set[str]) -> None:
        """Record that the kept payloads of ``chunk_ids`` (less ``bad``) passed ``tree``."""
        key = (keys or _TreeKeys()).of(tree)
        ok = self._passed.get(key)
        if ok is None:
            if len(self._passed) > 512:
                self._passed = {}
            ok = self._passed[key] = set()
        ok.update(c for c in chunk_ids if c not in bad and c in self.payloads)


class _TreeKeys:
    """The JSON key of each filter tree seen by one search, computed once per tree object (the
    trees are kept referenced, so an object id is never reused for another tree meanwhile)."""

    def __init__(self) -> None:
        self._keys: dict[int, tuple[FilterTree, str]] = {}

    def of(self, tree: FilterTree) -> str:
        hit = self._keys.get(id(tree))
        if hit is None:
            hit = self._keys[id(tree)] = (tree, tree.model_dump_json())
        return hit[1]


def _kept(cache: dict[str, Any], tree: FilterTree, keys: "_TreeKeys | None", make: Callable[[FilterTree], Any]) -> Any:
    """``make(tree)``, kept in ``cache`` by the tree's JSON key (emptied past 512 trees)."""
    key = (keys or _TreeKeys()).of(tree)
    out = cache.get(key)
    if out is None:
        if len(cache) > 512:
            cache.clear()
        out = cache[key] = make(tree)
    return out


def _and(*trees: FilterTree) -> FilterTree:
    out = and_(*trees)
    assert out is not None
    return out


def _by_channel(requests: Sequence[ChannelRequest], lists: Sequence[list[Candidate]]
                ) -> tuple[list[Candidate], list[Candidate]]:
    """(lexical, dense) candidate lists of requests answered in order (empty when absent)."""
    by = {r.channel: res for r, res in zip(requests, lists)}
    return by.get(LEXICAL, []), by.get(DENSE, [])


def _with_extra(lex: list[Candidate], sem: list[Candidate], extra_lex: list[Candidate],
                extra_sem: list[Candidate]) -> tuple[list[Candidate], list[Candidate]]:
    """Each channel's list followed by its extra candidates not already in it."""
    have_l, have_s = {c.chunk_id for c in lex}, {c.chunk_id for c in sem}
    return (lex + [c for c in extra_lex if c.chunk_id not in have_l],
            sem + [c for c in extra_sem if c.chunk_id not in have_s])


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000
