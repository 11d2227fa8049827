"""Fault injection on the networkx store: disk full, lock held, missing/corrupt/forged files.

Every case ends in a typed StoreError (naming the file) or a usable store: never a hang, a raw
OSError/ValueError/KeyError, silently lost data, or code run from a store file.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from domains import SCHEMA_FILE
from graph_helpers import small_graph

from hopweave.errors import StoreBusyError, StoreCorruptError, StoreError, StoreIOError
from hopweave.graph import _persist as P
from hopweave.graph._columns import SECTIONS
from hopweave.graph.base import Edge, Node
from hopweave.graph.networkx_store import NetworkxGraphStore


def _open(path: Path, schema: Any, **kw: Any) -> NetworkxGraphStore:
    return NetworkxGraphStore.open(path, schema, **kw)


def _built(tmp_path: Path, schema: Any, compact: bool = True) -> Path:
    d = tmp_path / "graph"
    s = _open(d, schema)
    small_graph(s)
    if compact:
        s.compact()
    s.close()
    return d


class _FaultyOs:
    """The os module with one function replaced (only inside ``_persist``)."""

    def __init__(self, **overrides: Any) -> None:
        self._over = overrides

    def __getattr__(self, name: str) -> Any:
        return self._over.get(name) or getattr(os, name)


def _raise(code: int) -> Any:
    def f(*_a: Any, **_k: Any) -> Any:
        raise OSError(code, os.strerror(code))
    return f


# ---- disk full / I/O errors -----------------------------------------------------------------
@pytest.mark.parametrize("fn,code", [("write", errno.ENOSPC), ("fsync", errno.ENOSPC), ("fsync", errno.EIO)])
def test_journal_append_failure_is_typed_and_writes_nothing(tmp_path, schema, monkeypatch, fn, code):
    d = _built(tmp_path, schema, compact=False)
    s = _open(d, schema)
    size = (d / P.JOURNAL).stat().st_size
    monkeypatch.setattr(P, "os", _FaultyOs(**{fn: _raise(code)}))
    with pytest.raises(StoreIOError) as ei:
        s.write("t1", [Node("C9", "Customer", {"name": "Zed"})])
    assert ei.value.errno == code and str(d / P.JOURNAL) in str(ei.value)
    assert ("disk is full" if code == errno.ENOSPC else "I/O error") in str(ei.value)
    assert s.get_node("t1", "C9") is None  # not applied in memory
    monkeypatch.undo()
    assert (d / P.JOURNAL).stat().st_size == size  # the torn record was cut again
    assert _open(d, schema).get_node("t1", "C9") is None
    s.write("t1", [Node("C9", "Customer", {"name": "Zed"})])  # disk freed: the store goes on
    assert _open(d, schema).get_node("t1", "C9") is not None


def test_snapshot_write_failure_keeps_the_old_snapshot(tmp_path, schema, monkeypatch):
    d = _built(tmp_path, schema)
    s = _open(d, schema)
    s.write("t1", [Node("C9", "Customer", {"name": "Zed"})])
    before = (d / P.SNAPSHOT).read_bytes()
    monkeypatch.setattr(P, "os", _FaultyOs(fsync=_raise(errno.ENOSPC)))
    with pytest.raises(StoreIOError, match="disk is full"):
        s.compact()
    monkeypatch.undo()
    assert (d / P.SNAPSHOT).read_bytes() == before
    assert not list(d.glob(".*.tmp"))
    assert _open(d, schema).get_node("t1", "C9") is not None  # still in the journal


def test_unreadable_snapshot_makes_metagraph_revision_raise_a_store_error(tmp_path, schema):
    d = _built(tmp_path, schema)
    (d / P.SNAPSHOT).unlink()
    (d / P.SNAPSHOT).mkdir()  # open() now fails with IsADirectoryError
    s = NetworkxGraphStore(d, schema)
    with pytest.raises(StoreIOError, match=str(d / P.SNAPSHOT)):
        s.metagraph_revision()


def test_store_path_that_is_a_file_is_a_typed_error(tmp_path, schema):
    f = tmp_path / "not_a_dir"
    f.write_text("x")
    with pytest.raises(StoreError):
        _open(f, schema)
    with pytest.raises(StoreError):
        NetworkxGraphStore(f, schema).write("t1", [Node("C1", "Customer", {})])


def test_missing_directory_is_an_empty_store_created_on_write(tmp_path, schema):
    d = tmp_path / "nowhere" / "graph"
    s = _open(d, schema)
    assert s.stats()["nodes"] == 0
    s.write("t1", [Node("C1", "Customer", {})])
    assert _open(d, schema).get_node("t1", "C1") is not None


# ---- lock held ------------------------------------------------------------------------------
_HOLDER = r"""
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX if sys.argv[2] == "ex" else fcntl.LOCK_SH)
print("locked", flush=True)
time.sleep(60)
"""


@pytest.fixture
def lock_holder(tmp_path):
    procs: list[subprocess.Popen[bytes]] = []

    def hold(lock_path: Path, mode: str = "ex") -> int:
        p = subprocess.Popen([sys.executable, "-c", _HOLDER, str(lock_path), mode], stdout=subprocess.PIPE)
        procs.append(p)
        assert p.stdout is not None and p.stdout.readline().strip() == b"locked"
        return p.pid

    yield hold
    for p in procs:
        p.kill()
        p.wait(timeout=10)


def test_write_with_lock_held_by_another_process_times_out_typed(tmp_path, schema, lock_holder):
    d = _built(tmp_path, schema)
    s = _open(d, schema)
    pid = lock_holder(d / P.LOCK)
    t0 = time.monotonic()
    with pytest.raises(StoreBusyError) as ei:
        s.write("t1", [Node("C9", "Customer", {})], timeout_s=0.3)
    took = time.monotonic() - t0
    assert 0.25 <= took < 2.0
    assert ei.value.lock_path == str(d / P.LOCK) and str(d / P.LOCK) in str(ei.value)
    assert ei.value.holder is not None and f"pid {pid}" in ei.value.holder
    assert s.get_node("t1", "C9") is None


def test_store_default_lock_timeout_applies_to_writes_and_loads(tmp_path, schema, lock_holder):
    d = _built(tmp_path, schema)
    s = _open(d, schema, lock_timeout_s=0.2)
    lock_holder(d / P.LOCK)
    t0 = time.monotonic()
    with pytest.raises(StoreBusyError):
        s.write("t1", [Node("C9", "Customer", {})])
    with pytest.raises(StoreBusyError):
        s.compact()
    assert time.monotonic() - t0 < 3.0
    # a writer never blocks a reader: opening reads the last committed state without the lock
    assert _open(d, schema, lock_timeout_s=0.2).get_node("t1", "C1") is not None


def test_shared_lock_holder_does_not_block_readers(tmp_path, schema, lock_holder):
    d = _built(tmp_path, schema)
    lock_holder(d / P.LOCK, "sh")
    assert _open(d, schema, lock_timeout_s=0.2).get_node("t1", "C1") is not None


def test_write_waiting_on_another_thread_times_out(tmp_path, schema):
    s = _open(tmp_path / "graph", schema)
    entered, release = threading.Event(), threading.Event()

    def hog() -> None:
        with s._wlock:
            entered.set()
            release.wait(10)

    t = threading.Thread(target=hog)
    t.start()
    entered.wait(5)
    try:
        with pytest.raises(StoreBusyError):
            s.write("t1", [Node("C9", "Customer", {})], timeout_s=0.1)
    finally:
        release.set()
        t.join()
    s.write("t1", [Node("C9", "Customer", {})], timeout_s=1)
    assert s.get_node("t1", "C9") is not None


# ---- corrupt or forged snapshot -----------------------------------------------------------------
def _to_json_format(d: Path, schema: Any) -> None:
    """Rewrite the store's snapshot in format 2 (one JSON object), as older versions wrote it."""
    s = _open(d, schema, read_only=True)
    g, stats = s.graph, s.stats()
    header = {"last_seq": stats["last_seq"], "nodes": stats["nodes"], "edges": stats["edges"]}
    P.write_snapshot(d, g._node, g._succ, header, fmt=P.JSON_FORMAT)
    s.close()


