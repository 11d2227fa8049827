"""``hopweave serve --workers N`` (issue 13): each worker serves a private copy of the embedded
vector index, made only while no other process holds the shard, removed at shutdown; the whole
service on two processes answers, records every trace, and stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from domains import AS_OF, MARIA, UTTERANCE
from serving import stop_serve

from hopweave.adapters.serve_workers import (
    PREFIX,
    check_workers,
    private_vectors,
    remove_private,
    sweep_stale,
    worker_vectors,
)
from hopweave.errors import InputError, StoreUnavailableError
from hopweave.search.edge_index import SHARD_DIR, VECTORS_DIR, read_marker

pytest.importorskip("fastapi", reason="the serve extra is not installed")


@pytest.fixture()
def store(cli_store: Path, tmp_path: Path) -> Path:
    d = tmp_path / "store"
    shutil.copytree(cli_store, d)
    return d


def test_a_private_copy_is_the_same_index_and_is_removed(store: Path, tmp_path: Path) -> None:
    import qdrant_edge as q

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    copy = private_vectors(store, scratch)
    assert copy.parent == scratch and copy.name.startswith(f"{PREFIX}{os.getpid()}-")
    want = read_marker(store / VECTORS_DIR)
    assert want is not None and read_marker(copy / VECTORS_DIR) == want
    shard = q.EdgeShard.load(str(copy / VECTORS_DIR / SHARD_DIR))
    try:
        assert shard.count(q.CountRequest(exact=True)) == want["points"]
    finally:
        shard.close()
    remove_private(copy)
    assert not copy.exists()
    assert worker_vectors(str(store), ":memory:", scratch) is None  # nothing to copy
    with pytest.raises(InputError, match="--workers 1"):
        worker_vectors(str(store), f"qdrant-local://{tmp_path / 'q'}", scratch)


def test_a_shard_open_in_another_process_is_not_copied(store: Path, tmp_path: Path) -> None:
    import qdrant_edge as q

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    shard = q.EdgeShard.load(str(store / VECTORS_DIR / SHARD_DIR))  # holds the shard's WAL lock
    try:
        with pytest.raises(StoreUnavailableError, match="open in another process"):
            private_vectors(store, scratch)
    finally:
        shard.close()
    assert list(scratch.iterdir()) == []  # the half copy is gone


def test_stores_one_process_owns_are_refused_before_starting_workers(store: Path, tmp_path: Path) -> None:
    import qdrant_edge as q

    check_workers(str(store), None, 2)  # nothing holds the shard: fine
    check_workers(f"falkordblite://{tmp_path / 'f'}", None, 1)  # one worker: as before
    with pytest.raises(InputError, match="FalkorDB server"):
        check_workers(f"falkordblite://{tmp_path / 'f'}", None, 2)
    with pytest.raises(InputError, match="Qdrant server"):
        check_workers(str(store), f"qdrant-local://{tmp_path / 'q'}", 2)
    shard = q.EdgeShard.load(str(store / VECTORS_DIR / SHARD_DIR))
    try:
        with pytest.raises(StoreUnavailableError, match="open in another process"):
            check_workers(str(store), None, 2)
    finally:
        shard.close()


def test_copies_of_dead_workers_are_swept(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    stale, mine, other = (tmp_path / f"{PREFIX}{dead}-x", tmp_path / f"{PREFIX}{os.getpid()}-y", tmp_path / "keep")
    for d in (stale, mine, other):
        (d / "vectors").mkdir(parents=True)
    assert sweep_stale(tmp_path) == [stale]
    assert not stale.exists() and mine.exists() and other.exists()


@pytest.mark.slow  # several seconds (processes, CLI runs): the slow suite, which CI also runs
def test_two_workers_serve_record_and_stop_cleanly(store: Path, tmp_path: Path) -> None:
    import httpx

    from hopweave.graph import open_graph_store

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    port = 18000 + os.getpid() % 1000
    env = dict(os.environ, TMPDIR=str(scratch), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.Popen([sys.executable, "-c", "from hopweave.cli import app; app()", "serve", "--graph", str(store),
                             "--port", str(port), "--workers", "2"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    traces: list[str] = []
    try:
        pids: set[int] = set()
        deadline = time.monotonic() + 240
        while len(pids) < 2 and time.monotonic() < deadline and proc.poll() is None:
            try:  # a worker accepts connections only once warm, so every answer is a ready one
                r = httpx.get(f"{url}/readyz", timeout=5)
                assert r.status_code == 200 and r.json()["workers"] == 2
                pids.add(r.json()["pid"])
            except httpx.HTTPError:
                time.sleep(0.5)
        assert len(pids) == 2, proc.stderr.read() if proc.poll() is not None and proc.stderr else pids
        assert len(list(scratch.glob(f"{PREFIX}*"))) == 2  # one private copy per worker
        with httpx.Client(base_url=url, timeout=60) as c:
            chunks = []
            for i in range(6):
                if i == 3:  # what a `hopweave load` does to the old index: swapped out, deleted
                    os.rename(store / VECTORS_DIR, store / ".vectors.prev")
                    shutil.rmtree(store / ".vectors.prev")
                body = {"utterance": f"{UTTERANCE} ({i % 3})", "session": MARIA, "as_of": AS_OF, "record": True,
                        "budget_ms": 60000}  # a loaded test machine must not degrade the search
                res = c.post("/v1/retrieve", json=body)
                assert res.status_code == 200, res.text
                traces.append(res.json()["trace_id"])
                chunks.append([ch["chunk_id"] for ch in res.json()["chunks"]])
            assert chunks[3] and chunks[3] == chunks[0]  # the workers serve their copies, undisturbed

        # SIGTERM with requests in flight: each answered one is complete and its trace is written
        def one(i: int) -> object:
            body = {"utterance": f"{UTTERANCE} [{i}]", "session": MARIA, "as_of": AS_OF, "record": True,
                    "budget_ms": 60000}
            try:
                return httpx.post(f"{url}/v1/retrieve", json=body, timeout=90)
            except httpx.HTTPError as exc:  # not accepted before the socket closed
                return exc

        with ThreadPoolExecutor(max_workers=8) as pool:
            futs = [pool.submit(one, i) for i in range(8)]
            time.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
            late = [f.result() for f in futs]
        assert any(isinstance(r, httpx.Response) and r.status_code == 200 for r in late)  # in flight, finished
        for r in late:
            if isinstance(r, httpx.Response):
                assert r.status_code in (200, 503), r.text  # 503: arrived while shutting down
                if r.status_code == 200:
                    traces.append(r.json()["trace_id"])
    finally:
        stop_serve(proc)
    assert proc.returncode == 0
    assert list(scratch.glob(f"{PREFIX}*")) == []  # every worker removed its copy
    graph = open_graph_store(store)
    assert all(graph.get_node(MARIA["tenant_id"], t) is not None for t in traces)  # no trace lost


@pytest.mark.slow  # two workers start (processes, copies, warm-up): the slow suite, which CI also runs
def test_two_workers_count_a_rate_limit_once_for_a_client_on_one_connection(store: Path, tmp_path: Path) -> None:
    import httpx

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    port = 19000 + os.getpid() % 1000
    env = dict(os.environ, TMPDIR=str(scratch), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.Popen([sys.executable, "-c", "from hopweave.cli import app; app()", "serve", "--graph", str(store),
                             "--port", str(port), "--workers", "2", "--rate-limit-tenant", "2"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        pids: set[int] = set()
        deadline = time.monotonic() + 240
        while len(pids) < 2 and time.monotonic() < deadline and proc.poll() is None:
            try:
                pids.add(httpx.get(f"{url}/readyz", timeout=5).json()["pid"])
            except (httpx.HTTPError, KeyError, ValueError):
                time.sleep(0.5)
        assert len(pids) == 2, proc.stderr.read() if proc.poll() is not None and proc.stderr else pids
        assert len(list(scratch.glob("hopweave-serve-limits-*"))) == 1  # one table for both workers
        time.sleep(1.5)  # the readiness polls above spent no tokens; let any clock skew settle
        body = {"query": "late fee waiver", "top_k": 3, "session": MARIA}
        with httpx.Client(base_url=url, timeout=60) as c:  # one keep-alive connection: one worker
            t = time.monotonic()
            codes = [c.post("/v1/tool/retrieve", json=body).status_code for _ in range(6)]
            elapsed = time.monotonic() - t
        ok = codes.count(200)
        assert set(codes) <= {200, 429}, codes
        # the service's burst of 2 (not the 1 a worker's half of the limit would allow), plus
        # what 2 per second refill while the calls ran, and no more
        assert 2 <= ok <= 2 + int(2 * elapsed) + 1, (codes, elapsed)
    finally:
        stop_serve(proc)
    assert proc.returncode == 0
    assert list(scratch.glob("hopweave-serve-limits-*")) == []  # removed when the server stopped


def test_a_worker_sees_traces_other_processes_commit_within_the_refresh_interval(tmp_path: Path) -> None:
    from domains import write_deltabank_settings

    from hopweave.adapters.serve_workers import GraphRefresher
    from hopweave.graph import open_graph_store
    from hopweave.graph.base import Node

    write_deltabank_settings(tmp_path)
    writer, worker = open_graph_store(tmp_path), open_graph_store(tmp_path)  # two openers, as two processes
    writer.write("t1", [Node("CUST_1", "Customer", {})])
    assert worker.get_node("t1", "CUST_1") is None  # opened before: reads what it loaded, no lock, no I/O
    refresher = GraphRefresher(worker, 0.05)
    refresher.start()
    try:
        writer.write("t1", [Node("DT_1", "DecisionTrace", {"kind": "decision", "summary": "waived"})])
        deadline = time.monotonic() + 30
        while worker.get_node("t1", "DT_1") is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert worker.get_node("t1", "DT_1") is not None and refresher.errors == 0
    finally:
        refresher.stop()
