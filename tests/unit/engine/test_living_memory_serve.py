"""Facts at run time through a real ``hopweave serve --workers 2`` (loopback, temp store): a fact
written with ``POST /v1/facts`` is seen by the next retrieval on EVERY worker within 1 s (the
workers name themselves: ``/healthz`` ``pid`` and the ``x-hopweave-worker`` header of a
retrieval; requests go on fresh connections, two at a time, until both have answered with the
fact), and a trace recorded before the writes still replays byte-identically as recorded
(``hopweave replay --as-recorded``, a separate process). ``HOPWEAVE_LIVING_SERVE_WRITES``
(default 4) sets how many writes are timed; the test prints their median and max delay
(docs/BENCHMARKS.md, "Living memory", quotes a 30-write run)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from domains import MARIA, UTTERANCE

pytest.importorskip("fastapi", reason="the serve extra is not installed")

WRITES = int(os.environ.get("HOPWEAVE_LIVING_SERVE_WRITES", "4"))
HEADER = "x-hopweave-worker"


def _fee(nid: str, amount: float) -> dict[str, Any]:
    ts = (datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0) - timedelta(days=2)).isoformat()
    return {"node": nid, "label": "Event", "properties": {
        "type": "LateFeeCharged", "amount": amount, "timestamp": ts, "status": "posted",
        "summary": f"LateFeeCharged ${amount:g} on {ts[:10]}"}}


def _fee_rows(body: dict[str, Any]) -> set[str]:
    return {r["node_id"] for f in body["facts"] if f["pattern"] == "disputed_fee_event" for r in f["rows"]}


@pytest.mark.slow  # two warm server processes and a replay CLI run: about a minute on a loaded machine
def test_a_fact_is_seen_by_every_worker_within_a_second_and_earlier_traces_replay(
        cli_store: Path, tmp_path: Path) -> None:
    import httpx

    store = tmp_path / "store"
    shutil.copytree(cli_store, store)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    port = 19000 + os.getpid() % 1000
    env = dict(os.environ, TMPDIR=str(scratch), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.Popen([sys.executable, "-c", "from hopweave.cli import app; app()", "serve", "--graph", str(store),
                             "--host", "127.0.0.1", "--port", str(port), "--workers", "2"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    retrieve = {"utterance": UTTERANCE, "session": MARIA, "record": False, "budget_ms": 60000}

    def ask(record: bool = False) -> tuple[int, float, dict[str, Any]]:
        sent = time.monotonic()  # a fresh connection each time: the kernel spreads them over the workers
        r = httpx.post(f"{url}/v1/retrieve", json={**retrieve, "record": record}, timeout=90,
                       headers={"connection": "close"})
        assert r.status_code == 200, r.text
        return int(r.headers[HEADER]), sent, r.json()

    delays: list[float] = []
    try:
        pids: set[int] = set()
        deadline = time.monotonic() + 240
        while len(pids) < 2 and time.monotonic() < deadline and proc.poll() is None:
            try:  # a worker accepts connections only once warm
                r = httpx.get(f"{url}/healthz", timeout=5, headers={"connection": "close"})
                pids.add(int(r.json()["pid"]))
            except httpx.HTTPError:
                time.sleep(0.5)
        assert len(pids) == 2, proc.stderr.read() if proc.poll() is not None and proc.stderr else pids
        _, _, before = ask(record=True)  # recorded before any write
        trace = before["trace_id"]
        assert before["recorded"] and not any(i.startswith("EVT_LIVE_") for i in _fee_rows(before))
        with ThreadPoolExecutor(max_workers=2) as pool:
            for k in range(WRITES):
                nid = f"EVT_LIVE_{k}"
                w = httpx.post(f"{url}/v1/facts", timeout=30, headers={"connection": "close"}, json={
                    "tenant_id": MARIA["tenant_id"], "source": "billing", "nodes": [_fee(nid, 10.0 + k)],
                    "edges": [{"edge": "HAS_EVENT", "from": "ACCT_99812", "to": nid}]})
                written = time.monotonic()
                assert w.status_code == 200, w.text
                assert w.json()["nodes_written"] == [nid]
                first_seen: dict[int, float] = {}
                missed_late: list[tuple[int, float]] = []
                stop = written + 20
                while set(first_seen) != pids and time.monotonic() < stop:
                    for pid, sent, body in pool.map(lambda _: ask(), range(2)):
                        if nid in _fee_rows(body):
                            first_seen.setdefault(pid, sent - written)
                        elif sent - written > 1.0:
                            missed_late.append((pid, round(sent - written, 3)))
                assert set(first_seen) == pids, f"write {k}: seen only by {first_seen} of {pids}"
                assert not missed_late, f"write {k}: retrievals sent over 1 s after it did not see it: {missed_late}"
                delays.append(max(first_seen.values()))
        print(f"\nvisibility on both workers after POST /v1/facts, {WRITES} writes: median "
              f"{statistics.median(delays) * 1000:.0f} ms, max {max(delays) * 1000:.0f} ms")
        assert max(delays) <= 1.0, delays

        again = subprocess.run([sys.executable, "-c", "from hopweave.cli import app; app()", "replay", "--graph",
                                str(store), "--as-recorded", trace, "--tenant", MARIA["tenant_id"], "--json"],
                               env=env, capture_output=True, text=True, timeout=180)
        assert again.returncode == 0, again.stderr or again.stdout
        rebuilt = json.loads(again.stdout)
        assert rebuilt["identical"] and rebuilt["text"] == before["context"]["text"]  # byte for byte
        _, _, after = ask()
        assert after["context"]["text"] != before["context"]["text"]  # the store did change meanwhile
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(90)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 0
