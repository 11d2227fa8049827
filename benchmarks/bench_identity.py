"""Identity benchmark: who is calling, at the HTTP boundary of ``hopweave serve``.

Phase 1, isolation: randomized ``/v1/retrieve`` and ``/v1/tool/retrieve`` requests against one
store holding both example packs (tenants deltabank, northbank, acme, zephyr), each with a random
credential (a valid JWT for one of the packs' identified sessions, none, a forged signature, an
expired token, another audience, a tenant-scoped tool key) and a random body session (none, the
token's own, another customer of the same tenant, another tenant's, the token's with one field
changed). Every answer is checked: the status is the one the identity rules give (401 / 403 /
400 / 200), and every 200 answer is byte-identical to what ``Engine.retrieve`` / the agent tool
gives the *token's* session for the same request -- so an answer carrying anyone else's data
counts as a leak.

Phase 2, rate limits: a real server on 127.0.0.1 with ``--rate-limit-tenant``; one tenant floods
(bounded count and concurrency) while another sends agent-tool calls at a steady pace; reports
the flooder's 429s and the other tenant's p99 during the flood against its quiet p99. By default
the server runs in this process (uvicorn on a thread) and the flood is ``--flood-n`` calls; with
``--served`` it is a ``hopweave serve --workers N`` process (``--serve-workers``, default 1) and the flooder a process of its own
that floods for the whole timed series (at most ``--flood-n`` calls), so no client shares a GIL
with the server or with the timed caller; between quiet and flood the timed series runs once more
while the flooding tenant sends about 0.9x its limit (its admitted share alone, no excess), so
the report tells what the admitted calls cost the other tenant from what the refused excess does:

    python benchmarks/bench_identity.py --store /tmp/iso/store --served --flood-n 20000 --steady-n 60

    python benchmarks/bench_identity.py --store /tmp/iso/store --n 10000 --out /tmp/identity.json

``--store`` is built (both packs loaded) when it does not exist. Loopback only, bounded in count
and time. A benchmark, not a CI test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import statistics
import sys
import threading
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "shared"))
from bench_isolation import ensure_store  # noqa: E402
from machine import machine  # noqa: E402
from serving import stop_serve, wait_ready  # noqa: E402

from hopweave.adapters.agent_tool import RetrieveTool  # noqa: E402
from hopweave.adapters.http import create_app  # noqa: E402
from hopweave.adapters.identity import IdentityConfig, hash_key  # noqa: E402
from hopweave.engine.engine import Engine  # noqa: E402
from hopweave.fileio import read_yaml  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PACKS = (REPO / "examples" / "deltabank", REPO / "examples" / "telecom")
SECRET = "benchmark-secret-" + "x" * 32
AUD = "hopweave-bench"
AS_OF = "2026-05-12"
TOOL_QUERIES = ("late fee waiver", "roaming charges dispute", "address change", "fee schedule", "refund policy")


def sessions() -> list[dict[str, Any]]:
    """Every identified session file of the example packs."""
    out = []
    for pack in PACKS:
        for f in sorted((pack / "sessions").glob("*.json")):
            s = json.loads(f.read_text())
            if s.get("customer_id"):
                out.append(s)
    return out


def utterances(pack: Path, k: int = 6) -> list[str]:
    """The first ``k`` scenario utterances of a pack."""
    texts = []
    for f in sorted((pack / "scenarios").glob("*.yaml")):
        doc = read_yaml(f, "scenario")
        for sc in doc if isinstance(doc, list) else [doc]:
            if isinstance(sc, dict) and isinstance(sc.get("utterance"), str):
                texts.append(sc["utterance"])
    return texts[:k]


def token(session: dict[str, Any], *, key: str = SECRET, ttl: int = 3600, aud: str = AUD) -> str:
    import jwt

    now = int(time.time())
    claims = {"sub": session["customer_id"], "tenant_id": session["tenant_id"], "aud": aud, "iat": now,
              "exp": now + ttl,
              **{k: v for k, v in session.items() if k in ("region", "channel", "locale", "agent_id", "attributes")}}
    return jwt.encode(claims, key, algorithm="HS256")


def expected_status(cred: str, token_session: dict[str, Any] | None, body: dict[str, Any] | None,
                    endpoint: str, key_tenant: str | None) -> int:
    """What the identity rules answer for one combination."""
    if cred in ("none", "forged", "expired", "audience"):
        return 401
    if cred == "key":  # a tool-scoped key: the body names the customer within the key's tenant
        if endpoint == "retrieve":
            return 403
        if body is None:
            return 400
        return 200 if body["tenant_id"] == key_tenant else 403
    assert token_session is not None
    if body is None:
        return 200
    effective = {"locale": "en", **token_session}
    return 200 if all(effective.get(k) == v for k, v in body.items()) else 403


def phase_isolation(engine: Engine, n: int, rng: random.Random, keyfile: Path, secret: Path) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    pool = sessions()
    utts = {s["tenant_id"]: utterances(PACKS[0] if s["tenant_id"] in ("deltabank", "northbank") else PACKS[1])
            for s in pool}
    ident = IdentityConfig(jwt_secret_file=str(secret), jwt_audience=AUD, api_keys_file=str(keyfile))
    sib = engine.sibling(index=engine.index, understander=None)
    refs: dict[tuple[Any, ...], Any] = {}

    def reference(endpoint: str, session: dict[str, Any], text: str) -> Any:
        k = (endpoint, json.dumps(session, sort_keys=True), text)
        if k not in refs:
            if endpoint == "retrieve":
                refs[k] = engine.retrieve(text, session=session, as_of=AS_OF, record=False).context.text
            else:
                refs[k] = json.loads(json.dumps(RetrieveTool(engine, session, as_of=AS_OF)(text, top_k=5),
                                                default=str))
        return refs[k]

    tally: Counter[str] = Counter()
    mismatches: list[dict[str, Any]] = []
    statuses: Counter[int] = Counter()
    t0 = time.perf_counter()
    with TestClient(create_app(sib, warm=False, close=False, identity=ident)) as client:
        for _ in range(n):
            endpoint = "retrieve" if rng.random() < 0.3 else "tool"
            cred = rng.choices(["jwt", "none", "forged", "expired", "audience", "key"], [60, 5, 5, 5, 5, 20])[0]
            owner = rng.choice(pool)
            headers: dict[str, str] = {}
            key_tenant = None
            if cred == "jwt":
                headers["Authorization"] = f"Bearer {token(owner)}"
            elif cred == "forged":
                headers["Authorization"] = f"Bearer {token(owner, key='y' * 48)}"
            elif cred == "expired":
                headers["Authorization"] = f"Bearer {token(owner, ttl=-600)}"
            elif cred == "audience":
                headers["Authorization"] = f"Bearer {token(owner, aud='someone-else')}"
            elif cred == "key":
                key_tenant = owner["tenant_id"]
                headers["X-API-Key"] = f"hwk_bench_{key_tenant}"
            other = rng.choice(pool)
            body_kind = rng.choice(["none", "own", "other", "changed"])
            body: dict[str, Any] | None = {
                "none": None, "own": dict(owner), "other": dict(other),
                "changed": {**owner, "region": "CA" if owner.get("region") != "CA" else "US"},
            }[body_kind]
            text = rng.choice(utts[owner["tenant_id"]]) if endpoint == "retrieve" else rng.choice(TOOL_QUERIES)
            payload: dict[str, Any] = ({"utterance": text, "as_of": AS_OF, "record": False} if endpoint == "retrieve"
                                       else {"query": text, "top_k": 5, "as_of": AS_OF})
            if body is not None:
                payload["session"] = body
            res = client.post("/v1/retrieve" if endpoint == "retrieve" else "/v1/tool/retrieve", json=payload,
                              headers=headers)
            statuses[res.status_code] += 1
            want = expected_status(cred, owner if cred == "jwt" else None, body, endpoint, key_tenant)
            if res.status_code != want:
                tally["unexpected_status"] += 1
                if res.status_code == 200:
                    tally["leak"] += 1  # answered where the rules refuse
                continue
            if res.status_code != 200:
                continue
            who = owner if cred == "jwt" else body
            assert who is not None
            body_json = res.json()
            if endpoint == "retrieve" and body_json["degraded"]:
                # a degraded answer (a stage cut by the busy machine) is not comparable byte for
                # byte; its identity still is: the tenant, and the subject the facts are about
                tally["degraded_identity_checked"] += 1
                if body_json["tenant_id"] != who["tenant_id"] or any(
                        row["path"] and row["path"][0] not in (who["customer_id"],) and row["path"][0].startswith(
                            ("CUST_", "NB_CUST_", "SUB_", "ZP_SUB_")) for f in body_json["facts"] for row in f["rows"]):
                    tally["leak"] += 1
                    mismatches.append({"endpoint": endpoint, "who": who, "text": text, "degraded": True})
                continue
            got = body_json["context"]["text"] if endpoint == "retrieve" else body_json["results"]
            if got != reference(endpoint, who, text):
                tally["leak"] += 1  # an answer that is not the verified session's own
                mismatches.append({"endpoint": endpoint, "who": who, "text": text, "got": got,
                                   "want": reference(endpoint, who, text)})
            tally["answered_checked"] += 1
    sib.close_pools()
    return {"n": n, "statuses": dict(sorted(statuses.items())), "answered_checked": tally["answered_checked"],
            "unexpected_status": tally["unexpected_status"], "leaks": tally["leak"],
            "degraded_identity_checked": tally["degraded_identity_checked"], "mismatches": mismatches[:5],
            "references": len(refs), "wall_s": round(time.perf_counter() - t0, 1)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def phase_flood(engine: Engine, secret: Path, rate: float, flood_n: int, steady_n: int,
                tenant_concurrency: int = 0) -> dict[str, Any]:
    import httpx
    import uvicorn

    victim = json.loads((PACKS[1] / "sessions" / "ana.json").read_text())
    flooder = json.loads((PACKS[0] / "sessions" / "maria.json").read_text())
    sib = engine.sibling(index=engine.index, understander=None)
    app = create_app(sib, warm=False, close=False, identity=IdentityConfig(
        jwt_secret_file=str(secret), jwt_audience=AUD, rate_per_tenant=rate, tenant_concurrency=tenant_concurrency))
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}/v1/tool/retrieve"
    vt, ft = token(victim), token(flooder)
    victim_codes: Counter[int] = Counter()

    async def steady(client: httpx.AsyncClient, n: int) -> list[float]:
        lat = []
        for i in range(n):
            t = time.perf_counter()
            r = await client.post(url, json={"query": TOOL_QUERIES[i % len(TOOL_QUERIES)], "top_k": 5},
                                  headers={"Authorization": f"Bearer {vt}"})
            lat.append((time.perf_counter() - t) * 1000)
            victim_codes[r.status_code] += 1
            await asyncio.sleep(1.0 / rate)  # within the victim's own limit
        return lat

    async def flood(client: httpx.AsyncClient, n: int, conc: int = 16) -> Counter[int]:
        codes: Counter[int] = Counter()
        sem = asyncio.Semaphore(conc)

        async def one(i: int) -> None:
            async with sem:
                r = await client.post(url, json={"query": TOOL_QUERIES[i % len(TOOL_QUERIES)], "top_k": 5},
                                      headers={"Authorization": f"Bearer {ft}"})
                codes[r.status_code] += 1
        await asyncio.gather(*(one(i) for i in range(n)))
        return codes

    async def main() -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=30) as client:
            await steady(client, 5)  # warm
            quiet = await steady(client, steady_n)
            quiet_codes = dict(victim_codes)
            victim_codes.clear()
            codes_task = asyncio.create_task(flood(client, flood_n))
            during = await steady(client, steady_n)
            codes = await codes_task
        return {"quiet": quiet, "during": during, "codes": codes, "quiet_codes": quiet_codes,
                "during_codes": dict(victim_codes)}

    out = asyncio.run(main())
    server.should_exit = True
    thread.join(15)
    sib.close_pools()

    def p99(xs: list[float]) -> float:
        return round(sorted(xs)[max(0, int(len(xs) * 0.99) - 1)], 1)

    return {"rate_per_tenant": rate, "tenant_concurrency": tenant_concurrency, "flood_requests": flood_n, "flood_codes": dict(out["codes"]),
            "victim_quiet_p50_ms": round(statistics.median(out["quiet"]), 1), "victim_quiet_p99_ms": p99(out["quiet"]),
            "victim_flood_p50_ms": round(statistics.median(out["during"]), 1), "victim_flood_p99_ms": p99(out["during"]),
            "p99_ratio": round(p99(out["during"]) / p99(out["quiet"]), 2),
            "victim_codes_quiet": out["quiet_codes"], "victim_codes_flood": out["during_codes"]}


def _flood_client(url: str, tok: str, max_n: int, conc: int, pace_s: float = 0.0) -> None:
    """The flooder of ``--served`` (its own process): ``conc`` callers send agent-tool calls with
    ``tok`` back to back (``pace_s`` > 0: each caller waits that long after each call, so the
    tenant sends at a chosen rate) until stdin closes or ``max_n`` were sent; prints the status
    counts."""
    import httpx

    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    codes: Counter[int | str] = Counter()
    sent = [0]

    async def caller(client: httpx.AsyncClient) -> None:
        while not stop.is_set() and sent[0] < max_n:
            sent[0] += 1
            try:
                r = await client.post(url, json={"query": TOOL_QUERIES[sent[0] % len(TOOL_QUERIES)], "top_k": 5},
                                      headers={"Authorization": f"Bearer {tok}"})
            except httpx.TransportError as exc:  # counted (a reset connection), the flood goes on
                codes[type(exc).__name__] += 1
                continue
            codes[r.status_code] += 1
            if pace_s:
                await asyncio.sleep(pace_s)

    async def run() -> float:
        limits = httpx.Limits(max_connections=conc, max_keepalive_connections=conc)
        async with httpx.AsyncClient(timeout=30, limits=limits) as client:
            await client.post(url, json={"query": "warm", "top_k": 1}, headers={"Authorization": f"Bearer {tok}"})
            print("ready", flush=True)
            t = time.perf_counter()
            await asyncio.gather(*(caller(client) for _ in range(conc)))
            return time.perf_counter() - t

    cpu0 = time.process_time()
    wall = asyncio.run(run())
    print(json.dumps({"codes": dict(codes), "sent": sent[0], "wall_s": round(wall, 2),
                      "client_cpu_s": round(time.process_time() - cpu0, 2)}), flush=True)


def _raw_flood_client(url: str, tok: str, max_n: int, conc: int, pace_s: float = 0.0) -> None:
    """:func:`_flood_client` on plain asyncio streams: each of ``conc`` callers keeps one HTTP/1.1
    keep-alive connection and writes prepared request bytes, reading only the status line and the
    ``Content-Length`` body of each answer. httpx spends about 2 ms of CPU a call, so at hundreds of
    calls a second the load generator itself took a whole core of the machine the server runs
    on; this client spends a fraction of that, as a flood from elsewhere would."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host, port, path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    codes: Counter[int | str] = Counter()
    sent = [0]

    def request(i: int) -> bytes:
        body = json.dumps({"query": TOOL_QUERIES[i % len(TOOL_QUERIES)], "top_k": 5}).encode()
        return (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {tok}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body

    prepared = [request(i) for i in range(len(TOOL_QUERIES))]

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, i: int) -> int:
        writer.write(prepared[i % len(prepared)])
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        await reader.readexactly(length)
        return status

    async def caller() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while not stop.is_set() and sent[0] < max_n:
                sent[0] += 1
                try:
                    codes[await one(reader, writer, sent[0])] += 1
                except (OSError, asyncio.IncompleteReadError) as exc:  # counted, then a new connection
                    codes[type(exc).__name__] += 1
                    writer.close()
                    reader, writer = await asyncio.open_connection(host, port)
                    continue
                if pace_s:
                    await asyncio.sleep(pace_s)
        finally:
            writer.close()

    async def run() -> float:
        reader, writer = await asyncio.open_connection(host, port)
        await one(reader, writer, 0)  # warm
        writer.close()
        print("ready", flush=True)
        t = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(conc)))
        return time.perf_counter() - t

    cpu0 = time.process_time()
    wall = asyncio.run(run())
    print(json.dumps({"codes": dict(codes), "sent": sent[0], "wall_s": round(wall, 2),
                      "client_cpu_s": round(time.process_time() - cpu0, 2)}), flush=True)


