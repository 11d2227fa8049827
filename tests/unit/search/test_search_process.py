"""The vector shard served from a child process (ProcessEdgeIndex): the same answers as the
in-process index, typed errors across, writes through it, and no hang or orphan when either
side stops."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from search_fixtures import load, random_payloads

from hopweave.errors import FilterError, InputError, StoreIncompleteError, StoreUnavailableError, TenantError
from hopweave.models.filters import And, Eq, In, IsEmpty, Or, Range
from hopweave.search.edge_index import COMPLETE_FILE, INCOMPLETE_FILE, EdgeIndex
from hopweave.search.profiles import get_profile
from hopweave.search.search_process import ProcessEdgeIndex

QUERIES = ["late fee waiver platinum", "fraud claim refund dispute card", "overdraft courtesy hardship",
           "annual fee statement interest escalation"]
FILTERS = [None, Eq(field="tier", value="Platinum"),
           And(clauses=(In(field="policy_type", values=("LateFeeWaiver", "FeeSchedule")), Eq(field="region", value="US"))),
           Or(clauses=(IsEmpty(field="valid_until"), Range(field="valid_until", gt="2025-01-01")))]


def _runs(idx, emb):
    out = []
    for flt in FILTERS:
        for q in QUERIES:
            for prof in ("hybrid_convex_v1", "lexical_only"):
                res = idx.search("t1", q, get_profile(prof), where=flt, limit=8,
                                 query_vector=emb.embed_one(q), query_space=emb.space)
                out.append(res.model_copy(update={"timings_ms": {}}).model_dump_json())
    return out


@pytest.fixture()
def store(tmp_path, schema, hash_embedder):
    idx = EdgeIndex(tmp_path, schema)
    load(idx, random_payloads(300, seed=5), hash_embedder)
    idx.close()
    return tmp_path


def _gone(pid: int, within_s: float) -> bool:
    """The process ended (exited, or a zombie its parent has not reaped yet) within ``within_s``."""
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def _stopped(pid: int, within_s: float) -> None:
    """Wait until every thread of ``pid`` is stopped."""
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        states = [Path(f"/proc/{pid}/task/{t}/stat").read_text().rsplit(")", 1)[1].split()[0]
                  for t in os.listdir(f"/proc/{pid}/task")]
        if all(s == "T" for s in states):
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not stop")


def test_same_results_as_the_in_process_index(store, schema, hash_embedder):
    plain = EdgeIndex(store, schema)
    want = _runs(plain, hash_embedder)
    want_count, want_fetch = plain.count("t1"), plain.fetch("t1", Eq(field="tier", value="Gold"))
    plain.close()
    remote = ProcessEdgeIndex(store, schema)
    try:
        got = _runs(remote, hash_embedder)
        assert remote.pid is not None and remote.pid != os.getpid()
        assert got == want  # byte-identical results, scores and explanations included
        assert remote.count("t1") == want_count and remote.fetch("t1", Eq(field="tier", value="Gold")) == want_fetch
    finally:
        remote.close()


def test_errors_are_typed_on_the_callers_side(store, schema, hash_embedder):
    remote = ProcessEdgeIndex(store, schema)
    try:
        with pytest.raises(FilterError, match="unknown field"):  # checked before anything is sent
            remote.search("t1", "fee", get_profile("lexical_only"), where=Eq(field="nope", value=1), limit=3)
        with pytest.raises(TenantError):
            remote.search(" ", "fee", get_profile("lexical_only"), limit=3)
        with pytest.raises(InputError, match="limit"):  # raised in the child, the same class here
            remote.search("t1", "fee", get_profile("lexical_only"), limit=0)
    finally:
        remote.close()
    (store / "vectors" / INCOMPLETE_FILE).write_text("{}")  # an interrupted ingest
    remote = ProcessEdgeIndex(store, schema)
    try:
        with pytest.raises(StoreIncompleteError, match="unfinished"):  # raised in the child
            remote.search("t1", "fee", get_profile("lexical_only"), limit=3)
    finally:
        remote.close()


def test_writes_go_through_the_child_and_close_marks_the_index_complete(tmp_path, schema, hash_embedder):
    remote = ProcessEdgeIndex(tmp_path, schema)
    load(remote, random_payloads(60, seed=9), hash_embedder)
    written = remote.count("t1")
    assert written > 0
    pid = remote.pid
    remote.close()
    assert pid is not None and _gone(pid, 5)
    assert (tmp_path / "vectors" / COMPLETE_FILE).is_file()
    assert not (tmp_path / "vectors" / INCOMPLETE_FILE).exists()
    plain = EdgeIndex(tmp_path, schema)
    try:
        assert plain.count("t1") == written  # the shard was released: this process opens it
    finally:
        plain.close()


def test_a_killed_child_is_replaced_and_a_stopped_one_times_out(store, schema, hash_embedder):
    # a generous timeout while children start (Python, imports, the shard: over 1 s on a loaded
    # machine), then 1 s for the stopped child
    remote = ProcessEdgeIndex(store, schema, timeout_s=60.0)
    try:
        first = _runs(remote, hash_embedder)[:2]
        pid = remote.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert _gone(pid, 5)
        assert _runs(remote, hash_embedder)[:2] == first  # a new child, the same answers
        pid2 = remote.pid
        assert pid2 is not None and pid2 != pid
        remote.timeout_s = 1.0  # applies to the connections already open too
        os.kill(pid2, signal.SIGSTOP)
        try:
            _stopped(pid2, 5)  # SIGSTOP takes effect when each thread is next scheduled
            t = time.monotonic()
            with pytest.raises(StoreUnavailableError, match="did not answer"):
                remote.search("t1", "a question never asked", get_profile("lexical_only"), limit=3)
            assert time.monotonic() - t < 5  # within timeout_s, never a hang
        finally:
            os.kill(pid2, signal.SIGCONT)
    finally:
        remote.close()


def _script(store: Path, then: str) -> list[str]:
    """A caller in a process of its own: it opens ``idx``, a ProcessEdgeIndex on ``store``, then
    runs ``then``."""
    shared = Path(__file__).resolve().parents[2] / "shared"
    code = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(shared)!r})
        from domains import deltabank_schema
        from hopweave.search.search_process import ProcessEdgeIndex
        idx = ProcessEdgeIndex({str(store)!r}, deltabank_schema())
    """) + textwrap.dedent(then)
    return [sys.executable, "-c", code]