def _rewrite_snapshot(d: Path, mutate: Any, fix_checksum: bool = True) -> None:
    raw = (d / P.SNAPSHOT).read_bytes()
    head, payload = raw.split(b"\n", 1)
    header = json.loads(head)
    data = json.loads(payload)
    mutate(data)
    payload = json.dumps(data).encode()
    if fix_checksum:
        header.update(payload_len=len(payload), payload_sha256=hashlib.sha256(payload).hexdigest())
    (d / P.SNAPSHOT).write_bytes(json.dumps(header).encode() + b"\n" + payload)


def _set_tenant(data: dict[str, Any]) -> None:
    data["node"]["C1"]["tenant_id"] = "../other tenant"


def _shared_as_tenant(data: dict[str, Any]) -> None:
    data["node"]["TIER_Gold"]["tenant_id"] = "t1"


def _bad_edge(data: dict[str, Any]) -> None:
    data["succ"]["C1"]["A1"] = {"HAS_TIER": {}}  # HAS_TIER cannot point at an Account


def _dangling(data: dict[str, Any]) -> None:
    data["succ"]["C1"]["GHOST"] = {"HOLDS": {}}


@pytest.mark.parametrize("mutate,needle", [
    (lambda d: d["node"]["C1"].update(label="Exploit"), "not in the schema"),
    (_set_tenant, "tenant_id"),
    (_shared_as_tenant, "tenant_id"),
    (_bad_edge, "cannot go from Customer to Account"),
    (_dangling, "missing node"),
    (lambda d: d.pop("succ"), "node/succ"),
    (lambda d: d["node"]["C1"].update(evil="x"), "'evil' is undeclared"),
    (lambda d: d["node"]["C1"].update(name={"$gt": ""}), "'name' is undeclared or not of its declared type"),
    (lambda d: d["node"]["A1"].update(balance="10"), "'balance'"),
    (lambda d: d["node"]["E1"].update(year=True), "'year'"),
])
def test_snapshot_failing_the_schema_is_refused(tmp_path, schema, mutate, needle):
    d = _built(tmp_path, schema)
    _to_json_format(d, schema)
    _rewrite_snapshot(d, mutate)
    with pytest.raises(StoreCorruptError, match=needle) as ei:
        _open(d, schema)
    assert str(d / P.SNAPSHOT) in str(ei.value) and "hopweave load" in str(ei.value)