def phase_flood_served(store: Path, secret: Path, rate: float, flood_n: int, steady_n: int,
                       tenant_concurrency: int, conc: int = 16, port: int = 8893,
                       pin_flooder: bool = False, workers: int = 1, raw_flood: bool = False) -> dict[str, Any]:
    """Phase 2 against a real ``hopweave serve --workers N`` process (the one of ``PYTHONPATH``),
    the flooder in a process of its own (so neither the server nor the flooder shares a GIL with
    the timed caller): quiet, then while the flood runs for the whole timed series. With
    ``pin_flooder`` the flooder's process runs on the last CPU and the server (with its search
    process) and the timed caller on the others, in both phases: the load generator as on a
    machine of its own, so what is measured is the server's isolation, not the CPU the flood
    client itself takes from it."""
    import os
    import subprocess

    import httpx

    cpus = sorted(os.sched_getaffinity(0))
    if pin_flooder and len(cpus) < 2:
        raise RuntimeError("--pin-flooder needs at least 2 CPUs")
    flood_cpus, rest = ({cpus[-1]}, set(cpus[:-1])) if pin_flooder else (set(cpus), set(cpus))
    before = os.sched_getaffinity(0)

    victim = json.loads((PACKS[1] / "sessions" / "ana.json").read_text())
    flooder = json.loads((PACKS[0] / "sessions" / "maria.json").read_text())
    exe = str(Path(sys.executable).with_name("hopweave"))
    cmd = [exe, "serve", "--store", str(store), "--workers", str(workers), "--port", str(port), "--log-level", "warning",
           "--jwt-secret-file", str(secret), "--jwt-audience", AUD, "--rate-limit-tenant", str(rate)]
    if tenant_concurrency:
        cmd += ["--tenant-concurrency", str(tenant_concurrency)]
    server = subprocess.Popen(cmd, env=os.environ.copy(), preexec_fn=lambda: os.sched_setaffinity(0, rest))
    os.sched_setaffinity(0, rest)
    base = f"http://127.0.0.1:{port}"
    url = base + "/v1/tool/retrieve"
    vt = token(victim)
    try:
        if not wait_ready(base, server, 120):
            raise RuntimeError("hopweave serve did not become ready within 120 s")

        def steady(client: httpx.Client, n: int, codes: Counter[int]) -> list[float]:
            lat = []
            for i in range(n):
                t = time.perf_counter()
                r = client.post(url, json={"query": TOOL_QUERIES[i % len(TOOL_QUERIES)], "top_k": 5},
                                headers={"Authorization": f"Bearer {vt}"})
                lat.append((time.perf_counter() - t) * 1000)
                codes[r.status_code] += 1
                time.sleep(1.0 / rate)  # within the victim's own limit
            return lat

        def flooding(n_callers: int, pace_s: float) -> "subprocess.Popen[str]":
            proc = subprocess.Popen([sys.executable, __file__, "--raw-flood-client" if raw_flood else "--flood-client",
                                     url, token(flooder), str(flood_n),
                                     str(n_callers), str(pace_s)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    text=True, preexec_fn=lambda: os.sched_setaffinity(0, flood_cpus))
            assert proc.stdout is not None and proc.stdin is not None
            assert proc.stdout.readline().strip() == "ready"
            time.sleep(0.3)  # under way
            return proc

        def ended(proc: "subprocess.Popen[str]") -> dict[str, Any]:
            assert proc.stdout is not None and proc.stdin is not None
            proc.stdin.close()
            out: dict[str, Any] = json.loads(proc.stdout.readline())
            proc.wait(30)
            return out

        quiet_codes: Counter[int] = Counter()
        limit_codes: Counter[int] = Counter()
        during_codes: Counter[int] = Counter()
        with httpx.Client(timeout=30) as client:
            steady(client, 5, Counter())  # warm
            quiet = steady(client, steady_n, quiet_codes)
            # the other tenant at its limit and no more: 4 callers, each pausing so the tenant sends
            # about 0.9 x its rate (the admitted share, without the excess a flood adds)
            at_limit_proc = flooding(4, max(4 / (0.9 * rate) - 0.005, 0.0))
            at_limit = steady(client, steady_n, limit_codes)
            limit_out = ended(at_limit_proc)
            flood = flooding(conc, 0.0)
            during = steady(client, steady_n, during_codes)
            flood_out = ended(flood)
    finally:
        stop_serve(server, 60)
        os.sched_setaffinity(0, before)

    def p99(xs: list[float]) -> float:
        return round(sorted(xs)[max(0, int(len(xs) * 0.99) - 1)], 1)

    return {"served": True, "workers": workers, "flood_client": "raw" if raw_flood else "httpx", "rate_per_tenant": rate, "tenant_concurrency": tenant_concurrency,
            "pinned": {"flooder": sorted(flood_cpus), "server_and_caller": sorted(rest)} if pin_flooder else None,
            "flood_concurrency": conc, "flood_requests": flood_out["sent"], "flood_wall_s": flood_out["wall_s"],
            "flood_codes": flood_out["codes"], "flood_client_cpu_s": flood_out.get("client_cpu_s"),
            "victim_quiet_p50_ms": round(statistics.median(quiet), 1), "victim_quiet_p99_ms": p99(quiet),
            "at_limit_requests": limit_out["sent"], "at_limit_wall_s": limit_out["wall_s"],
            "at_limit_codes": limit_out["codes"],
            "victim_at_limit_p50_ms": round(statistics.median(at_limit), 1), "victim_at_limit_p99_ms": p99(at_limit),
            "p99_ratio_at_limit": round(p99(at_limit) / p99(quiet), 2),
            "p99_ratio_flood_to_at_limit": round(p99(during) / p99(at_limit), 2),
            "victim_flood_p50_ms": round(statistics.median(during), 1), "victim_flood_p99_ms": p99(during),
            "p99_ratio": round(p99(during) / p99(quiet), 2), "p50_ratio": round(statistics.median(during) /
                                                                               statistics.median(quiet), 2),
            "victim_codes_quiet": dict(quiet_codes), "victim_codes_at_limit": dict(limit_codes),
            "victim_codes_flood": dict(during_codes)}


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] in ("--flood-client", "--raw-flood-client"):
        (_raw_flood_client if sys.argv[1] == "--raw-flood-client" else _flood_client)(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
                      float(sys.argv[6]) if len(sys.argv) > 6 else 0.0)
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, default=Path("/tmp/hopweave-iso/store"))
    ap.add_argument("--n", type=int, default=2000, help="isolation requests (phase 1)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rate", type=float, default=20.0, help="per-tenant rate limit of phase 2 (requests/s)")
    ap.add_argument("--flood-n", type=int, default=600)
    ap.add_argument("--tenant-concurrency", type=int, default=0, help="serve --tenant-concurrency of phase 2")
    ap.add_argument("--steady-n", type=int, default=60)
    ap.add_argument("--served", action="store_true", help="phase 2 against a `hopweave serve` process, the flooder "
                    "in its own process, flooding for the whole timed series (at most --flood-n calls)")
    ap.add_argument("--port", type=int, default=8893, help="the served phase's port")
    ap.add_argument("--pin-flooder", action="store_true", help="with --served: the flooder on the last CPU, the "
                    "server and the timed caller on the others (the load generator as on a machine of its own)")
    ap.add_argument("--serve-workers", type=int, default=1, help="with --served: `hopweave serve --workers N` (its "
                    "default is the CPU count; each worker holds 1/N of the rate limit)")
    ap.add_argument("--raw-flood", action="store_true", help="with --served: the flooder on plain asyncio streams "
                    "(a fraction of httpx's CPU a call, so the load generator does not take a core of the server's "
                    "machine)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    build_s = ensure_store(args.store)
    work = args.store.parent / "identity"
    work.mkdir(exist_ok=True)
    secret = work / "secret"
    secret.write_text(SECRET)
    keyfile = work / "keys.json"
    keyfile.write_text(json.dumps({"keys": [
        {"id": f"bench-{t}", "sha256": hash_key(f"hwk_bench_{t}"), "tenant_id": t, "scope": "tool"}
        for t in ("deltabank", "northbank", "acme", "zephyr")]}))
    if args.served:  # the server process opens the store (its vector shard opens in one process only)
        report: dict[str, Any] = {"benchmark": "bench_identity", "date": datetime.now(timezone.utc).isoformat(
            timespec="seconds"), "machine": machine(), "command": " ".join(sys.argv), "store_build_s": build_s,
            "flood": phase_flood_served(args.store, secret, args.rate, args.flood_n, args.steady_n,
                                        args.tenant_concurrency, port=args.port, pin_flooder=args.pin_flooder,
                                        workers=args.serve_workers, raw_flood=args.raw_flood)}
        text = json.dumps(report, indent=2)
        print(text)
        if args.out:
            args.out.write_text(text + "\n")
        return 0
    engine = Engine.open(args.store)
    engine.warmup()
    try:
        report = {"benchmark": "bench_identity", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  "machine": machine(), "command": " ".join(sys.argv), "store_build_s": build_s,
                  "isolation": phase_isolation(engine, args.n, random.Random(args.seed), keyfile, secret)}
        if args.out:
            args.out.write_text(json.dumps(report, indent=2) + "\n")
        report["flood"] = phase_flood(engine, secret, args.rate, args.flood_n, args.steady_n, args.tenant_concurrency)
    finally:
        engine.close()
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0 if report["isolation"]["leaks"] == 0 and report["isolation"]["unexpected_status"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