def test_the_child_exits_when_its_caller_dies(store, schema):
    caller = subprocess.Popen(_script(store, """
        idx.count("t1")
        print(idx.pid, flush=True)
        time.sleep(60)
    """), stdout=subprocess.PIPE, text=True)
    try:
        line = caller.stdout.readline() if caller.stdout else ""
        child = int(line)
        caller.kill()
        caller.wait(timeout=10)
        assert _gone(child, 10), "the search process outlived its caller"
    finally:
        caller.kill()


def test_a_script_that_never_closes_leaves_the_shard_released(store, schema):
    out = subprocess.run(_script(store, 'print(idx.count("t1"))'), capture_output=True, text=True, timeout=60,
                         check=True)
    plain = EdgeIndex(store, schema)  # at once: the exiting script closed its search process first
    try:
        assert plain.count("t1") == int(out.stdout)
    finally:
        plain.close()


def test_a_write_through_the_parent_starts_the_childs_caches_again(store, schema, hash_embedder):
    """The child keeps counts, filtered IDF and returned hits' payloads per write generation;
    writes arrive as the parent's hooks, so the child must start a new generation for each."""
    remote = ProcessEdgeIndex(store, schema)
    q, prof = "late fee waiver platinum", get_profile("hybrid_convex_v1")
    try:
        def hits():
            res = remote.search("t1", q, prof, limit=8, query_vector=hash_embedder.embed_one(q),
                                query_space=hash_embedder.space)
            return {h.chunk_id: h for h in res.hits}

        first = hits()
        assert first and all(h.payload.get("region") != "XX" for h in first.values())
        before = remote.count("t1", Eq(field="region", value="XX"))
        remote.set_payload("t1", {"region": "XX"}, Eq(field="document_id", value=next(iter(first.values())).document_id))
        again = hits()
        changed = [h for h in again.values() if h.document_id == next(iter(first.values())).document_id]
        assert changed and all(h.payload["region"] == "XX" for h in changed)  # not the payload kept before
        assert remote.count("t1", Eq(field="region", value="XX")) > before
    finally:
        remote.close()
