"""Locks of the graph stores, every wait with a deadline.

- :class:`RWLock`: readers-writer lock for the in-memory graph (threads of one process).
- :func:`file_lock`: a flock on a store directory's LOCK file (processes), acquired by polling
  with ``LOCK_NB`` up to a timeout; past it, StoreBusyError names the lock file and its holder.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from hopweave.errors import StoreBusyError, StoreIOError


class RWLock:
    """Many readers or one writer; reentrant for readers of one thread; writers preferred."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer: int | None = None
        self._waiting = 0
        self._local = threading.local()

    @contextmanager
    def read(self, timeout_s: float | None = None) -> Iterator[None]:
        """Hold a read lock; ``timeout_s`` None waits as long as a writer holds it, else
        raises StoreBusyError past it."""
        depth = getattr(self._local, "depth", 0)
        me = threading.get_ident()
        if depth or self._writer == me:
            self._local.depth = depth + 1
            try:
                yield
            finally:
                self._local.depth = depth
            return
        with self._cond:
            ok = self._cond.wait_for(lambda: self._writer is None and not self._waiting, timeout_s)
            if not ok:
                raise StoreBusyError(f"the in-memory graph is being written (waited {timeout_s:g}s); retry")
            self._readers += 1
        self._local.depth = 1
        try:
            yield
        finally:
            self._local.depth = 0
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self, timeout_s: float | None = None) -> Iterator[None]:
        """Hold the write lock; ``timeout_s`` as for :meth:`read`."""
        me = threading.get_ident()
        if self._writer == me:
            yield
            return
        with self._cond:
            self._waiting += 1
            try:
                ok = self._cond.wait_for(lambda: self._writer is None and not self._readers, timeout_s)
            finally:
                self._waiting -= 1
                if self._writer is None:
                    self._cond.notify_all()  # readers held back by our waiting may go on
            if not ok:
                raise StoreBusyError(f"the in-memory graph is in use (waited {timeout_s:g}s for the write lock); retry")
            self._writer = me
        try:
            yield
        finally:
            with self._cond:
                self._writer = None
                self._cond.notify_all()


# ---- inter-process: flock on a file, with a deadline --------------------------------------
#: Default longest wait for a store's file lock (seconds); a store or a call may pass another.
DEFAULT_LOCK_TIMEOUT_S = 10.0
_POLL_MIN_S = 0.002
_POLL_MAX_S = 0.05


def lock_holder(lock_path: Path) -> str | None:
    """Who holds a flock on ``lock_path``, as far as we can tell: the pids listed for its inode
    in ``/proc/locks`` (Linux), else the owner note an exclusive holder wrote into the file.
    Returns None when unknown."""
    try:
        ino = os.stat(lock_path).st_ino
    except OSError:
        return None
    pids: list[str] = []
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            for line in fh:
                parts = line.split()
                # "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF" (a "->" marks a waiter)
                if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5].rsplit(":", 1)[-1] == str(ino):
                    pids.append(f"pid {parts[4]} ({parts[3].lower()})")
    except OSError:
        pass
    if pids:
        return ", ".join(sorted(set(pids)))
    try:
        note = lock_path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return note[:200] or None


def _busy(lock_path: Path, exclusive: bool, timeout_s: float) -> StoreBusyError:
    holder = lock_holder(lock_path)
    who = f"held by {holder}" if holder else "held by another process"
    mode = "exclusive" if exclusive else "shared"
    return StoreBusyError(
        f"could not take the {mode} lock {lock_path} within {timeout_s:g}s ({who}): another process "
        "is loading, compacting or writing this store; retry later, or stop that process",
        lock_path=str(lock_path),
        holder=holder,
    )


@contextmanager
def file_lock(lock_path: Path, exclusive: bool, timeout_s: float | None = None) -> Iterator[None]:
    """Hold a flock on ``lock_path`` (created if missing) for the block.

    Polls with ``LOCK_NB`` and short sleeps until ``timeout_s`` (None = DEFAULT_LOCK_TIMEOUT_S,
    0 = one attempt). An exclusive holder writes a note (pid, time) into the file for
    diagnostics. Raises StoreBusyError past the timeout, StoreIOError when the file cannot be
    opened."""
    timeout = DEFAULT_LOCK_TIMEOUT_S if timeout_s is None else max(0.0, float(timeout_s))
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StoreIOError(
            f"cannot open the lock file {lock_path} ({exc.strerror}); check that the store "
            "directory exists and is writable", path=str(lock_path), errno=exc.errno,
        ) from exc
    try:
        _acquire(fd, lock_path, exclusive, timeout)
        if exclusive:
            _write_note(fd)
        yield
    finally:
        os.close(fd)  # closing releases the flock


def _acquire(fd: int, lock_path: Path, exclusive: bool, timeout: float) -> None:
    op = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
    deadline = time.monotonic() + timeout
    pause = _POLL_MIN_S
    while True:
        try:
            fcntl.flock(fd, op)
            return
        except BlockingIOError:
            pass
        except OSError as exc:
            raise StoreIOError(f"cannot lock {lock_path} ({exc.strerror})", path=str(lock_path),
                               errno=exc.errno) from exc
        left = deadline - time.monotonic()
        if left <= 0:
            raise _busy(lock_path, exclusive, timeout)
        time.sleep(min(pause, left))
        pause = min(pause * 2, _POLL_MAX_S)


def _write_note(fd: int) -> None:
    note = f"pid {os.getpid()} since {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n".encode()
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, note, 0)
    except OSError:  # a note is diagnostics only (e.g. a full disk): never fail the lock for it
        pass
