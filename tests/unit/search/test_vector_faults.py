"""Fault injection on the embedded vector index: crashes mid-ingest, interrupted swaps, tampered
markers, a full disk, a busy rebuild lock. Each ends in a typed error or a usable index: never an
empty or half-built index served silently."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hopweave.errors import StoreBusyError, StoreCorruptError, StoreError, StoreIncompleteError, StoreIOError
from hopweave.models.documents import Document
from hopweave.search import staging
from hopweave.search.edge_index import (
    COMPLETE_FILE,
    INCOMPLETE_FILE,
    PREVIOUS_DIR,
    STAGING_DIR,
    EdgeIndex,
)
from hopweave.search.ingest import Ingestor
from hopweave.search.staging import rebuild_index

HERE = Path(__file__).resolve().parent


def _docs(prefix: str, n: int) -> list[Document]:
    return [
        Document(document_id=f"{prefix}-{i}", tenant_id="t1", title=f"{prefix} policy {i}",
                 text=f"# {prefix} policy {i}\n\n## 1 Scope\nLate fee waiver rules number {i} for {prefix}.\n",
                 metadata={"tier": "Gold"})
        for i in range(n)
    ]


def _doc_ids(store: Path, schema: Any) -> set[str]:
    idx = EdgeIndex(store, schema)
    try:
        return {p["document_id"] for p in idx.fetch("t1", None)}
    finally:
        idx.close()


def test_rebuild_swaps_in_a_complete_index_with_a_marker(tmp_path, schema, hash_embedder):
    out = rebuild_index(tmp_path, schema, _docs("a", 3), hash_embedder)
    assert out["documents"] == 3 and out["points"] == out["chunks"] > 0 and len(out["inputs_sha256"]) == 64
    marker = json.loads((tmp_path / "vectors" / COMPLETE_FILE).read_text())
    assert marker["points"] == out["points"] and marker["documents"] == 3
    assert not (tmp_path / "vectors" / INCOMPLETE_FILE).exists()
    assert not (tmp_path / STAGING_DIR).exists() and not (tmp_path / PREVIOUS_DIR).exists()
    assert _doc_ids(tmp_path, schema) == {"a-0", "a-1", "a-2"}
    # a full rebuild replaces: a removed document does not linger
    rebuild_index(tmp_path, schema, _docs("b", 2), hash_embedder)
    assert _doc_ids(tmp_path, schema) == {"b-0", "b-1"}
    # incremental keeps the existing points
    out = rebuild_index(tmp_path, schema, _docs("c", 1), hash_embedder, incremental=True)
    assert _doc_ids(tmp_path, schema) == {"b-0", "b-1", "c-0"} and out["kept_previous"]


_KILLED = r"""
import sys, time
sys.path.insert(0, sys.argv[3])
sys.path.insert(0, sys.argv[3] + "/../../shared")
from search_fixtures import HashEmbedder
from hopweave.models.documents import Document
from hopweave.models.schema import GraphSchema
from domains import deltabank_schema
from hopweave.search.edge_index import EdgeIndex
from hopweave.search.ingest import Ingestor
mode, store = sys.argv[1], sys.argv[2]
schema = deltabank_schema()
class Slow(HashEmbedder):
    def embed(self, texts, batch_size=64):
        return super().embed(texts, batch_size)
docs = [Document(document_id=f"k-{i}", tenant_id="t1", title=f"k {i}", text=f"killed ingest document {i}",
                 metadata={"tier": "Gold"}) for i in range(400)]
def progress(stage, done, total):
    if stage == "writing" and done >= 64:
        print("writing", flush=True)
        time.sleep(30)
if mode == "staged":
    from hopweave.search.staging import rebuild_index
    rebuild_index(store, schema, docs, Slow(), progress=progress, batch_size=16)
else:
    idx = EdgeIndex(store, schema)
    Ingestor(idx, Slow(), batch_size=16).ingest(docs, progress=progress)
