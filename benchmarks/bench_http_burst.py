"""A bounded loopback burst at `hopweave serve --workers 1`: how long answers and refusals take.

    python benchmarks/bench_http_burst.py --store S [--burst 200] [--budget-ms 800] [--port 8791] [--client httpx|raw] [--json out.json]

Starts `hopweave serve --workers 1 --trust-body-session` on 127.0.0.1 (the store as shipped, its
default budget), waits for /readyz, sends one warm-up request, then releases ``--burst``
concurrent `POST /v1/retrieve` requests (Maria's session, the issue's utterance varied by a
number) from one asyncio client over ``--burst`` connections, and reports per status (200
answers, 503 refusals) and per refusal kind (which admission step refused: the front layer's
expected slot wait, the handler's spent budget, the engine's slot queue) the count, median, p95
and maximum latency as the client saw it and as the server's ``Server-Timing`` total says
(arrival in the server to the answer), and how many answers came later than the budget plus
200 ms (client side) or plus 50 ms (server side). ``--client raw`` opens the sockets before the
burst and writes each request whole, so the client's own HTTP work is left out of its times.
Stops the server with SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "shared"))
from machine import machine  # noqa: E402
from serving import stop_serve, wait_ready  # noqa: E402

SESSION = {"tenant_id": "deltabank", "customer_id": "CUST_4421", "region": "US", "channel": "phone"}


def _reason(status: int, text: str) -> str:
    """A refusal's kind, from its message (which admission step refused it)."""
    if status == 200:
        return "answer"
    try:
        msg = json.loads(text).get("message", "")
    except ValueError:
        return "not json"
    for key, kind in (("retrievals are ahead", "front: expected slot wait"),
                      ("waited", "handler: budget spent before it ran"),
                      ("no worker took", "engine: no worker thread in time"),
                      ("expected wait for a request slot", "engine: expected slot wait"),
                      ("no request slot freed up", "engine: no slot handed over in time"),
                      ("requests in progress (limit", "admission gate full")):
        if key in msg:
            return kind
    return msg[:60]


async def _burst(url: str, n: int) -> list[tuple[int, float, float, str]]:
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    async with httpx.AsyncClient(timeout=60.0, limits=limits) as client:
        async def one(i: int) -> tuple[int, float, float, str]:
            body = {"utterance": f"I want to dispute this ${30 + i % 20} late fee on my Platinum card",
                    "session": SESSION, "as_of": "2026-05-12"}
            t = time.perf_counter()
            r = await client.post(url, json=body)
            timing = r.headers.get("server-timing", "")
            total = next((float(p.split("dur=")[1]) for p in timing.split(",") if p.strip().startswith("total;dur=")),
                         float("nan"))
            return r.status_code, (time.perf_counter() - t) * 1000, total, _reason(r.status_code, r.text)
        return await asyncio.gather(*(one(i) for i in range(n)))


async def _burst_raw(port: int, n: int) -> list[tuple[int, float, float, str]]:
    """The same burst over ``n`` plain sockets opened first (untimed), each request written whole
    at once: the time from its write to its last byte is the server's latency plus the loopback,
    without the client's own connection set-up and HTTP work (httpx's) in it."""
    conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(n)]

    async def one(i: int) -> tuple[int, float, float, str]:
        reader, writer = conns[i]
        body = json.dumps({"utterance": f"I want to dispute this ${30 + i % 20} late fee on my Platinum card",
                           "session": SESSION, "as_of": "2026-05-12"}).encode()
        req = (f"POST /v1/retrieve HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
               f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode() + body
        t = time.perf_counter()
        writer.write(req)
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        text = (await reader.readexactly(int(headers.get("content-length", "0")))).decode()
        ms = (time.perf_counter() - t) * 1000
        writer.close()
        timing = headers.get("server-timing", "")
        total = next((float(p.split("dur=")[1]) for p in timing.split(",") if p.strip().startswith("total;dur=")),
                     float("nan"))
        status = int(lines[0].split()[1])
        return status, ms, total, _reason(status, text)
    return await asyncio.gather(*(one(i) for i in range(n)))


def _stats(ms: list[float]) -> dict[str, float]:
    s = sorted(ms)
    return {"n": len(s), "median_ms": round(statistics.median(s), 1) if s else 0.0,
            "p95_ms": round(s[int(0.95 * (len(s) - 1))], 1) if s else 0.0, "max_ms": round(s[-1], 1) if s else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--burst", type=int, default=200)
    ap.add_argument("--budget-ms", type=int, default=800)
    ap.add_argument("--port", type=int, default=8791)
    ap.add_argument("--client", choices=("httpx", "raw"), default="httpx",
                    help="httpx: one AsyncClient, connections opened by the burst (timed); raw: sockets opened first")
    ap.add_argument("--json")
    a = ap.parse_args()
    exe = str(Path(sys.executable).with_name("hopweave"))
    proc = subprocess.Popen([exe, "serve", "--store", a.store, "--workers", "1", "--trust-body-session",
                             "--port", str(a.port), "--budget-ms", str(a.budget_ms), "--log-level", "warning"],
                            env=os.environ.copy())
    base = f"http://127.0.0.1:{a.port}"
    try:
        if not wait_ready(base, proc, 120):
            raise RuntimeError("hopweave serve did not become ready within 120 s")
        asyncio.run(_burst(base + "/v1/retrieve", 1))
        res = asyncio.run(_burst(base + "/v1/retrieve", a.burst) if a.client == "httpx" else _burst_raw(a.port, a.burst))
    finally:
        stop_serve(proc, 60)
    codes = sorted({c for c, _, _, _ in res})
    by = {str(code): {"client": _stats([ms for c, ms, _, _ in res if c == code]),
                      "server": _stats([srv for c, _, srv, _ in res if c == code and srv == srv])} for code in codes}
    reasons = sorted({r for _, _, _, r in res})
    by_reason = {r: {"client": _stats([ms for _, ms, _, k in res if k == r]),
                     "server": _stats([srv for _, _, srv, k in res if k == r and srv == srv])} for r in reasons}
    late = sum(1 for c, ms, _, _ in res if c == 200 and ms > a.budget_ms + 200)
    late_server = sum(1 for c, _, srv, _ in res if c == 200 and srv > a.budget_ms + 50)
    out = {"machine": machine(), "client": a.client, "burst": a.burst, "budget_ms": a.budget_ms, "by_status": by,
           "by_reason": by_reason, "answers_past_budget_plus_200ms": late,
           "answers_past_budget_plus_50ms_server": late_server}
    print(json.dumps(out, indent=2))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
