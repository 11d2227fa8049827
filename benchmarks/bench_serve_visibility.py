"""Living memory across ``hopweave serve --workers 2``: how long after a ``POST /v1/facts`` write
does the next retrieval on EVERY worker see the new fact?

    python benchmarks/bench_serve_visibility.py [--nodes 3000] [--writes 30] [--port 18931] [--json]

On a fresh DeltaBank store (its generator, ``--nodes``), a real two-worker server (loopback) is
started; each of ``--writes`` writes is one ``POST /v1/facts`` (a LateFeeCharged Event two days
old and its ``HAS_EVENT`` edge from Maria's account), then retrievals of Maria's late-fee question
(as of now, not recorded) go out two at a time on fresh connections (so the kernel spreads them
over the workers, told apart by the ``x-hopweave-worker`` header) until both workers have
returned the new fee in ``disputed_fee_event``. A write's delay is from its answer to the sending
of the first retrieval that saw it on the later worker; the report gives the median and max, and
the retrievals sent more than 1 s after a write that did not see it (the target: none).
``tests/unit/adapters/test_living_memory_serve.py`` runs :func:`serve` and :func:`visibility` on
the test store (it checks that both workers catch up and that an earlier trace replays as
recorded; it asserts no timing).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "deltabank"))
sys.path.insert(0, str(ROOT / "tests" / "shared"))

from domains import MARIA as SESSION, UTTERANCE  # noqa: E402
from serving import stop_serve  # noqa: E402

HEADER = "x-hopweave-worker"
ACCOUNT = "ACCT_99812"  # Maria's account


def fee(nid: str, amount: float) -> dict[str, Any]:
    """A LateFeeCharged Event two days before now, as a JSONL node record."""
    ts = (datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0) - timedelta(days=2)).isoformat()
    return {"node": nid, "label": "Event", "properties": {
        "type": "LateFeeCharged", "amount": amount, "timestamp": ts, "status": "posted",
        "summary": f"LateFeeCharged ${amount:g} on {ts[:10]}"}}


def fee_rows(body: dict[str, Any]) -> set[str]:
    """The node ids the ``disputed_fee_event`` pattern returned in a retrieval's JSON."""
    return {r["node_id"] for f in body["facts"] if f["pattern"] == "disputed_fee_event" for r in f["rows"]}


@contextmanager
def serve(store: Path, port: int, scratch: Path, *, start_timeout_s: float = 240) -> Iterator[tuple[str, set[int]]]:
    """``hopweave serve --graph STORE --workers 2`` on 127.0.0.1:``port`` (private vector copies in
    ``scratch``); yields (base url, the two worker pids) once both answer ``/healthz``, and stops
    the server with SIGTERM afterwards (RuntimeError when it does not exit 0)."""
    import httpx

    env = dict(os.environ, TMPDIR=str(scratch), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.Popen([sys.executable, "-c", "from hopweave.cli import app; app()", "serve", "--graph",
                             str(store), "--host", "127.0.0.1", "--port", str(port), "--workers", "2"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        pids: set[int] = set()
        deadline = time.monotonic() + start_timeout_s
        while len(pids) < 2 and time.monotonic() < deadline and proc.poll() is None:
            try:  # a worker accepts connections only once warm
                pids.add(int(httpx.get(f"{url}/healthz", timeout=5, headers={"connection": "close"}).json()["pid"]))
            except httpx.HTTPError:
                time.sleep(0.5)
        if len(pids) < 2:
            err = proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
            raise RuntimeError(f"serve --workers 2 did not start both workers (answered: {pids}) {err}")
        yield url, pids
    finally:
        stop_serve(proc)
    if proc.returncode != 0:
        raise RuntimeError(f"serve exited {proc.returncode}")


def retrieve(url: str, *, record: bool = False) -> tuple[int, float, dict[str, Any]]:
    """One retrieval of Maria's question as of now on a fresh connection: (worker pid, the
    monotonic instant it was sent, the result JSON). Raises RuntimeError on a non-200 answer."""
    import httpx

    sent = time.monotonic()
    r = httpx.post(f"{url}/v1/retrieve", timeout=90, headers={"connection": "close"}, json={
        "utterance": UTTERANCE, "session": SESSION, "record": record, "budget_ms": 60000})
    if r.status_code != 200:
        raise RuntimeError(f"retrieve: {r.status_code} {r.text}")
    return int(r.headers[HEADER]), sent, r.json()


def visibility(url: str, pids: set[int], writes: int, *, give_up_s: float = 20, prefix: str = "EVT_VIS_"
               ) -> dict[str, Any]:
    """``writes`` fact writes and, after each, retrievals until every worker of ``pids`` has seen
    it (the module docstring). Returns ``{writes, delays_s, median_ms, max_ms, unseen, late}``:
    ``unseen`` the writes some worker had not seen after ``give_up_s``, ``late`` the retrievals
    sent over 1 s after a write that did not see it (write index, pid, seconds)."""
    import httpx

    delays: list[float] = []
    unseen: list[int] = []
    late: list[tuple[int, int, float]] = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        for k in range(writes):
            nid = f"{prefix}{k}"
            w = httpx.post(f"{url}/v1/facts", timeout=30, headers={"connection": "close"}, json={
                "tenant_id": SESSION["tenant_id"], "source": "billing", "nodes": [fee(nid, 10.0 + k)],
                "edges": [{"edge": "HAS_EVENT", "from": ACCOUNT, "to": nid}]})
            written = time.monotonic()
            if w.status_code != 200 or w.json()["nodes_written"] != [nid]:
                raise RuntimeError(f"POST /v1/facts: {w.status_code} {w.text}")
            first: dict[int, float] = {}
            while set(first) != pids and time.monotonic() < written + give_up_s:
                for pid, sent, body in pool.map(lambda _: retrieve(url), range(2)):
                    if nid in fee_rows(body):
                        first.setdefault(pid, sent - written)
                    elif sent - written > 1.0:
                        late.append((k, pid, round(sent - written, 3)))
            if set(first) != pids:
                unseen.append(k)
            else:
                delays.append(max(first.values()))
    return {"writes": writes, "delays_s": [round(d, 4) for d in delays],
            "median_ms": round(statistics.median(delays) * 1000, 1) if delays else None,
            "max_ms": round(max(delays) * 1000, 1) if delays else None, "unseen": unseen, "late": late}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=3000)
    ap.add_argument("--writes", type=int, default=30)
    ap.add_argument("--port", type=int, default=18931)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    from generator.build import load_deltabank

    with tempfile.TemporaryDirectory() as tmp:
        store, scratch = Path(tmp) / "store", Path(tmp) / "scratch"
        scratch.mkdir()
        load_deltabank(store, nodes=a.nodes)
        with serve(store, a.port, scratch) as (url, pids):
            out = visibility(url, pids, a.writes)
    out.update(nodes=a.nodes, load=os.getloadavg(), date=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{out['writes']} writes: seen by both workers after median {out['median_ms']} ms, max {out['max_ms']} "
              f"ms; unseen {out['unseen']}; retrievals over 1 s late {len(out['late'])}")


if __name__ == "__main__":
    main()