"""


def _run_killed(mode: str, store: Path) -> None:
    p = subprocess.Popen([sys.executable, "-c", _KILLED, mode, str(store), str(HERE)], stdout=subprocess.PIPE)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == b"writing"
    finally:
        p.kill()
        p.wait(timeout=30)


def test_sigkill_during_a_rebuild_keeps_the_previous_index_and_a_rerun_completes(tmp_path, schema, hash_embedder):
    rebuild_index(tmp_path, schema, _docs("a", 3), hash_embedder)
    _run_killed("staged", tmp_path)
    assert (tmp_path / STAGING_DIR).exists()  # the half-built index was left aside, never swapped in
    assert not (tmp_path / STAGING_DIR / COMPLETE_FILE).exists()
    assert _doc_ids(tmp_path, schema) == {"a-0", "a-1", "a-2"}  # the previous complete index serves
    rebuild_index(tmp_path, schema, _docs("b", 4), hash_embedder)  # a re-run completes
    assert _doc_ids(tmp_path, schema) == {f"b-{i}" for i in range(4)}
    assert not (tmp_path / STAGING_DIR).exists()


def test_sigkill_during_the_first_rebuild_leaves_no_index_not_an_empty_one(tmp_path, schema):
    _run_killed("staged", tmp_path)
    with pytest.raises(StoreError, match="no vector collection"):
        EdgeIndex(tmp_path, schema).count("t1")


def test_sigkill_during_an_in_place_ingest_is_refused_typed(tmp_path, schema, hash_embedder):
    rebuild_index(tmp_path, schema, _docs("a", 3), hash_embedder)
    _run_killed("inplace", tmp_path)
    assert (tmp_path / "vectors" / INCOMPLETE_FILE).exists()
    with pytest.raises(StoreIncompleteError, match="re-run"):
        EdgeIndex(tmp_path, schema).count("t1")
    out = rebuild_index(tmp_path, schema, _docs("b", 2), hash_embedder, incremental=True)
    assert out["previous"] == "incomplete" and not out["kept_previous"]  # never built on a torn index
    assert _doc_ids(tmp_path, schema) == {"b-0", "b-1"}


def _half_swapped(tmp_path: Path, schema: Any, embedder: Any, staging_complete: bool) -> None:
    """A store killed between the two renames of a swap: vectors -> .vectors.prev done,
    .vectors.staging -> vectors not."""
    rebuild_index(tmp_path, schema, _docs("a", 2), embedder)
    root = tmp_path / STAGING_DIR
    idx = EdgeIndex(tmp_path, schema, root=root)
    Ingestor(idx, embedder).ingest(_docs("b", 3))
    idx.close()
    if not staging_complete:
        (root / COMPLETE_FILE).unlink()
        (root / INCOMPLETE_FILE).write_text("killed")
    os.rename(tmp_path / "vectors", tmp_path / PREVIOUS_DIR)


@pytest.mark.parametrize("staging_complete,expect", [(True, "b"), (False, "a")])
def test_a_swap_interrupted_between_renames_recovers_on_open(tmp_path, schema, hash_embedder, staging_complete, expect):
    _half_swapped(tmp_path, schema, hash_embedder, staging_complete)
    ids = _doc_ids(tmp_path, schema)
    assert ids and all(i.startswith(expect + "-") for i in ids)


def test_tampered_or_missing_markers_are_refused(tmp_path, schema, hash_embedder):
    rebuild_index(tmp_path, schema, _docs("a", 2), hash_embedder)
    marker_path = tmp_path / "vectors" / COMPLETE_FILE
    marker = json.loads(marker_path.read_text())
    marker_path.write_text(json.dumps(dict(marker, points=marker["points"] + 5)))
    with pytest.raises(StoreCorruptError, match="holds .* points"):
        EdgeIndex(tmp_path, schema).count("t1")
    marker_path.write_text("{broken")
    with pytest.raises(StoreCorruptError, match=COMPLETE_FILE):
        EdgeIndex(tmp_path, schema).count("t1")
    marker_path.unlink()  # an index from an interrupted (or pre-marker) ingest
    with pytest.raises(StoreIncompleteError, match="no completion marker"):
        EdgeIndex(tmp_path, schema).count("t1")


def test_a_failed_ingest_is_never_marked_complete(tmp_path, schema, hash_embedder, monkeypatch):
    rebuild_index(tmp_path, schema, _docs("a", 2), hash_embedder)
    idx = EdgeIndex(tmp_path, schema)
    calls = {"n": 0}
    real = EdgeIndex._set_payload

    def failing(self: EdgeIndex, flt: Any, payload: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("backend died mid-ingest")
        real(self, flt, payload)

    monkeypatch.setattr(EdgeIndex, "_set_payload", failing)
    with pytest.raises(RuntimeError):
        Ingestor(idx, hash_embedder, batch_size=1).ingest(_docs("b", 4))
    idx.close()  # a clean close after a failed ingest must not bless the partial writes
    assert (tmp_path / "vectors" / INCOMPLETE_FILE).exists()
    with pytest.raises(StoreIncompleteError):
        EdgeIndex(tmp_path, schema).count("t1")


def test_rebuild_failure_keeps_the_previous_index(tmp_path, schema, hash_embedder, monkeypatch):
    rebuild_index(tmp_path, schema, _docs("a", 2), hash_embedder)
    real_rename = os.rename

    def full(src: Any, dst: Any) -> None:
        if str(src).endswith(STAGING_DIR):
            raise OSError(errno.ENOSPC, "No space left on device", str(src))
        real_rename(src, dst)

    monkeypatch.setattr(staging.os, "rename", full)
    with pytest.raises(StoreIOError, match="disk is full") as ei:
        rebuild_index(tmp_path, schema, _docs("b", 2), hash_embedder)
    assert ei.value.errno == errno.ENOSPC
    assert not (tmp_path / STAGING_DIR).exists()  # the failed build's space is given back
    monkeypatch.undo()
    assert _doc_ids(tmp_path, schema) == {"a-0", "a-1"}  # the previous index was put back


def test_marker_write_on_a_full_disk_is_typed(tmp_path, schema, hash_embedder, monkeypatch):
    import hopweave.search.edge_index as E

    class FullOs:
        def __getattr__(self, name: str) -> Any:
            if name == "fsync":
                def fsync(_fd: int) -> None:
                    raise OSError(errno.ENOSPC, "No space left on device")
                return fsync
            return getattr(os, name)

    monkeypatch.setattr(E, "os", FullOs())
    idx = EdgeIndex(tmp_path, schema)
    with pytest.raises(StoreIOError):
        Ingestor(idx, hash_embedder).ingest(_docs("a", 1))


_HOLD = r"""
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)
"""


def test_rebuild_while_another_rebuild_holds_the_lock_is_busy(tmp_path, schema, hash_embedder):
    tmp_path.mkdir(exist_ok=True)
    p = subprocess.Popen([sys.executable, "-c", _HOLD, str(tmp_path / staging.LOCK_FILE)], stdout=subprocess.PIPE)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == b"locked"
        with pytest.raises(StoreBusyError, match="rebuilding"):
            rebuild_index(tmp_path, schema, _docs("a", 1), hash_embedder, lock_timeout_s=0.3)
    finally:
        p.kill()
        p.wait(timeout=10)