def test_snapshot_damage_is_refused(tmp_path, schema):
    d = _built(tmp_path, schema)
    good = (d / P.SNAPSHOT).read_bytes()
    flipped = bytearray(good)
    flipped[-5] ^= 0x01
    cases = {
        "checksum": bytes(flipped),
        "truncated": good[: len(good) - 10],
        "header": b"{not json\n" + good.split(b"\n", 1)[1],
        "magic": good.replace(P.MAGIC.encode(), b"someone-elses-format", 1),
        "format": good.replace(f'"format": {P.FORMAT}'.encode(), b'"format": 9', 1),
        "empty": b"",
    }
    for name, raw in cases.items():
        (d / P.SNAPSHOT).write_bytes(raw)
        with pytest.raises(StoreCorruptError) as ei:
            _open(d, schema)
        assert str(d / P.SNAPSHOT) in str(ei.value), name


_MARKER = "pickle-ran.txt"


class _Payload:
    """Unpickling this writes a file: proof that code from the store ran."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> Any:
        return (Path.write_text, (self.target, "pwned"))


def test_a_pickle_store_file_is_refused_and_never_executed(tmp_path, schema):
    d = tmp_path / "graph"
    d.mkdir()
    target = tmp_path / _MARKER
    payload = pickle.dumps(_Payload(target))
    # the retired format: 512-byte JSON header + pickle
    header = json.dumps({"magic": P.MAGIC, "format": 1, "last_seq": 0, "payload_len": len(payload)}).encode()
    (d / P.LEGACY_SNAPSHOT).write_bytes(header + b"\n" + b" " * (511 - len(header)) + payload)
    with pytest.raises(StoreCorruptError, match="pickle"):
        _open(d, schema)
    # the pickle under the new name with a forged, self-consistent header
    forged = {"magic": P.MAGIC, "format": P.JSON_FORMAT, "last_seq": 0, "payload_len": len(payload),
              "payload_sha256": hashlib.sha256(payload).hexdigest()}
    (d / P.SNAPSHOT).write_bytes(json.dumps(forged).encode() + b"\n" + payload)
    with pytest.raises(StoreCorruptError, match="not valid JSON"):
        _open(d, schema)
    # ... and as every section of a format-3 snapshot (the dtypes are hopweave's, not the file's)
    sections = {name: [0, len(payload)] for name in SECTIONS}
    forged3 = dict(forged, format=P.FORMAT, nodes=0, edges=0, sections=sections)
    (d / P.SNAPSHOT).write_bytes(json.dumps(forged3).encode() + b"\n" + payload)
    with pytest.raises(StoreCorruptError, match="not valid JSON"):
        _open(d, schema)
    # ... and as a journal line
    (d / P.SNAPSHOT).unlink()
    (d / P.LEGACY_SNAPSHOT).unlink()
    (d / P.JOURNAL).write_bytes(payload.replace(b"\n", b" ") + b"\n")
    [q] = _open(d, schema).quarantined  # held back as an unreadable line, never unpickled
    assert "not JSON" in q.reason
    assert not target.exists()


def test_no_pickle_in_the_store_code():
    src = Path(P.__file__).resolve().parents[1]
    offenders = [str(p) for p in src.rglob("*.py") if "import pickle" in p.read_text() or "pickle.load" in p.read_text()]
    assert offenders == []


# ---- corrupt or forged journal ------------------------------------------------------------------
def _append(d: Path, rec: Any) -> None:
    with open(d / P.JOURNAL, "ab") as f:
        f.write((rec if isinstance(rec, str) else json.dumps(rec)).encode() + b"\n")


@pytest.mark.parametrize("rec,needle", [
    ({"seq": 99, "t": "t1", "n": [["X1", "Exploit", {"tenant_id": "t1"}, []]], "e": []}, "Exploit"),
    ({"seq": 99, "t": "t1", "n": [["X1", "Customer", {"tenant_id": "t1", "tier": 5}, []]], "e": []}, "tier"),
    ({"seq": 99, "t": "t1", "n": [["X1", "Customer", {"tenant_id": "t1", "evil": "x"}, []]], "e": []}, "evil"),
    ({"seq": 99, "t": "t1", "n": [["X1", "Customer", {"tenant_id": "t2"}, []]], "e": []}, "tenant"),
    ({"seq": 99, "t": "t2", "n": [["C1", "Customer", {"tenant_id": "t2", "name": "Mal"}, []]], "e": []}, "tenant"),
    ({"seq": 99, "t": "t1", "n": [["TIER_Diamond", "Tier", {"tenant_id": "t1"}, []]], "e": []}, "shared"),
    ({"seq": 99, "t": "t2", "n": [], "e": [["C2", "HOLDS", "A1", {}]]}, "visible"),
    ({"seq": 99, "t": "t1", "n": [], "e": [["C1", "HAS_TIER", "A1", {}]]}, "HAS_TIER"),
    ({"seq": 99, "t": "t1", "n": [], "e": [["C1", "HOLDS", "NOPE", {}]]}, "does not exist"),
    ({"seq": 99, "t": "bad tenant!", "n": [], "e": []}, "tenant"),
    ({"seq": "99", "t": "t1"}, "seq"),
    ({"seq": 99, "t": "t1", "n": [["X1", "Customer"]]}, "node entry"),
    ({"seq": 99, "t": "t1", "e": [{"src": "C1"}]}, "edge entry"),
    ({"seq": 99, "t": "t1", "x": 1}, "not a journal record"),
    ([1, 2, 3], "not a journal record"),
    ("{not json", "not JSON"),
])
def test_journal_record_failing_validation_is_quarantined_not_applied(tmp_path, schema, rec, needle):
    d = _built(tmp_path, schema)
    before = _open(d, schema).stats()
    _append(d, rec)
    s = _open(d, schema)  # the store opens: the record is held back, never applied
    [q] = s.quarantined
    assert needle.lower() in q.reason.lower(), q.reason
    assert {k: s.stats()[k] for k in ("nodes", "edges")} == {k: before[k] for k in ("nodes", "edges")}
    assert s.get_node("t1", "X1") is None and s.get_node("t2", "C1") is None
    s.write("t1", [Node("C9", "Customer", {})])  # later writes go on and replay after it
    again = _open(d, schema)
    assert again.get_node("t1", "C9") is not None and len(again.quarantined) == 1


def test_forged_record_appended_by_another_process_is_quarantined_on_catch_up(tmp_path, schema):
    d = _built(tmp_path, schema)
    s = _open(d, schema)
    _append(d, {"seq": 99, "t": "t2", "n": [["C1", "Customer", {"tenant_id": "t2"}, []]], "e": []})
    s.write("t1", [Node("C9", "Customer", {})])
    assert s.get_node("t1", "C1") is not None and s.get_node("t2", "C1") is None
    assert [q.seq for q in s.quarantined] == [99] and s.get_node("t1", "C9") is not None


def test_compaction_keeps_quarantined_records_out_of_the_snapshot(tmp_path, schema):
    from hopweave.graph.networkx_store import held_back

    d = _built(tmp_path, schema)
    _append(d, {"seq": 99, "t": "t1", "n": [["X1", "Customer", {"tenant_id": "t1", "tier": 5}, []]], "e": []})
    s = _open(d, schema)
    s.compact()
    assert s.quarantined == [] and [q["seq"] for q in held_back(d)] == [99]
    again = _open(d, schema)
    assert again.get_node("t1", "X1") is None and again.quarantined == []
    assert again.value_problems()[2] == []


def test_valid_journal_with_removals_replays(tmp_path, schema):
    d = _built(tmp_path, schema, compact=False)
    s = _open(d, schema)
    s.write("t1", [Node("C1", "Customer", {"summary": None, "name": "Ann B"})], [Edge("C1", "A1", "HOLDS")])
    n = _open(d, schema).get_node("t1", "C1")
    assert n is not None and "summary" not in n.props and n.props["name"] == "Ann B"


# ---- SIGKILL during a load --------------------------------------------------------------------
_LOADER = r"""
import sys
from hopweave.graph.base import Node
from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.models.schema import GraphSchema
d, gen, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = NetworkxGraphStore.open(d, GraphSchema.load(sys.argv[4]))  # the pack's schema file
def items():
    for i in range(n):
        if i == 2000:
            print("midway", flush=True)
        yield Node(f"{gen}_{i}", "Customer", {"summary": "z" * 40})
