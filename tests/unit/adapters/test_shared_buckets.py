"""The rate-limit buckets the workers of ``hopweave serve --workers N`` share: one count per key
across processes (a real second process spends from the same table), all or none, refill,
recycling of full buckets, damaged slots, a table that stays locked, and a file that is not a
table."""

from __future__ import annotations

import fcntl
import math
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hopweave.adapters import shared_buckets
from hopweave.adapters.identity import RateLimiter
from hopweave.adapters.shared_buckets import SharedBuckets
from hopweave.errors import InputError, RateLimitedError, StoreUnavailableError


def test_two_processes_spend_from_one_bucket(tmp_path: Path) -> None:
    path = tmp_path / "buckets"
    here = SharedBuckets(path)
    now = time.monotonic()
    code = ("import sys, time; from hopweave.adapters.shared_buckets import SharedBuckets; "
            "b = SharedBuckets(sys.argv[1]); t = float(sys.argv[2]); "
            "print([b.take([('tenant\\0deltabank', 4.0)], t) for _ in range(3)])")
    out = subprocess.run([sys.executable, "-c", code, str(path), repr(now)], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[0.0, 0.0, 0.0]"  # 3 of the burst of 4, in the other process
    assert here.take([("tenant\0deltabank", 4.0)], now) == 0.0  # the 4th, here
    wait = here.take([("tenant\0deltabank", 4.0)], now)
    assert wait == pytest.approx(0.25)  # the 5th waits for a token at 4 per second
    assert here.take([("tenant\0northbank", 4.0)], now) == 0.0  # another key has its own bucket
    assert here.take([("tenant\0deltabank", 4.0)], now + 0.25) == 0.0  # refilled
    here.close()


def test_all_or_none_and_unlimited_keys(tmp_path: Path) -> None:
    b = SharedBuckets(tmp_path / "buckets")
    assert b.take([("caller\0a", 1.0)], 10.0) == 0.0  # the caller's one token
    assert b.take([("tenant\0t", 2.0), ("caller\0a", 1.0)], 10.0) == pytest.approx(1.0)
    # refused on the caller: the tenant's tokens were not spent
    assert b.take([("tenant\0t", 2.0)], 10.0) == 0.0
    assert b.take([("tenant\0t", 2.0)], 10.0) == 0.0
    assert b.take([("tenant\0t", 2.0)], 10.0) > 0
    assert b.take([("caller\0x", 0.0)], 10.0) == 0.0  # a rate of 0 is not limited
    b.close()


def test_full_buckets_make_room_and_a_draining_one_is_kept(tmp_path: Path) -> None:
    b = SharedBuckets(tmp_path / "buckets", slots=4)
    assert b.slots == 4
    assert b.take([("k0", 0.01)], 0.0) == 0.0  # k0's one token spent: full again at t = 100
    for i in range(1, 40):  # 39 other keys, one at a time, each full again a second later
        assert b.take([(f"k{i}", 1.0)], 2.0 * i) == 0.0
    # 40 keys in 4 slots: the full ones made room, k0's draining bucket was kept
    assert b.take([("k0", 0.01)], 80.0) == pytest.approx(20.0)
    assert b.take([("k0", 0.01)], 100.0) == 0.0


def test_a_damaged_slot_counts_as_empty_and_a_foreign_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "buckets"
    b = SharedBuckets(path, slots=1)
    assert b.take([("k", 1.0)], 0.0) == 0.0
    b.close()
    raw = bytearray(path.read_bytes())
    struct.pack_into("<d", raw, 8, math.nan)  # the tokens of the one slot
    path.write_bytes(bytes(raw))
    b = SharedBuckets(path)
    assert b.take([("k", 1.0)], 0.0) == 0.0  # a new full bucket, not NaN tokens
    b.close()
    other = tmp_path / "notes.txt"
    other.write_text("not a table")
    with pytest.raises(InputError, match="not a rate-limit table"):
        SharedBuckets(other)
    with pytest.raises(InputError):
        SharedBuckets(tmp_path / "b2", slots=0)


def test_a_table_that_stays_locked_is_a_typed_error_in_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "buckets"
    b = SharedBuckets(path)
    monkeypatch.setattr(shared_buckets, "LOCK_TIMEOUT_S", 0.1)
    fd = os.open(path, os.O_RDWR)  # another open file: another holder, as another process is
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        t = time.monotonic()
        with pytest.raises(StoreUnavailableError, match="locked"):
            b.take([("k", 1.0)])
        assert time.monotonic() - t < 2.0
    finally:
        os.close(fd)
    assert b.take([("k", 1.0)]) == 0.0
    b.close()


def test_limiters_of_two_workers_on_one_table_allow_the_stated_rate_once(tmp_path: Path) -> None:
    now = [100.0]
    path = tmp_path / "buckets"
    a = RateLimiter(per_tenant=4, clock=lambda: now[0], processes=2, shared=SharedBuckets(path))
    b = RateLimiter(per_tenant=4, clock=lambda: now[0], processes=2, shared=SharedBuckets(path))
    assert a.per_tenant == 4  # the whole rate in each: the table counts it once
    for _ in range(4):  # one connection: every request reaches worker a, which allows all 4
        a.take("deltabank", "maria")
    with pytest.raises(RateLimitedError) as err:
        b.take("deltabank", "maria")
    assert err.value.retry_after_s == pytest.approx(0.25) and b.refused == 1
    b.take("northbank", "nb")
