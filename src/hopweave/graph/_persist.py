"""On-disk format of the networkx store: a snapshot plus an append-only journal.

Layout of a graph directory::

    LOCK            flock target: shared while loading, exclusive while writing/compacting
    snapshot.pkl    512-byte JSON header (magic, format, last_seq, payload_len, counts) + pickle
    journal.jsonl   one JSON object per committed write: {"seq", "t", "n", "e"}; fsync'd

Crash safety: a snapshot is written to a temporary file, fsync'd, then ``os.replace``d over the
old one (and the directory fsync'd), so a reader sees the old or the new snapshot, never half of
one. A journal record is one ``write`` of one line; a process killed mid-write leaves at most a
torn last line without its newline, which replay ignores (and the next writer truncates). A
complete line that does not parse is corruption and raises StoreCorruptError. Replay applies only
records with ``seq`` greater than the snapshot's ``last_seq``, so a crash between replacing the
snapshot and truncating the journal is harmless.

The snapshot payload is a pickle: open only store directories you (or hopweave) wrote.
"""

from __future__ import annotations

import fcntl
import gc
import json
import os
import pickle
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from hopweave.errors import StoreCorruptError, StoreError

SNAPSHOT = "snapshot.pkl"
JOURNAL = "journal.jsonl"
LOCK = "LOCK"
MAGIC = "hopweave-networkx-snapshot"
FORMAT = 1
HEADER_SIZE = 512


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def locked(directory: Path, exclusive: bool) -> Iterator[None]:
    """Hold the directory's flock (shared or exclusive) for the block. Creates the directory
    and LOCK file when taking an exclusive lock; a shared lock on a missing directory is a no-op."""
    lock_path = directory / LOCK
    if not exclusive and not lock_path.exists():
        yield
        return
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing releases the flock


def write_snapshot(directory: Path, state: Any, header: dict[str, Any]) -> None:
    """Atomically replace the snapshot with ``state`` (pickled) under ``header``."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob(f".{SNAPSHOT}.*.tmp"):  # left by a killed writer (we hold the lock)
        stale.unlink(missing_ok=True)
    tmp = directory / f".{SNAPSHOT}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(b" " * HEADER_SIZE)
            pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)
            payload_len = f.tell() - HEADER_SIZE
            head = dict(header, magic=MAGIC, format=FORMAT, payload_len=payload_len)
            raw = json.dumps(head, sort_keys=True).encode()
            if len(raw) >= HEADER_SIZE:
                raise StoreError("snapshot header too large")  # pragma: no cover
            f.seek(0)
            f.write(raw + b"\n" + b" " * (HEADER_SIZE - len(raw) - 1))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, directory / SNAPSHOT)
        fsync_dir(directory)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def snapshot_signature(directory: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime_ns) of the snapshot file, or None when there is none."""
    try:
        st = os.stat(directory / SNAPSHOT)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def read_snapshot(directory: Path) -> tuple[dict[str, Any], Any] | None:
    """(header, state) of the snapshot, None when there is none. Raises StoreCorruptError."""
    path = directory / SNAPSHOT
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return None
    with f:
        try:
            header = json.loads(f.read(HEADER_SIZE).decode().strip())
        except ValueError as exc:
            raise StoreCorruptError(
                f"{path}: unreadable snapshot header ({exc}); restore a backup or reload"
            ) from exc
        if header.get("magic") != MAGIC or header.get("format") != FORMAT:
            raise StoreCorruptError(f"{path}: not a hopweave networkx snapshot of format {FORMAT}")
        size = os.fstat(f.fileno()).st_size
        if size != HEADER_SIZE + int(header.get("payload_len", -1)):
            raise StoreCorruptError(f"{path}: snapshot is truncated ({size} bytes); reload the store")
        enabled = gc.isenabled()
        gc.disable()
        try:
            state = pickle.load(f)
        except Exception as exc:
            raise StoreCorruptError(
                f"{path}: snapshot payload is unreadable ({exc}); reload the store"
            ) from exc
        finally:
            if enabled:
                gc.enable()
    return header, state


def journal_size(directory: Path) -> int:
    try:
        return os.stat(directory / JOURNAL).st_size
    except FileNotFoundError:
        return 0


def read_journal(directory: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """Complete records from byte ``offset`` on, and the offset after the last complete one.

    A torn last line (no newline) is ignored. Raises StoreCorruptError for a complete line that
    is not a JSON object with a ``seq``."""
    path = directory / JOURNAL
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return [], 0
    records: list[dict[str, Any]] = []
    pos = 0
    while True:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break  # torn tail (or nothing left)
        line = data[pos:nl]
        if line.strip():
            try:
                rec = json.loads(line)
            except ValueError as exc:
                raise StoreCorruptError(
                    f"{path}: journal record at byte {offset + pos} is corrupt ({exc}); "
                    "restore a backup or reload the store"
                ) from exc
            if not isinstance(rec, dict) or not isinstance(rec.get("seq"), int):
                raise StoreCorruptError(f"{path}: journal record at byte {offset + pos} has no seq")
            records.append(rec)
        pos = nl + 1
    return records, offset + pos


def append_journal(directory: Path, good_offset: int, record: dict[str, Any]) -> int:
    """Append one record at ``good_offset`` (dropping any torn tail beyond it), fsync, and
    return the new end offset. The caller holds the exclusive lock."""
    line = (json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
    path = directory / JOURNAL
    created = not path.exists()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if os.fstat(fd).st_size != good_offset:
            os.ftruncate(fd, good_offset)
        os.lseek(fd, good_offset, os.SEEK_SET)
        view = memoryview(line)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(directory)
    return good_offset + len(line)


def reset_journal(directory: Path) -> None:
    """Atomically replace the journal with an empty one (after a snapshot that includes it)."""
    tmp = directory / f".{JOURNAL}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, directory / JOURNAL)
    fsync_dir(directory)