with s.bulk(replace=True) as b:
    b.write("t1", items())
print("done", flush=True)
"""


def _load(d: Path, gen: str, n: int, kill_midway: bool, midway: Any = None) -> None:
    p = subprocess.Popen([sys.executable, "-c", _LOADER, str(d), gen, str(n), str(SCHEMA_FILE)], stdout=subprocess.PIPE)
    assert p.stdout is not None
    try:
        if kill_midway:
            assert p.stdout.readline().strip() == b"midway"
            if midway is not None:
                midway()
            p.kill()
        assert p.wait(timeout=120) == (-9 if kill_midway else 0)
    finally:
        if p.poll() is None:
            p.kill()


def test_sigkill_during_a_graph_load_keeps_the_previous_store_and_a_rerun_completes(tmp_path, schema):
    d = tmp_path / "graph"
    _load(d, "A", 3000, kill_midway=False)

    def read_during_the_load() -> None:  # the loader holds the exclusive lock: readers go on
        t0 = time.monotonic()
        s = _open(d, schema, lock_timeout_s=0.5)
        assert len(s.find_nodes("t1", "Customer")) == 3000 and time.monotonic() - t0 < 5

    _load(d, "B", 400_000, kill_midway=True, midway=read_during_the_load)
    s = _open(d, schema)
    ids = {n.id for n in s.find_nodes("t1", "Customer")}
    assert len(ids) == 3000 and all(i.startswith("A_") for i in ids)
    _load(d, "B", 5000, kill_midway=False)
    ids = {n.id for n in _open(d, schema).find_nodes("t1", "Customer")}
    assert len(ids) == 5000 and all(i.startswith("B_") for i in ids)


# ---- metagraph records in the journal ---------------------------------------------------------
def test_gated_metagraph_writes_replay_and_a_forged_pattern_record_is_quarantined(tmp_path, schema):
    from hopweave.graph.metagraph_io import load_metagraph

    d = tmp_path / "graph"
    s = _open(d, schema)
    # a journal record of gated GoalType/TraversalPattern nodes (+ HAS_PATTERN)
    load_metagraph(s, SCHEMA_FILE.parent / "goals")
    want = [p.name for p in s.patterns()]
    assert want and (d / P.JOURNAL).stat().st_size > 0
    assert [p.name for p in _open(d, schema).patterns()] == want  # replays through the gates again
    # forge a journal record: an existing pattern rewritten with depth 50 and a 10M max_visited
    rec = json.loads((d / P.JOURNAL).read_text().splitlines()[-1])
    nid, label, props, _removed = next(n for n in rec["n"] if n[1] == "TraversalPattern")
    definition = json.loads(props["definition"])
    definition.update(depth=50, budget_ms=10_000, max_visited=10_000_000,
                      edge_sequence=[{"type": "HAS_TIER", "direction": "both"}] * 50)
    _append(d, {"seq": rec["seq"] + 1, "t": "_global",
                "n": [[nid, label, {**props, "definition": json.dumps(definition)}, []]], "e": []})
    s = _open(d, schema)  # opens; the forged record is quarantined, the stored pattern unchanged
    assert [q.seq for q in s.quarantined] == [rec["seq"] + 1] and "gate" in s.quarantined[0].reason
    assert all(p.depth != 50 for p in s.patterns()) and [p.name for p in s.patterns()] == want


# ---- compaction at close (issue 13: a long journal slowed every later open) -------------------
def test_close_compacts_a_journal_past_the_threshold(tmp_path, schema):
    d = tmp_path / "graph"
    s = _open(d, schema, auto_compact_bytes=1)
    small_graph(s)
    before = s.stats()
    assert P.journal_size(d) > 0 and s.auto_compact_bytes == 1
    s.close()
    assert P.journal_size(d) == 0
    again = _open(d, schema)
    assert {k: again.stats()[k] for k in ("nodes", "edges", "last_seq")} == {
        k: before[k] for k in ("nodes", "edges", "last_seq")}
    assert again.get_node("t1", "C1") is not None
    with pytest.raises(StoreError):
        s.get_node("t1", "C1")  # closed all the same


@pytest.mark.parametrize("kw", [{"auto_compact_bytes": None}, {"read_only": True}, {}])
def test_close_keeps_the_journal_when_compaction_is_off_or_not_due(tmp_path, schema, kw):
    d = _built(tmp_path, schema, compact=False)
    size = P.journal_size(d)
    s = _open(d, schema, **kw)
    assert s.get_node("t1", "C1") is not None
    s.close()  # the default threshold (8 MiB) is far above this journal
    assert P.journal_size(d) == size


def test_close_leaves_the_journal_when_another_process_holds_the_lock(tmp_path, schema, lock_holder):
    d = _built(tmp_path, schema, compact=False)
    size = P.journal_size(d)
    s = _open(d, schema, auto_compact_bytes=1)
    lock_holder(d / P.LOCK)
    t0 = time.monotonic()
    s.close()  # best effort: busy is not an error of close
    assert time.monotonic() - t0 < 5.0
    assert P.journal_size(d) == size
    with pytest.raises(StoreError):
        s.get_node("t1", "C1")


# ---- JSON the fast parser refuses still opens ---------------------------------------------------
def test_values_orjson_cannot_carry_replay_and_compact(tmp_path, schema):
    d = tmp_path / "graph"
    s = _open(d, schema)
    big = 2 ** 70  # json writes and reads it; orjson refuses integers beyond 64 bits
    s.write("_global", [Node("TIER_Big", "Tier", {"name": "Big", "rank": big})])
    s.close()
    again = _open(d, schema, auto_compact_bytes=1)
    assert again.get_node("t1", "TIER_Big").props["rank"] == big
    again.close()  # compacts: the snapshot is written by json where orjson cannot
    assert P.journal_size(d) == 0
    assert _open(d, schema).get_node("t1", "TIER_Big").props["rank"] == big


def test_json_properties_accept_what_the_json_module_accepts():
    from hopweave.graph.write_rules import CONVERTERS

    conv = CONVERTERS["json"]
    for text in ('{"a": [1, 2.5, "x"]}', '{"a": NaN}', '"\\ud800"', str(2 ** 70)):
        json.loads(text)
        assert conv(text) == text
    for text in ('{"a": 1', "", "nope"):
        assert conv(text) is not text
