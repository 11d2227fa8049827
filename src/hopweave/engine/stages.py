"""The typed contracts of the stages the engine composes, and how the embedded ones are opened.

- understanding: :class:`~hopweave.understand.understander.UnderstandingStage` (returns an
  :class:`~hopweave.understand.models.Understanding`), one per domain;
- documents: :class:`DocumentIndex`, the part of :class:`~hopweave.search.index_base.VectorIndex`
  the engine uses (every VectorIndex is one);
- embeddings: :class:`~hopweave.search.embedder.Embedder`;
- graph: :class:`~hopweave.graph.base.GraphStore`.

:func:`run_stage` is the one place a stage's timeout, fallback and error typing are handled.
"""

from __future__ import annotations

from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Callable, Mapping, Protocol, TypeVar, runtime_checkable

import numpy as np

from hopweave.engine.result import Degradation, Stage
from hopweave.errors import TenantError
from hopweave.graph.base import GraphStore
from hopweave.models.domain import DomainRegistry
from hopweave.models.filters import FilterTree
from hopweave.models.ranking import RankingProfile
from hopweave.search.embedder import Embedder, EmbeddingSpace
from hopweave.models.ranking import SearchResult
from hopweave.search.index_base import CollectionInfo

T = TypeVar("T")


@runtime_checkable
class DocumentIndex(Protocol):
    """Pre-filtered hybrid search over the policy chunks (a VectorIndex)."""

    def search(
        self,
        tenant_id: str,
        query: str,
        profile: RankingProfile,
        where: FilterTree | Mapping[str, object] | None = None,
        limit: int = 10,
        query_vector: np.ndarray | None = None,
        query_space: EmbeddingSpace | None = None,
        include_superseded: bool = False,
    ) -> SearchResult:
        """Hits for one tenant. Raises TenantError, FilterError, InputError, StoreError."""
        ...

    def require_info(self) -> CollectionInfo:
        """The collection's identity (embedding space, BM25 statistics). Raises StoreError."""
        ...

    def close(self) -> None: ...


def open_graph(store_dir: str | Path) -> GraphStore:
    """The embedded graph of a store directory (``<dir>/graph``). Raises StoreError."""
    from hopweave.graph import open_graph_store

    return open_graph_store(store_dir)


def open_index(store_dir: str | Path) -> DocumentIndex | None:
    """The embedded qdrant-edge index of a store directory (``<dir>/vectors``), or None when the
    store has no vector collection (the engine then runs graph-only, flagged degraded)."""
    from hopweave.models.schema import GraphSchema
    from hopweave.models.store_settings import read_store_settings
    from hopweave.search.edge_index import EdgeIndex

    if not (Path(store_dir) / "vectors").is_dir():
        return None
    stored = read_store_settings(store_dir)
    return EdgeIndex(store_dir, stored.schema() if stored is not None else GraphSchema.base())


def store_domains(store_dir: str | Path) -> "DomainRegistry | None":
    """Which domain serves which tenant, as the store's settings file says (None: the store was
    not loaded from a pack)."""
    from hopweave.models.store_settings import read_store_settings

    stored = read_store_settings(store_dir)
    return stored.registry() if stored is not None else None


def index_revision(index: DocumentIndex | None) -> str:
    """A short token identifying the vector collection's contents (space + BM25 statistics):
    ``no-index`` without one, ``unavailable`` when it cannot be read."""
    if index is None:
        return "no-index"
    try:
        info = index.require_info()
    except Exception:  # an unreachable index is reported by the search stage itself
        return "unavailable"
    return f"{info.space.key}|avg_len={info.avg_len:.4f}"


def default_embedder() -> Embedder:
    """The project's offline default embedder (loaded on first use)."""
    from hopweave.search.embedder import default_embedder as make

    return make()


def run_stage(
    degraded: list[Degradation],
    stage: Stage,
    work: Callable[[], T] | Future[T],
    *,
    default: T,
    what: str,
    fallback: str,
    timeout: float | None = None,
    pool: Executor | None = None,
) -> T:
    """Run one stage and own its failure: inline (no ``timeout``), on ``pool`` with a timeout
    (seconds), or wait for an already submitted future. Returns the stage's value, or
    ``default`` after appending a :class:`Degradation` (timeout, or any error typed as
    ``<ErrorType>: <message>``). A TenantError propagates: a tenant problem is never a degraded
    result. Raises ValueError for a programming error (a callable with a timeout but no pool)."""
    try:
        if isinstance(work, Future):
            return work.result(timeout=max(timeout or 0.0, 0.001))
        if timeout is None:
            return work()
        if pool is None:
            raise ValueError("run_stage: a timed stage needs a pool")
        work = pool.submit(work)
        return work.result(timeout=max(timeout, 0.001))
    except FutureTimeout:
        if isinstance(work, Future):
            work.cancel()
        reason = f"{stage} did not finish within {(timeout or 0) * 1000:.0f} ms"
        degraded.append(Degradation(stage=stage, what=what, reason=reason, fallback=fallback))
    except TenantError:
        raise
    except Exception as exc:  # store down, backend or disk error: degrade, never fail
        degraded.append(Degradation(stage=stage, what=what, reason=f"{type(exc).__name__}: {exc}", fallback=fallback))
    return default


def warm_index(index: DocumentIndex, embedder: Embedder) -> None:
    """Open the vector index now (a search as a tenant that owns nothing: no rows, no side
    effect); a missing collection is reported by the first real search instead."""
    from hopweave.search.profiles import get_profile

    try:
        index.search("hopweave-warmup", "warm up", get_profile(None), limit=1,
                     query_vector=embedder.embed(["warm up"])[0], query_space=embedder.space)
    except Exception:  # reported by the first real search
        pass
