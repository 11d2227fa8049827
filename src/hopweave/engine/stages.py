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

import time
from concurrent.futures import Executor, Future, TimeoutError as FutureTimeout
from pathlib import Path
from typing import Callable, Mapping, Protocol, Sequence, TypeVar, runtime_checkable

import numpy as np

from hopweave.bounded import stage_deadline
from hopweave.engine.result import Degradation, Stage
from hopweave.errors import TenantError
from hopweave.graph.base import GraphStore
from hopweave.models.filters import FilterTree
from hopweave.models.ranking import RankingProfile, SearchResult
from hopweave.search.embedder import Embedder, EmbeddingSpace
from hopweave.search.index_base import CollectionInfo

T = TypeVar("T")
D = TypeVar("D")
#: A timed stage with less time than this left is not started (it is degraded at once).
MIN_STAGE_S = 0.002


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
        scope: Mapping[str, Sequence[object]] | None = None,
    ) -> SearchResult:
        """Hits for one tenant. Raises TenantError, FilterError, InputError, StoreError."""
        ...

    def require_info(self) -> CollectionInfo:
        """The collection's identity (embedding space, BM25 statistics). Raises StoreError."""
        ...

    def fetch(self, tenant_id: str, where: FilterTree | Mapping[str, object] | None = None,
              current_only: bool = False, limit: int | None = None) -> list[dict[str, object]]:
        """Payloads of the tenant's chunks matching ``where`` (every revision unless
        ``current_only``), sorted by chunk id: what ``replay --as-recorded`` reads. Raises StoreError."""
        ...

    def close(self) -> None: ...


def open_graph(store_dir: str | Path) -> GraphStore:
    """The embedded graph of a store directory (``<dir>/graph``). Raises InputError (no store
    there), StoreCorruptError (a loaded store whose graph snapshot is missing, or an unreadable
    one), StoreError."""
    from hopweave.graph import open_graph_store
    from hopweave.stores.front import check_store_dir

    check_store_dir(store_dir)
    return open_graph_store(store_dir)


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


def _within(work: Callable[[], T], deadline: float) -> Callable[[], T]:
    """``work`` run under the stage deadline ``deadline`` (:func:`hopweave.bounded.stage_deadline`):
    its :func:`~hopweave.bounded.check_deadline` calls stop it once its caller no longer waits."""

    def run() -> T:
        with stage_deadline(deadline):
            return work()

    return run


def run_stage(
    degraded: list[Degradation],
    stage: Stage,
    work: Callable[[], T] | Future[T],
    *,
    default: D,
    what: str,
    fallback: str,
    timeout: float | None = None,
    pool: Executor | None = None,
) -> T | D:
    """Run one stage and own its failure: inline (no ``timeout``), on ``pool`` with a timeout
    (seconds), or wait for an already submitted future. Returns the stage's value, or
    ``default`` after appending a :class:`Degradation` (timeout, or any error typed as
    ``<ErrorType>: <message>``). A TenantError propagates: a tenant problem is never a degraded
    result. A callable run with a timeout runs under that stage deadline (:mod:`hopweave.bounded`):
    its deadline checks stop it when it overruns, so it does not work on past its answer. Raises
    ValueError for a programming error (a callable with a timeout but no pool)."""
    try:
        if isinstance(work, Future):
            return work.result(timeout=max(timeout or 0.0, 0.001))
        if timeout is not None and timeout < MIN_STAGE_S:  # no time left: do not start it
            degraded.append(Degradation(stage=stage, what=what, fallback=fallback,
                                        reason=f"{stage} not started: the request's budget is spent"))
            return default
        if timeout is None:
            return work()
        if pool is None:
            raise ValueError("run_stage: a timed stage needs a pool")
        work = pool.submit(_within(work, time.perf_counter() + timeout))
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
