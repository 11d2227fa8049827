"""Crash-safe (re)builds of a store's embedded vector index: build aside, swap in atomically.

:func:`rebuild_index` is what a loader calls. It builds the index in
``<store_dir>/.vectors.staging`` (a fresh collection, or a copy of the current one for an
incremental ingest), marks it complete (``COMPLETE.json``: point count, documents, sha256 of the
inputs), then swaps it in::

    vectors -> .vectors.prev        (rename)
    .vectors.staging -> vectors     (rename, then fsync of the store directory)
    rm -r .vectors.prev

A SIGKILL at any point leaves either the previous complete index or the new complete one in
``vectors``; if it lands between the two renames, :func:`recover` (run by every rebuild and by
:class:`~hopweave.search.edge_index.EdgeIndex` when it opens) finishes the swap, or puts the
previous index back. A half-built staging directory is never served: it has no COMPLETE.json,
and the next rebuild removes it. A rebuild holds ``<store_dir>/vectors.lock`` (flock), so two
rebuilds of one store never interleave.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from hopweave.errors import StoreBusyError, StoreIOError
from hopweave.fileio import copy_sparse
from hopweave.models.documents import Document
from hopweave.models.schema import GraphSchema
from hopweave.search.edge_index import (
    COMPLETE_FILE,
    INCOMPLETE_FILE,
    LOCK_FILE,
    PREVIOUS_DIR,
    STAGING_DIR,
    VECTORS_DIR,
    EdgeIndex,
    read_marker,
    recover,
)
from hopweave.search.embedder import Embedder
from hopweave.search.ingest import Ingestor, IngestReport, inputs_digest

__all__ = ["rebuild_index", "ingest_incremental", "recover", "swap_in"]

DEFAULT_LOCK_TIMEOUT_S = 60.0


def rebuild_index(
    store_dir: str | Path,
    schema: GraphSchema,
    documents: Sequence[Document],
    embedder: Embedder | None,
    *,
    incremental: bool = False,
    optimize: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
    report: IngestReport | None = None,
    **ingest_options: Any,
) -> dict[str, Any]:
    """(Re)build ``<store_dir>/vectors`` from ``documents`` and swap it in atomically.

    Args:
        store_dir: the hopweave store directory (the index lives in ``<store_dir>/vectors``).
        schema: the graph schema (chunk fields, payload indexes).
        documents: validated documents (see :func:`hopweave.search.ingest.load_documents`).
        embedder: the embedder (None: lexical-only points; a new collection needs one).
        incremental: False = the index holds exactly ``documents`` afterwards (a removed
            document does not linger); True = start from the current complete index, keeping
            its points (unchanged documents are not re-embedded, revisions supersede).
        optimize: build HNSW / payload indexes before the swap.
        progress: ``progress(stage, done, total)`` callback.
        lock_timeout_s: longest wait for another rebuild of this store.
        report: an IngestReport to fill in (e.g. the one :func:`load_documents` returned).
        ingest_options: passed to :class:`~hopweave.search.ingest.Ingestor` (max_words, batch_size, ...).

    Returns:
        {"documents", "chunks", "embedded", "points", "inputs_sha256", "incremental",
        "previous", "kept_previous", "seconds", "report"}: ``previous`` is what was in
        ``vectors`` before ("none", "complete", or "incomplete": an interrupted or pre-marker
        index, which an incremental rebuild cannot trust and so starts afresh: ``kept_previous``
        False); ``report`` is the IngestReport as a dict.

    Raises:
        InputError: the documents are inconsistent (nothing is swapped in).
        StoreBusyError: another rebuild holds the lock past ``lock_timeout_s``.
        StoreIOError: the disk is full or failing (the previous index stays in place).
        StoreError: the vector backend failed while writing (the previous index stays in place).
        A failed rebuild removes its staging directory (freeing the space it took).
    """
    t0 = time.perf_counter()
    store = Path(store_dir)
    with _io(store), rebuild_lock(store, lock_timeout_s):
        recover(store, locked=True)
        staging = store / STAGING_DIR
        _remove(staging)
        live = store / VECTORS_DIR
        previous = _previous_state(live)
        try:
            if incremental and previous == "complete":
                shutil.copytree(live, staging, copy_function=copy_sparse)
            report = _build(staging, schema, documents, embedder, optimize, progress, ingest_options, report)
            marker = read_marker(staging) or {}
            swap_in(store)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return {
        "documents": report.documents, "chunks": report.chunks_written, "embedded": report.chunks_embedded,
        "points": marker.get("points"), "inputs_sha256": marker.get("inputs_sha256"),
        "incremental": incremental, "previous": previous, "kept_previous": incremental and previous == "complete",
        "seconds": round(time.perf_counter() - t0, 2), "report": report.as_dict(),
    }


def ingest_incremental(
    store_dir: str | Path, schema: GraphSchema, documents: Sequence[Document], embedder: Embedder | None, **kw: Any
) -> dict[str, Any]:
    """:func:`rebuild_index` with ``incremental=True``: add/revise documents, keep the rest."""
    return rebuild_index(store_dir, schema, documents, embedder, incremental=True, **kw)


def _build(
    root: Path,
    schema: GraphSchema,
    documents: Sequence[Document],
    embedder: Embedder | None,
    optimize: bool,
    progress: Callable[[str, int, int], None] | None,
    options: dict[str, Any],
    report: IngestReport | None = None,
) -> IngestReport:
    index = EdgeIndex(root.parent, schema, root=root)
    try:
        ingestor = Ingestor(index, embedder, **options)
        index.begin_ingest()
        try:
            report = ingestor.ingest(documents, progress=progress, report=report)
            if optimize:
                index.optimize()
        except BaseException:
            index.end_ingest(failed=True)
            raise
        index.end_ingest({"inputs_sha256": inputs_digest(documents, ingestor.max_words),
                          "documents": len(documents)})
        index.flush()
    finally:
        index.close()
    return report


def _previous_state(live: Path) -> str:
    if not live.exists():
        return "none"
    if (live / COMPLETE_FILE).is_file() and not (live / INCOMPLETE_FILE).exists():
        return "complete"
    return "incomplete"


def swap_in(store: Path) -> None:
    """Make the complete staging index the live one (the rebuild lock is held)."""
    staging, live, prev = store / STAGING_DIR, store / VECTORS_DIR, store / PREVIOUS_DIR
    _fsync_tree(staging)
    _remove(prev)
    if live.exists():
        os.rename(live, prev)
    try:
        os.rename(staging, live)
    except OSError:
        if prev.exists() and not live.exists():
            os.rename(prev, live)  # put the previous index back before reporting the failure
        raise
    _fsync(store)
    _remove(prev)


@contextmanager
def rebuild_lock(store: Path, timeout_s: float) -> Iterator[None]:
    """Hold ``<store>/vectors.lock`` exclusively; StoreBusyError past ``timeout_s``."""
    store.mkdir(parents=True, exist_ok=True)
    path = store / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreBusyError(
                        f"another process is rebuilding the vector index of {store} (lock {path} held "
                        f"for over {timeout_s:g}s); wait for it or stop it", lock_path=str(path),
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


@contextmanager
def _io(store: Path) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        where = exc.filename or store
        hint = "the disk is full: free space and" if exc.errno in (28, 122) else f"{exc.strerror or exc}:"
        raise StoreIOError(f"rebuilding the vector index of {store} failed at {where} ({hint} re-run the load); "
                           "the previous index is still in place", path=str(where), errno=exc.errno) from exc


def _remove(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)


def _fsync(directory: Path) -> None:
    from hopweave.fileio import fsync_dir

    fsync_dir(directory)


def _fsync_tree(root: Path) -> None:
    """fsync every file and directory under ``root`` (the index must be on disk before the swap)."""
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync(Path(dirpath))
