"""Token buckets shared by the server processes of one ``hopweave serve --workers N``.

A caller's requests do not spread evenly over the workers: an HTTP client keeps its connection
open, and every request on that connection reaches the worker that accepted it. Buckets kept per
worker, each holding ``1/N`` of the rate, would then give a client with one connection ``1/N`` of
its limit. :class:`SharedBuckets` keeps one bucket per key for all the workers instead: a table of
fixed-size slots in a memory-mapped file, every read-modify-write of it under an exclusive
``flock`` of the file (and a thread lock, since ``flock`` does not order the threads of one
process). Each worker then allows the whole stated rate, and all of them together allow it once.

The file holds numbers only (never code): per slot the key's 64-bit BLAKE2b digest (0: empty), the
bucket's tokens, the ``CLOCK_MONOTONIC`` instant they were counted at (the same clock in every
process of the machine) and the instant the bucket is full again. A slot whose bucket is full by
now is free for another key (a full bucket is what a new key starts with, so nothing is lost).
A key looks at :data:`PROBES` slots from its digest's place; when none is its own, free or full,
it takes the one that fills soonest (that bucket starts full again: at worst one key gets a
fresh burst while the table holds more than its slot count of keys filling at once). A slot
with numbers no process could have written (a worker killed in the middle of writing it) counts
as empty.
"""

from __future__ import annotations

import fcntl
import hashlib
import math
import mmap
import os
import struct
import threading
import time
from pathlib import Path
from typing import Sequence

from hopweave.errors import InputError, StoreIOError, StoreUnavailableError

__all__ = ["LOCK_TIMEOUT_S", "PROBES", "SLOTS", "SharedBuckets"]

#: Slots in a table (the keys that can be refilling at once without recycling).
SLOTS = 65536
#: Slots a key looks at, from its digest's place on.
PROBES = 32
#: Longest wait for the table's lock (every holder keeps it for microseconds).
LOCK_TIMEOUT_S = 1.0
_SLOT = struct.Struct("<Qddd")  # digest, tokens, counted at, full at


def _digest(key: str) -> int:
    d = int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "little")
    return d or 1  # 0 marks an empty slot


class SharedBuckets:
    """The token-bucket table in ``path``, shared by every process that opens it.

    Args:
        path: the table file; created (0600, zeroed) when missing. Its directory must exist.
        slots: slots of a table this call creates (an existing table keeps its own size).

    Raises:
        InputError: ``slots`` is not positive, or ``path`` is not a table (its size is not a
            whole number of slots).
        StoreIOError: the file cannot be created, opened or mapped.
    """

    def __init__(self, path: str | Path, slots: int = SLOTS) -> None:
        if slots < 1:
            raise InputError(f"slots must be >= 1, not {slots}")
        self.path = Path(path)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreIOError(f"cannot open the shared rate-limit table {self.path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                size = os.fstat(fd).st_size
                if size == 0:
                    os.ftruncate(fd, slots * _SLOT.size)
                    size = slots * _SLOT.size
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            if size % _SLOT.size:
                raise InputError(f"{self.path} is not a rate-limit table ({size} bytes is not a whole number of "
                                 f"{_SLOT.size}-byte slots): remove it")
            self._map = mmap.mmap(fd, size)
        except OSError as exc:
            os.close(fd)
            raise StoreIOError(f"cannot map the shared rate-limit table {self.path}: {exc.strerror or exc}") from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self.slots = size // _SLOT.size
        self._lock = threading.Lock()

    def close(self) -> None:
        """Unmap and close the table (the file stays for the other processes)."""
        with self._lock:
            if self._fd >= 0:
                self._map.close()
                os.close(self._fd)
                self._fd = -1

    def take(self, buckets: Sequence[tuple[str, float]], now: float | None = None) -> float:
        """Spend one token of each of ``buckets`` ((key, rate per second) each; the burst is the
        rate, at least 1; a rate <= 0 is not limited) if every one has a token, all or none.

        Returns:
            0.0 when the tokens were spent, else the seconds until every bucket has one (nothing
            spent).

        Raises:
            StoreUnavailableError: the table's lock was not had within :data:`LOCK_TIMEOUT_S`.
            StoreIOError: the table was closed.
        """
        limited = [(k, r) for k, r in buckets if r > 0]
        if not limited:
            return 0.0
        with self._lock:
            if self._fd < 0:
                raise StoreIOError(f"the shared rate-limit table {self.path} is closed")
            self._flock()
            try:
                t = time.monotonic() if now is None else now
                counted = []
                for key, rate in limited:  # each bucket counted (refilled) and written before the next is looked up
                    digest = _digest(key)
                    index, tokens, at = self._slot_of(digest, t)
                    tokens = min(max(rate, 1.0), tokens + (t - at) * rate)
                    self._put(index, digest, tokens, t, rate)
                    counted.append((index, digest, tokens, rate))
                wait = max(0.0 if tokens >= 1.0 else (1.0 - tokens) / rate for _, _, tokens, rate in counted)
                if wait == 0.0:
                    for index, digest, tokens, rate in counted:
                        self._put(index, digest, tokens - 1.0, t, rate)
                return wait
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _flock(self) -> None:
        end = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= end:
                    raise StoreUnavailableError(f"the shared rate-limit table {self.path} stayed locked for "
                                                f"{LOCK_TIMEOUT_S:.0f} s (a stopped server process holds it?)") from None
                time.sleep(0.0002)

    def _put(self, index: int, digest: int, tokens: float, at: float, rate: float) -> None:
        full_at = at + max(0.0, max(rate, 1.0) - tokens) / rate
        _SLOT.pack_into(self._map, index * _SLOT.size, digest, tokens, at, full_at)

    def _slot_of(self, digest: int, now: float) -> tuple[int, float, float]:
        """(slot index, tokens, counted at) of ``digest``'s bucket: its own slot, else a free one
        (a new full bucket), else the one that fills soonest (reset to full)."""
        start = digest % self.slots
        free: int | None = None
        soonest, soonest_at = start, math.inf
        for i in range(min(PROBES, self.slots)):
            index = (start + i) % self.slots
            owner, tokens, at, full_at = _SLOT.unpack_from(self._map, index * _SLOT.size)
            sane = owner != 0 and all(map(math.isfinite, (tokens, at, full_at))) and at <= now + 1.0
            if sane and owner == digest:
                return index, tokens, at
            if free is None and (not sane or full_at <= now):
                free = index
            if sane and full_at < soonest_at:
                soonest, soonest_at = index, full_at
        return (soonest if free is None else free), math.inf, now
