"""``hopweave load`` while ``hopweave serve`` records traces (real processes, loopback, temp
store): every retrieval the service answered as recorded is in the store afterwards, the store
opens and passes ``doctor --deep``, and the load itself succeeds. The second pack extends the
store's schema, so the service must read what the load commits with the merged schema.

A client thread keeps sending recorded retrievals for Maria while a second pack (Acme Mobile) is
loaded into the same store ``HOPWEAVE_LOAD_WHILE_SERVING`` times (default 3), so trace writes
meet the load's hold on the graph lock; then the service stops on SIGTERM and the store is read
back from disk.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from domains import MARIA, UTTERANCE
from engine_store import REPO
from serving import stop_serve, wait_ready

pytest.importorskip("fastapi", reason="the serve extra is not installed")

LOADS = int(os.environ.get("HOPWEAVE_LOAD_WHILE_SERVING", "3"))
CLI = [sys.executable, "-c", "from hopweave.cli import app; app()"]


@pytest.mark.slow  # a warm server process, three pack loads and a doctor run: about a minute loaded
def test_a_load_while_serving_loses_no_recorded_trace(cli_store: Path, tmp_path: Path) -> None:
    import httpx

    from hopweave.engine import record as trace_record
    from hopweave.errors import NotFoundError
    from hopweave.graph import open_graph_store

    store = tmp_path / "store"
    shutil.copytree(cli_store, store)
    port = 20000 + os.getpid() % 1000
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.Popen([*CLI, "serve", "--graph", str(store), "--host", "127.0.0.1", "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    recorded: list[str] = []
    failures: list[str] = []
    unrecorded: list[str] = []
    stop = threading.Event()

    t0 = time.monotonic()

    def client() -> None:
        with httpx.Client(timeout=60) as c:
            while not stop.is_set():
                try:
                    r = c.post(f"{url}/v1/retrieve", json={"utterance": UTTERANCE, "session": MARIA,
                                                           "record": True, "budget_ms": 30000})
                except httpx.HTTPError as e:
                    failures.append(f"{time.monotonic() - t0:.2f} s {type(e).__name__}: {e}")
                    continue
                if r.status_code != 200:
                    failures.append(f"{r.status_code} {r.text[:200]}")
                    continue
                body = r.json()
                if body.get("recorded"):
                    recorded.append(body["trace_id"])
                else:
                    unrecorded.append(f"{time.monotonic() - t0:.2f} s {body.get('degraded')} {body.get('trace_id')}")

    loads: list[subprocess.CompletedProcess[str]] = []
    try:
        wait_ready(url, proc)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else "serve exited"
        worker = threading.Thread(target=client, daemon=True)
        worker.start()
        for _ in range(LOADS):
            loads.append(subprocess.run([*CLI, "load", str(REPO / "examples" / "telecom"), "--store", str(store)],
                                        env=env, capture_output=True, text=True, timeout=300))
        time.sleep(1.0)  # a few more recorded retrievals after the last load
        stop.set()
        worker.join(90)
    finally:
        stop.set()
        stop_serve(proc)
    assert proc.returncode == 0
    assert all(ld.returncode == 0 for ld in loads), [ld.stderr[-500:] for ld in loads if ld.returncode]
    assert not failures, failures[:3]
    assert not unrecorded, f"{len(unrecorded)} answers were not recorded: {unrecorded[:2]}"

    assert len(recorded) >= LOADS, recorded
    graph = open_graph_store(store)
    missing: list[str] = []
    try:
        for t in recorded:
            try:
                trace_record.load(graph, MARIA["tenant_id"], t)
            except NotFoundError:
                missing.append(t)
    finally:
        graph.close()
    assert not missing, f"{len(missing)} of {len(recorded)} recorded traces are not in the store: {missing[:3]}"
    doctor = subprocess.run([*CLI, "doctor", "--graph", str(store), "--deep"], env=env, capture_output=True,
                            text=True, timeout=300)
    assert doctor.returncode == 0, doctor.stdout[-1000:] + doctor.stderr[-1000:]
