"""Issue 13: the product as shipped under agent-scale concurrency (seed 003's 100 parallel calls,
seed 004's 800 ms budget).

    python benchmarks/bench_maria.py --chunks 5000 --nodes 50000 --build-only --store S   # the store
    python benchmarks/bench_concurrency.py --store S --telecom-store T --json out.json

Shipped configuration throughout (``EngineConfig()``: 800 ms budget, the patterns' own
``budget_ms``, traces recorded). Requests: the example packs' scenarios (every goal, no fault
injection) with distinct wording per repetition, so no cache answers for another request.

Measured, in one run: cold start to first result (fresh interpreter); warm single-request
latency and process CPU per retrieval with per-stage medians and encoder texts per request; 100
simultaneous retrievals via threads and via ``aretrieve`` on one event loop (latency, degraded,
late = over budget); 100 parallel agent-tool calls; the naive unfiltered dense top-10 (embed +
search) and the LangChain BM25+FAISS ensemble (embed + invoke) at the same concurrency; the same
100 requests through ``hopweave serve`` from this (separate) process on loopback.

With ``--bursts-only`` each burst's answers are also checked against their scenarios (passed,
full, by rung of the degradation ladder) beside the same requests one at a time (the quiet pass
rate), and each rung's own pass rate and CPU is measured request by request (``rung_quality``);
``--scale-out 1 2`` measures full retrievals per second through ``EnginePool`` of each size and
per CPU second (the sizing rule's figure).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "deltabank"))

import maria_measure as mm  # noqa: E402
from machine import machine  # noqa: E402

from hopweave.engine.config import EngineConfig  # noqa: E402

#: The shipped budgets: a retrieval's and an agent-tool call's (seed 003's 200 ms p99)
BUDGET_MS, TOOL_BUDGET_MS = EngineConfig().budget_ms, EngineConfig().tool_budget_ms


def scenarios_of(pack: str) -> list[Any]:
    from hopweave.engine.replay import load_scenario, scenario_paths
    d = Path(__file__).resolve().parents[1] / "examples" / pack / "scenarios"
    return [s for s in (load_scenario(p) for p in scenario_paths([d])) if not s.options.faults]


def burst(fn: Callable[[Any], Any], items: Sequence[Any]) -> tuple[list[tuple[float, Any]], float]:
    """Every item on its own thread, released together: (latency ms, outcome) each, wall s."""
    start = threading.Event()

    def one(x: Any) -> tuple[float, Any]:
        start.wait()
        t = time.perf_counter()
        try:
            out = fn(x)
        except Exception as exc:  # counted as an error
            out = exc
        return (time.perf_counter() - t) * 1000, out

    with ThreadPoolExecutor(max_workers=len(items)) as pool:
        futs = [pool.submit(one, x) for x in items]
        time.sleep(0.05)
        t0 = time.perf_counter()
        start.set()
        res = [f.result() for f in futs]
    return res, time.perf_counter() - t0


def sustained(engine: Any, reqs: list[dict[str, Any]], clients: int, seconds: float) -> dict[str, Any]:
    """``clients`` closed-loop clients for ``seconds``: each sends its next request (cycling its
    share of ``reqs``) as soon as the previous one answered. Bounded: no request starts after
    ``seconds``, so the run ends within seconds + one budget."""
    start = threading.Event()
    stop_at = [0.0]

    def client(i: int) -> list[tuple[float, Any]]:
        mine = reqs[i::clients] or reqs
        out: list[tuple[float, Any]] = []
        start.wait()
        k = 0
        while time.perf_counter() < stop_at[0]:
            t = time.perf_counter()
            try:
                r: Any = call(engine, mine[k % len(mine)])
            except Exception as exc:  # counted as an error
                r = exc
            out.append(((time.perf_counter() - t) * 1000, r))
            k += 1
        return out

    with ThreadPoolExecutor(max_workers=clients) as pool:
        futs = [pool.submit(client, i) for i in range(clients)]
        time.sleep(0.05)
        c0, t0 = engine_cpu_s(engine), time.perf_counter()
        stop_at[0] = t0 + seconds
        start.set()
        res = [x for f in futs for x in f.result()]
        wall = time.perf_counter() - t0
        cpu = engine_cpu_s(engine) - c0
    full = sum(1 for _, r in res if not isinstance(r, BaseException) and intact(r))
    return {**engine_stats(res, wall), "clients": clients, "seconds": seconds, "full": full,
            "full_per_s": round(full / wall, 1), "cpu_ms_per_retrieval": round(cpu * 1000 / max(len(res), 1), 1)}


def engine_stats(results: list[tuple[float, Any]], wall: float, budget_ms: int = BUDGET_MS) -> dict[str, Any]:
    lat = [ms for ms, _ in results]
    errors = [r for _, r in results if isinstance(r, BaseException)]
    ok = [r for _, r in results if not isinstance(r, BaseException)]
    degraded = [r for r in ok if getattr(r, "degraded", ())]
    by_stage: dict[str, int] = {}
    for r in degraded:
        for s in sorted({d.stage for d in r.degraded}):
            by_stage[s] = by_stage.get(s, 0) + 1
    over = [ms - budget_ms for ms in lat if ms > budget_ms]
    return {**mm.summary(lat), "wall_s": round(wall, 2), "rps": round(len(lat) / wall, 1), "errors": len(errors),
            "error_types": sorted({type(e).__name__ for e in errors}), "degraded": len(degraded),
            "degraded_by_stage": by_stage, "late": len(over), "max_over_budget_ms": round(max(over), 1) if over else 0.0,
            "recorded": sum(1 for r in ok if getattr(r, "recorded", False))}


def intact(r: Any) -> bool:
    """A full answer: the full rung, its understanding and its document search not degraded."""
    return getattr(r, "rung", "full") == "full" and not any(
        d.stage in ("understand", "search") or d.what == "request capacity" for d in r.degraded)


def answers(results: list[tuple[float, Any]], reqs: list[dict[str, Any]], db: list[Any]) -> dict[str, Any]:
    """What a burst's answers are worth: how many pass their scenario's expectations
    (``replay.check``: goal, facts, chunks, forbidden chunks...; ``reqs[i]`` produced
    ``results[i]``), how many are full (:func:`intact`) and how many came from each rung."""
    from hopweave.engine.replay import check

    by_name = {s.name: s for s in db}
    passed = full = 0
    rungs: dict[str, int] = {}
    for (_, r), q in zip(results, reqs):
        if isinstance(r, BaseException):
            continue
        rung = getattr(r, "rung", "full")
        rungs[rung] = rungs.get(rung, 0) + 1
        passed += not check(by_name[q["name"]], r)
        full += intact(r)
    ok_rung = dict.fromkeys(rungs, 0)
    for (_, r), q in zip(results, reqs):
        if not isinstance(r, BaseException) and not check(by_name[q["name"]], r):
            ok_rung[getattr(r, "rung", "full")] += 1
    return {"passed": passed, "full": full, "by_rung": rungs, "passed_by_rung": ok_rung}


def on_rung(engine: Any, req: dict[str, Any], rung: str) -> Any:
    """``req`` answered on ``rung`` whatever the engine's load: its pipeline run with a grant
    of that rung (a ladder slot taken for it; the run gives it back)."""
    from hopweave.engine.admission import Grant
    from hopweave.engine.boundary import check_request

    q = check_request(req["utterance"], **{k: v for k, v in req.items() if k not in ("utterance", "name")})
    lane = engine.admission.ladder_slots
    if rung != "full" and (lane is None or not lane.acquire(5.0)):
        raise RuntimeError("no ladder slot to force the rung with")
    return engine.pipeline().retrieve(q, grant=Grant(engine.admission.clock(), rung))  # type: ignore[arg-type]


def rung_quality(engine: Any, reqs: list[dict[str, Any]], db: list[Any]) -> dict[str, Any]:
    """The same requests one at a time on each rung (forced by the grant): scenario passes and
    CPU per answer (this process + its search process), the rungs alternating request by
    request so the machine's load falls on both alike."""
    out: dict[str, Any] = {}
    got: dict[str, list[tuple[float, Any]]] = {"full": [], "facts_and_lexical": []}
    cpu = dict.fromkeys(got, 0.0)
    for q in reqs:
        for rung in got:
            c = engine_cpu_s(engine)
            r = on_rung(engine, {**q, "record": True}, rung)
            cpu[rung] += engine_cpu_s(engine) - c
            got[rung].append((0.0, r))
    for rung, res in got.items():
        a = answers(res, reqs, db)
        out[rung] = {"passed": a["passed"], "cpu_ms_per_answer": round(cpu[rung] * 1000 / len(reqs), 1)}
    out["pass_ratio"] = round(out["facts_and_lexical"]["passed"] / max(out["full"]["passed"], 1), 3)
    return out


def plain_stats(results: list[tuple[float, Any]], wall: float) -> dict[str, Any]:
    lat = [ms for ms, _ in results]
    return {**mm.summary(lat), "wall_s": round(wall, 2), "rps": round(len(lat) / wall, 1),
            "errors": sum(1 for _, r in results if isinstance(r, BaseException))}


def requests(scen: list[Any], n: int, salt: str) -> list[dict[str, Any]]:
    """n requests cycling the scenarios (every goal), the wording varied per repetition and
    marked for this phase by a prefix (``Ref <salt>: ``), not by an extra sentence that the
    classifier would score as one more clause (one more encoder pass)."""
    out = mm._requests(scen, n, True, "")
    return [{**r, "utterance": f"Ref {salt}: {r['utterance']}"} for r in out]


def call(engine: Any, req: dict[str, Any]) -> Any:
    kw = {k: v for k, v in req.items() if k not in ("utterance", "name")}
    return engine.retrieve(req["utterance"], **kw)


def sequential(engine: Any, reqs: list[dict[str, Any]]) -> dict[str, Any]:
    """Warm single requests one at a time: latency, process CPU per retrieval, stage medians and
    the texts the encoder ran per request."""
    base = engine.embedder.base
    real = base.embed_uncached
    texts: list[int] = [0]

    def counted(t: Sequence[str], batch_size: int = 64) -> Any:
        texts[0] += len(t)
        return real(t, batch_size)

    base.embed_uncached = counted
    lat, stages, enc = [], {}, []
    cpu0, child0 = engine_cpu_s(engine), search_process_cpu_s(engine)
    try:
        for req in reqs:
            texts[0] = 0
            t = time.perf_counter()
            r = call(engine, req)
            lat.append((time.perf_counter() - t) * 1000)
            enc.append(texts[0])
            for k, v in r.timings_ms.items():
                stages.setdefault(k, []).append(v)
    finally:
        base.embed_uncached = real
    cpu_ms = (engine_cpu_s(engine) - cpu0) * 1000 / len(reqs)
    child_ms = (search_process_cpu_s(engine) - child0) * 1000 / len(reqs)
    return {**mm.summary(lat), "cpu_ms_per_retrieval": round(cpu_ms, 1),
            "search_process_cpu_ms_per_retrieval": round(child_ms, 1),
            "stage_p50_ms": {k: round(statistics.median(v), 2) for k, v in sorted(stages.items())},
            "encoder_texts_per_request_p50": statistics.median(enc), "encoder_texts_max": max(enc)}


def aretrieve_burst(engine: Any, reqs: list[dict[str, Any]]) -> dict[str, Any]:
    return engine_stats(*mm.gather_aretrieve(engine, reqs))


def tool_burst(engine: Any, reqs: list[dict[str, Any]]) -> dict[str, Any]:
    from hopweave.adapters.agent_tool import RetrieveTool

    def one(req: dict[str, Any]) -> Any:
        s = req["session"]
        tool = RetrieveTool(engine, s)
        region = getattr(s, "region", None)
        return tool(req["utterance"], mode="hybrid", filters={"region": region} if region else None, top_k=10)

    return plain_stats(*burst(one, reqs))


def tool_answered(results: list[tuple[float, Any]], wall: float) -> dict[str, Any]:
    """A tool burst: answered and refused (OverloadedError) counts, latency of the answered."""
    from hopweave.errors import OverloadedError

    ok = [ms for ms, r in results if not isinstance(r, BaseException)]
    return {"answered": len(ok), "refused": sum(1 for _, r in results if isinstance(r, OverloadedError)),
            "errors": sum(1 for _, r in results if isinstance(r, BaseException) and not isinstance(r, OverloadedError)),
            "answered_latency": mm.summary(ok) if ok else {}, "wall_s": round(wall, 2)}


def tool_lanes(engine: Any, db: list[Any], n: int, rounds: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Agent-tool calls before and after their own slots, in the same run and engine, alternating
    the order per round: ``shared`` (the tool calls take the engine's request slots, as with
    ``tool_max_active`` 0) and ``own`` (``tool_max_active`` slots of their own). Each round: a
    burst of ``n`` tool calls alone, then ``n`` tool calls released together with ``n``
    retrievals (``mixed``). Medians over the rounds."""
    lane = engine.admission.tool_slots
    out: dict[str, Any] = {"rounds": rounds, "tool_max_active": engine.config.tool_max_active,
                           "max_active": engine.config.max_active}
    runs: dict[str, list[dict[str, Any]]] = {}
    for r in range(rounds):
        for mode in (("shared", "own") if r % 2 == 0 else ("own", "shared")):
            engine.admission.tool_slots = lane if mode == "own" else None
            log(f"tool calls round {r + 1}/{rounds}: {mode} slots ...")
            alone = tool_answered(*burst(lambda q: _tool_call(engine, q), requests(db, n, f"k{r}{mode}")))
            alone["load_avg"] = round(os.getloadavg()[0], 2)
            runs.setdefault(f"{mode}_alone", []).append(alone)
            items = [("tool", q) for q in requests(db, n, f"m{r}{mode}")] + \
                    [("retrieve", q) for q in requests(db, n, f"r{r}{mode}")]
            res, wall = burst(lambda it: _tool_call(engine, it[1]) if it[0] == "tool" else call(engine, it[1]), items)
            tools = [x for x, it in zip(res, items) if it[0] == "tool"]
            rets = [x for x, it in zip(res, items) if it[0] == "retrieve"]
            mixed = tool_answered(tools, wall)
            mixed["retrievals_intact"] = sum(1 for _, x in rets if not isinstance(x, BaseException) and not any(
                d.stage in ("understand", "search") or d.what == "request capacity" for d in x.degraded))
            mixed["retrievals_p99_ms"] = mm.pct([ms for ms, _ in rets], 0.99)
            runs.setdefault(f"{mode}_mixed", []).append(mixed)
    engine.admission.tool_slots = lane
    for key, rs in runs.items():
        out[key] = {"answered_median": statistics.median(x["answered"] for x in rs),
                    "answered": [x["answered"] for x in rs],
                    "answered_p50_ms_median": statistics.median(x["answered_latency"].get("p50_ms", 0) for x in rs),
                    "answered_p99_ms_median": statistics.median(x["answered_latency"].get("p99_ms", 0) for x in rs),
                    "runs": rs}
    return out


def _tool_call(engine: Any, req: dict[str, Any]) -> Any:
    from hopweave.adapters.agent_tool import RetrieveTool

    s = req["session"]
    region = getattr(s, "region", None)
    return RetrieveTool(engine, s)(req["utterance"], mode="hybrid", filters={"region": region} if region else None,
                                   top_k=10)


def naive_burst(engine: Any, reqs: list[dict[str, Any]]) -> dict[str, Any]:
    """The naive baseline: embed the query, dense top-10 over the tenant's whole collection."""
    from hopweave.search.profiles import get_profile

    prof = get_profile("dense_only")
    emb = engine.embedder.base

    def one(req: dict[str, Any]) -> Any:
        v = emb.embed([req["utterance"]])[0]
        return engine.index.search(req["session"].tenant_id, req["utterance"], prof, where=None, limit=10,
                                   query_vector=v, query_space=emb.space, include_superseded=True)

    return plain_stats(*burst(one, reqs))


def langchain_burst(engine: Any, reqs: list[dict[str, Any]], tenant: str) -> dict[str, Any]:
    """LangChain EnsembleRetriever (BM25Retriever + FAISS, equal weights) over the tenant's chunks,
    the query embedded by the same encoder; built once (build_s), then invoked concurrently."""
    try:
        import warnings

        warnings.filterwarnings("ignore")
        from langchain_classic.retrievers import EnsembleRetriever
        from langchain_community.retrievers import BM25Retriever
        from langchain_community.vectorstores import FAISS
        from langchain_core.documents import Document
        from langchain_core.embeddings import Embeddings
    except ModuleNotFoundError as exc:
        return {"skipped": f"{exc.name} not installed (extra bench)"}
    emb = engine.embedder.base

    class _Live(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:  # pragma: no cover - unused
            raise RuntimeError("documents are added with their stored vectors")

        def embed_query(self, text: str) -> list[float]:
            return [float(x) for x in emb.embed([text])[0]]

    t = time.perf_counter()
    payloads = engine.index.fetch(tenant)
    ids = [str(p["chunk_id"]) for p in payloads]
    vecs: dict[str, Any] = {}
    for s in range(0, len(ids), 2000):
        vecs.update(engine.index.dense_vectors(tenant, ids[s:s + 2000]))
    docs, pairs, metas = [], [], []
    for p in payloads:
        cid = str(p["chunk_id"])
        if cid in vecs:
            meta = {k: v for k, v in p.items() if k not in ("text", "provenance")}
            docs.append(Document(page_content=str(p.get("text", "")), metadata=meta))
            pairs.append((str(p.get("text", "")), [float(x) for x in vecs[cid]]))
            metas.append(meta)
    bm25 = BM25Retriever.from_documents(docs, k=10)
    faiss = FAISS.from_embeddings(pairs, _Live(), metadatas=metas)
    ens = EnsembleRetriever(retrievers=[bm25, faiss.as_retriever(search_kwargs={"k": 10})], weights=[0.5, 0.5])
    build_s = time.perf_counter() - t
    return {"build_s": round(build_s, 1), "chunks": len(docs),
            **plain_stats(*burst(lambda r: ens.invoke(r["utterance"]), reqs))}


# ---- over HTTP ---------------------------------------------------------------------------------------
def http_burst(store: Path, reqs: list[dict[str, Any]], tool_reqs: list[dict[str, Any]], port: int,
               workers: int = 1, engine_processes: bool = False, warm: int = 3) -> dict[str, Any]:
    """Start ``hopweave serve --workers N`` (its own processes), wait for readiness, send the
    requests at once from this process over loopback, then SIGTERM it (graceful shutdown timed).
    With several workers, readiness waits until every worker has answered ``/readyz`` (a worker
    accepts connections only once warm). ``warm`` distinct requests go first, one at a time (3: a
    server just started; its search caches fill during its first ~40 requests)."""
    import httpx

    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    t0 = time.perf_counter()
    how = ["--workers", "1", "--engine-processes", str(workers)] if engine_processes else ["--workers", str(workers)]
    proc = subprocess.Popen([sys.executable, "-c", "from hopweave.cli import app; app()", "serve", "--store", str(store), "--port",
                             str(port), *how], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    if engine_processes:
        workers = 1  # one HTTP process answers /readyz (ready once every engine process is)
    url = f"http://127.0.0.1:{port}"
    try:
        ready_s = None
        pids: set[int] = set()
        for _ in range(1200):
            time.sleep(0.25)
            try:
                r = httpx.get(f"{url}/readyz", timeout=2)
                if r.status_code == 200:
                    pids.add(int(r.json().get("pid", 0)))
                    if len(pids) >= workers:
                        ready_s = time.perf_counter() - t0
                        break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                return {"error": f"serve exited {proc.returncode}: {proc.stderr.read()[-500:] if proc.stderr else ''}"}
        if ready_s is None:
            return {"error": f"serve not ready within 300 s ({len(pids)} of {workers} workers)"}

        def body(r: dict[str, Any]) -> dict[str, Any]:
            s = r["session"]
            return {"utterance": r["utterance"], "session": s.model_dump(mode="json", exclude_none=True),
                    "as_of": str(r["as_of"]) if r.get("as_of") else None}

        async def fire(path: str, bodies: list[dict[str, Any]]) -> tuple[list[tuple[float, Any]], float]:
            limits = httpx.Limits(max_connections=len(bodies), max_keepalive_connections=len(bodies))
            async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as c:
                await c.get("/healthz")

                async def one(b: dict[str, Any]) -> tuple[float, Any]:
                    t = time.perf_counter()
                    try:
                        resp = await c.post(path, json=b)
                        out: Any = resp
                    except Exception as exc:
                        out = exc
                    return (time.perf_counter() - t) * 1000, out

                t1 = time.perf_counter()
                res = await asyncio.gather(*(one(b) for b in bodies))
                return list(res), time.perf_counter() - t1

        warm_reqs, reqs = reqs[len(reqs) - warm:], reqs[:len(reqs) - warm]  # the list is n + warm long
        for r in warm_reqs:  # distinct from the burst's, one at a time
            asyncio.run(fire("/v1/retrieve", [body(r)]))
        cpu0 = tree_cpu_s(proc.pid)
        res, wall = asyncio.run(fire("/v1/retrieve", [body(r) for r in reqs]))
        out = http_stats(res, wall)
        # CPU the serve processes spent on the burst (all workers): the wall time of the same
        # burst on N idle cores is at least this / N
        out["server_cpu_s"] = round(tree_cpu_s(proc.pid) - cpu0, 2)
        out["server_cpu_ms_per_request"] = round(out["server_cpu_s"] * 1000 / max(1, len(reqs)), 1)
        tres, twall = asyncio.run(fire("/v1/tool/retrieve", [
            {"session": body(r)["session"], "query": r["utterance"], "mode": "hybrid", "top_k": 10}
            for r in tool_reqs]))
        out_tool = http_stats(tres, twall, TOOL_BUDGET_MS)
        # the HTTP stack's own floor: the same number of GET /healthz at once (no engine work)
        cpu0 = tree_cpu_s(proc.pid)

        async def pings() -> tuple[list[tuple[float, Any]], float]:
            limits = httpx.Limits(max_connections=len(reqs), max_keepalive_connections=len(reqs))
            async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as c:
                async def one() -> tuple[float, Any]:
                    t = time.perf_counter()
                    r = await c.get("/healthz")
                    return (time.perf_counter() - t) * 1000, r
                t1 = time.perf_counter()
                got = await asyncio.gather(*(one() for _ in reqs))
                return list(got), time.perf_counter() - t1
        hres, hwall = asyncio.run(pings())
        out["healthz_burst"] = {**{k: v for k, v in http_stats(hres, hwall).items() if k != "degraded"},
                                "server_cpu_ms_per_request": round((tree_cpu_s(proc.pid) - cpu0) * 1000 / len(reqs), 1)}
        return {"workers": workers, "engine_processes": engine_processes, "ready_s": round(ready_s, 2),
                "retrieve": out, "tool": out_tool}
    finally:
        t = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutdown_s = time.perf_counter() - t
        print(f"serve shut down in {shutdown_s:.2f} s (exit {proc.returncode})", file=sys.stderr)


def tree_cpu_s(root: int) -> float:
    """User + system CPU seconds of ``root`` and its descendants so far (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            f = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(d.name)] = (int(f[1]), (int(f[11]) + int(f[12])) / tick)
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, (ppid, _) in stats.items() if ppid in tree} - tree
        grew = bool(more)
        tree |= more
    return sum(stats[p][1] for p in tree if p in stats)


def http_stats(res: list[tuple[float, Any]], wall: float, budget_ms: int = BUDGET_MS) -> dict[str, Any]:
    lat = [ms for ms, _ in res]
    codes: dict[str, int] = {}
    degraded = 0
    for _, r in res:
        code = str(getattr(r, "status_code", type(r).__name__))
        codes[code] = codes.get(code, 0) + 1
        if getattr(r, "status_code", 0) == 200:
            d = r.json()
            degraded += bool(d.get("degraded")) if isinstance(d, dict) else 0
    by_worker: dict[str, int] = {}
    for _, r in res:
        w = getattr(r, "headers", {}).get("x-hopweave-worker") if hasattr(r, "headers") else None
        if w:
            by_worker[w] = by_worker.get(w, 0) + 1
    return {**mm.summary(lat), "wall_s": round(wall, 2), "rps": round(len(lat) / wall, 1), "status": codes,
            "degraded": degraded, "answered_by_worker": sorted(by_worker.values(), reverse=True),
            **server_timing(res, budget_ms)}


def server_timing(res: list[tuple[float, Any]], budget_ms: int) -> dict[str, Any]:
    """Where the answered requests' time went, from the server's ``Server-Timing`` header (absent
    before issue 13's deadline work): arrival to handler (``queue``), engine, serialisation,
    server total, and the rest of the client's latency (``outside``: the client, the kernel and
    uvicorn before the request's task ran); ``server_late``: server total over the budget."""
    phases: dict[str, list[float]] = {}
    for ms, r in res:
        head = getattr(r, "headers", {}).get("server-timing") if hasattr(r, "headers") else None
        if not head:
            continue
        got = {}
        for part in head.split(","):
            name, _, dur = part.strip().partition(";dur=")
            got[name] = float(dur)
        got["outside"] = ms - got.get("total", 0.0)
        for k, v in got.items():
            phases.setdefault(k, []).append(v)
    if not phases:
        return {}
    over = [t - budget_ms for t in phases.get("total", []) if t > budget_ms]
    return {"server_timing_ms": {k: mm.summary(v) for k, v in phases.items()},
            "server_late": len(over), "server_late_max_over_ms": round(max(over), 1) if over else 0.0}


# ---- the run -------------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> dict[str, Any]:
    from hopweave.engine.engine import Engine

    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    n = args.concurrency
    res: dict[str, Any] = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                           "command": "python benchmarks/bench_concurrency.py " + " ".join(sys.argv[1:]),
                           "machine": machine(), "budget_ms": BUDGET_MS, "concurrency": n}
    store = Path(args.store)
    db = scenarios_of("deltabank")
    if args.bursts_only:
        over: dict[str, Any] = {}
        if args.search_process is not None:
            over["search_process"] = args.search_process == "on"
        if args.max_active is not None:
            over["max_active"] = args.max_active
        if args.ladder_max_active is not None:
            over["ladder_max_active"] = args.ladder_max_active
        engine = Engine.open(store, config=EngineConfig(**over) if over else None)
        res["config_overrides"] = over
        try:
            res["warmup_ms"] = engine.warmup()
            bursts(res, engine, db, args, log)
        finally:
            engine.close()
        for w in args.pool_workers:
            res[f"pool_{w}"] = pool_run(store, w, db, args, log)
        res["machine"]["load_avg_end"] = round(os.getloadavg()[0], 2)
        return res
    if args.scale_out:
        res["scale_out"] = scale_out(store, args.scale_out, args.scale_rounds, n, args.clients_per_worker,
                                     args.scale_seconds, db, log)
        res["machine"]["load_avg_end"] = round(os.getloadavg()[0], 2)
        return res
    if args.tool_rounds:
        engine = Engine.open(store)
        try:
            res["warmup_ms"] = engine.warmup()
            res["tool_lanes"] = tool_lanes(engine, db, n, args.tool_rounds, log)
        finally:
            engine.close()
        res["machine"]["load_avg_end"] = round(os.getloadavg()[0], 2)
        return res
    if args.http_only:
        http_runs(args, res, store, db, n)
        res["machine"]["load_avg_end"] = round(os.getloadavg()[0], 2)
        return res
    log("cold start ...")
    res["cold_start"] = mm.cold_start(store, BUDGET_MS, 1.0)
    engine = Engine.open(store)
    try:
        res["warmup_ms"] = engine.warmup()
        log("sequential (warm) ...")
        res["sequential"] = sequential(engine, requests(db, args.runs, "s"))
        log(f"{n} threads ...")
        res["threads"] = engine_stats(*burst(lambda r: call(engine, r), requests(db, n, "t")))
        log(f"{n} aretrieve ...")
        res["aretrieve"] = aretrieve_burst(engine, requests(db, n, "a"))
        log(f"{n} agent-tool calls ...")
        res["tool"] = tool_burst(engine, requests(db, n, "k"))
        log("naive + langchain baselines ...")
        res["naive_top10"] = naive_burst(engine, requests(db, n, "n"))
        res["langchain_ensemble"] = {"skipped": "--no-langchain"} if args.no_langchain else \
            langchain_burst(engine, requests(db, n, "l"), "deltabank")
        if args.sustained:
            log(f"sustained: {n} closed-loop clients for {args.sustained} s ...")
            res["sustained"] = sustained(engine, requests(db, max(n * 4, 400), "c"), n, args.sustained)
        if args.overload:
            log(f"overload: {args.overload} threads ...")
            res["overload_threads"] = engine_stats(*burst(lambda r: call(engine, r),
                                                          requests(db, args.overload, "o")))
    finally:
        engine.close()
    if args.telecom_store:
        log("telecom ...")
        tc = scenarios_of("telecom")
        eng = Engine.open(args.telecom_store)
        try:
            eng.warmup()
            res["telecom_sequential"] = sequential(eng, requests(tc, args.runs, "s"))
            res["telecom_threads"] = engine_stats(*burst(lambda r: call(eng, r), requests(tc, n, "t")))
        finally:
            eng.close()
    for w in args.pool_workers:
        res[f"pool_{w}"] = pool_run(store, w, db, args, log)
    if not args.no_http:
        http_runs(args, res, store, db, n)
    res["machine"]["load_avg_end"] = round(os.getloadavg()[0], 2)
    return res


def bursts(res: dict[str, Any], engine: Any, db: list[Any], args: argparse.Namespace,
           log: Callable[[str], None], prefix: str = "", cpu: Callable[[], float] | None = None) -> None:
    """The 100-thread and ``aretrieve`` bursts (and --overload, --work-budget-ms, --sustained) on
    ``engine`` (an Engine or an EnginePool: the same ``retrieve`` / ``aretrieve``). Each burst also
    reports the CPU it used (``cpu()``: this process, plus a pool's workers) per retrieval and per
    second of wall time (``cores_used``: at most 1 for one process holding the GIL)."""
    n = args.concurrency
    cpu = cpu or (lambda: engine_cpu_s(engine))

    def measured(name: str, run: Callable[[], dict[str, Any]], calls: int) -> None:
        c0, t0 = cpu(), time.perf_counter()
        out = run()
        used, wall = cpu() - c0, time.perf_counter() - t0
        out["cpu_ms_per_retrieval"] = round(used * 1000 / calls, 1)
        out["cores_used"] = round(used / wall, 2)
        res[name] = out

    def checked(run: Callable[[list[dict[str, Any]]], tuple[list[tuple[float, Any]], float]],
                reqs: list[dict[str, Any]]) -> Callable[[], dict[str, Any]]:
        def go() -> dict[str, Any]:
            got, wall = run(reqs)
            return {**engine_stats(got, wall), **answers(got, reqs, db)}
        return go

    t_reqs, a_reqs = requests(db, n, "t"), requests(db, n, "a")
    log(f"{prefix}{n} threads ...")
    measured("threads", checked(lambda q: burst(lambda r: call(engine, r), q), t_reqs), n)
    log(f"{prefix}{n} aretrieve ...")
    measured("aretrieve", checked(lambda q: mm.gather_aretrieve(engine, q), a_reqs), n)
    # the same requests one at a time, after the bursts: the quiet pass rate the bursts' answers
    # are measured against
    log(f"{prefix}the same {n} requests one at a time (quiet) ...")
    for key, reqs in (("threads", t_reqs), ("aretrieve", a_reqs)):
        quiet = answers([(0.0, call(engine, r)) for r in reqs], reqs, db)
        res[key]["quiet_passed"] = quiet["passed"]
        res[key]["quiet_full"] = quiet["full"]
        res[key]["pass_ratio_to_quiet"] = round(res[key]["passed"] / max(quiet["passed"], 1), 3)
    if getattr(getattr(engine, "admission", None), "ladder_slots", None) is not None:
        log(f"{prefix}the same {n} requests on the full and the facts_and_lexical rung, one at a time ...")
        res["rung_quality"] = rung_quality(engine, t_reqs, db)
    if args.overload:
        log(f"{prefix}overload: {args.overload} threads ...")
        measured("overload_threads", lambda: engine_stats(*burst(lambda r: call(engine, r),
                                                                 requests(db, args.overload, "o"))), args.overload)
    if args.work_budget_ms:  # the work itself: every request has time to finish, wall = CPU / cores used
        log(f"{prefix}{n} threads, budget {args.work_budget_ms} ms ...")
        work = [{**r, "budget_ms": args.work_budget_ms} for r in requests(db, n, "w")]
        measured("threads_work", lambda: engine_stats(*burst(lambda r: call(engine, r), work),
                                                      budget_ms=args.work_budget_ms), n)
    if args.sustained:
        log(f"{prefix}sustained: {n} closed-loop clients for {args.sustained} s ...")
        res["sustained"] = sustained(engine, requests(db, max(n * 4, 400), "c"), n, args.sustained)


def _cpu_s(pids: Sequence[int]) -> float:
    """User + system CPU seconds of these processes (``/proc/PID/stat``)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def engine_cpu_s(engine: Any) -> float:
    """CPU seconds so far of this process plus the engine's search process (the child that
    serves an embedded vector shard, ``EngineConfig.search_process``), if it has one."""
    pid = getattr(getattr(engine, "index", None), "pid", None)
    return time.process_time() + (_cpu_s([pid]) if pid else 0.0)


def search_process_cpu_s(engine: Any) -> float:
    """CPU seconds so far of the engine's search process alone (0 without one)."""
    pid = getattr(getattr(engine, "index", None), "pid", None)
    return _cpu_s([pid]) if pid else 0.0


def pool_run(store: Path, workers: int, db: list[Any], args: argparse.Namespace,
             log: Callable[[str], None]) -> dict[str, Any]:
    """The same bursts through ``EnginePool.open(store, workers=N)`` (opened after the plain
    engine closed: each worker serves a private copy of the vector shard). Adds the pool's start
    time and the CPU of the parent and of the workers per retrieval."""
    from hopweave.adapters.pool import EnginePool

    log(f"pool of {workers}: starting ...")
    t = time.perf_counter()
    pool = EnginePool.open(store, workers=workers)
    out: dict[str, Any] = {"workers": workers, "open_s": round(time.perf_counter() - t, 2)}
    try:
        pids = pool.pids()
        c_parent, c_workers = time.process_time(), _cpu_s(pids)
        bursts(out, pool, db, args, log, prefix=f"pool of {workers}: ",
               cpu=lambda: time.process_time() + _cpu_s(pids))
        calls = args.concurrency * (3 if args.work_budget_ms else 2) + args.overload
        if not args.sustained:
            out["cpu_ms_per_retrieval_workers"] = round((_cpu_s(pids) - c_workers) * 1000 / calls, 1)
            out["cpu_ms_per_retrieval_parent"] = round((time.process_time() - c_parent) * 1000 / calls, 1)
        out["stats"] = pool.stats()
    finally:
        pool.close()
    return out
def scale_out(store: Path, sizes: Sequence[int], rounds: int, n: int, clients_per_worker: int, seconds: float,
              db: list[Any], log: Callable[[str], None]) -> dict[str, Any]:
    """Full retrievals per second through ``EnginePool.open(store, workers=N)`` for each N in
    ``sizes``, the order alternating per round (a fresh pool each time, 40 warm-up requests
    first). Per pool: ``work``, a burst of ``n`` threads with a budget every request can finish
    in (20 s): full answers / wall = the pool's full-retrieval rate at saturation; ``sustained``,
    ``clients_per_worker`` x N closed-loop clients at the shipped budget for ``seconds``: full
    answers per second and their p99, and per CPU second used by this process and its children
    (the engine processes and their search processes): the sizing rule's figure. Medians over the
    rounds, and per process (the rate / N)."""
    from hopweave.adapters.pool import EnginePool

    runs: dict[int, list[dict[str, Any]]] = {w: [] for w in sizes}
    for r in range(rounds):
        for w in (sizes if r % 2 == 0 else list(reversed(sizes))):
            log(f"scale-out round {r + 1}/{rounds}: {w} engine process(es) ...")
            t = time.perf_counter()
            pool = EnginePool.open(store, workers=w)
            one: dict[str, Any] = {"open_s": round(time.perf_counter() - t, 1), "load_avg": round(os.getloadavg()[0], 2)}
            try:
                for q in requests(db, 40, f"x{r}{w}"):
                    call(pool, q)
                work = [{**q, "budget_ms": 20_000} for q in requests(db, n, f"y{r}{w}")]
                c0 = tree_cpu_s(os.getpid())
                got, wall = burst(functools.partial(call, pool), work)
                used = tree_cpu_s(os.getpid()) - c0
                full = sum(1 for _, x in got if not isinstance(x, BaseException) and intact(x))
                one["work"] = {**engine_stats(got, wall, budget_ms=20_000), "full": full,
                               "full_per_s": round(full / wall, 1), "cores_used": round(used / wall, 2),
                               "full_per_cpu_s": round(full / max(used, 1e-9), 1)}
                c0, t0 = tree_cpu_s(os.getpid()), time.perf_counter()
                loop = sustained(pool, requests(db, 400, f"z{r}{w}"), clients_per_worker * w, seconds)
                used, wall = tree_cpu_s(os.getpid()) - c0, time.perf_counter() - t0
                one["sustained"] = {**loop, "cores_used": round(used / wall, 2),
                                    "full_per_cpu_s": round(loop["full"] / max(used, 1e-9), 1)}
            finally:
                pool.close()
            runs[w].append(one)
    out: dict[str, Any] = {"rounds": rounds, "burst": n, "clients_per_worker": clients_per_worker, "seconds": seconds}
    for w, rs in runs.items():
        rate = statistics.median(x["work"]["full_per_s"] for x in rs)
        loop = statistics.median(x["sustained"]["full_per_s"] for x in rs)
        out[f"processes_{w}"] = {
            "work_full_per_s_median": rate, "work_full_per_s_per_core": round(rate / w, 1),
            "work_p99_ms_median": statistics.median(x["work"]["p99_ms"] for x in rs),
            "sustained_full_per_s_median": loop, "sustained_full_per_s_per_core": round(loop / w, 1),
            "sustained_p99_ms_median": statistics.median(x["sustained"]["p99_ms"] for x in rs),
            "sustained_late_median": statistics.median(x["sustained"]["late"] for x in rs),
            # the sizing rule's figure: full answers per CPU second (this process, the engine
            # processes and their search processes), i.e. per core kept busy
            "sustained_full_per_cpu_s_median": statistics.median(x["sustained"]["full_per_cpu_s"] for x in rs),
            "sustained_cores_used_median": statistics.median(x["sustained"]["cores_used"] for x in rs),
            "runs": rs}
    return out


def http_runs(args: argparse.Namespace, res: dict[str, Any], store: Path, db: list[Any], n: int) -> None:
    """One ``hopweave serve`` run per ``--workers`` value, the same requests each time: ``http``
    (the first) and ``http_workers_<N>`` (each)."""
    def log(m: str) -> None:
        print(m, file=sys.stderr, flush=True)

    for i, spec in enumerate(str(args.workers).split(",")):
        # "N": --workers N; "pN": one HTTP process and --engine-processes N
        pooled = spec.startswith("p")
        w = int(spec[1:] if pooled else spec)
        log(f"hopweave serve {'--engine-processes' if pooled else '--workers'} {w} over loopback ...")
        out = http_burst(store, requests(db, n + args.http_warm, "h"), requests(db, n, "hk"), args.port + i,
                         workers=w, engine_processes=pooled, warm=args.http_warm)
        out["warm_requests"] = args.http_warm
        out["load_avg_after"] = round(os.getloadavg()[0], 2)
        res[f"http_engine_processes_{w}" if pooled else f"http_workers_{w}"] = out
        res.setdefault("http", out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", required=True, help="a DeltaBank store (bench_maria.py --build-only)")
    ap.add_argument("--telecom-store", default=None, help="a telecom store (hopweave load examples/telecom)")
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--overload", type=int, default=0, help="also a burst of this many threads")
    ap.add_argument("--runs", type=int, default=40, help="sequential warm requests")
    ap.add_argument("--sustained", type=float, default=0.0,
                    help="also this many seconds of --concurrency closed-loop clients (e.g. 60)")
    ap.add_argument("--port", type=int, default=8797)
    ap.add_argument("--no-http", action="store_true")
    ap.add_argument("--workers", default="1,2",
                    help="hopweave serve --workers values to measure, one run each (e.g. 1,2); pN: one HTTP "
                         "process in front of --engine-processes N (e.g. 2,p2)")
    ap.add_argument("--http-only", action="store_true", help="measure only the hopweave serve runs")
    ap.add_argument("--http-warm", type=int, default=3,
                    help="distinct requests sent one at a time before each server's burst (3: just started)")
    ap.add_argument("--no-langchain", action="store_true")
    ap.add_argument("--pool-workers", type=int, nargs="*", default=[],
                    help="also run the bursts through an EnginePool of each of these sizes (e.g. --pool-workers 2)")
    ap.add_argument("--work-budget-ms", type=int, default=0,
                    help="also a burst of --concurrency threads with this budget (e.g. 20000): the work, not the deadline")
    ap.add_argument("--search-process", choices=("on", "off"), default=None,
                    help="with --bursts-only: EngineConfig.search_process (default: as shipped)")
    ap.add_argument("--max-active", type=int, default=None,
                    help="with --bursts-only: EngineConfig.max_active (default: as shipped)")
    ap.add_argument("--ladder-max-active", type=int, default=None,
                    help="with --bursts-only: EngineConfig.ladder_max_active (default: as shipped)")
    ap.add_argument("--bursts-only", action="store_true",
                    help="only the thread and aretrieve bursts (and --overload, --sustained), plain engine then pools")
    ap.add_argument("--tool-rounds", type=int, default=0,
                    help="only the agent-tool calls, this many rounds: their own slots vs the request slots, "
                         "alone and among as many retrievals (e.g. 3)")
    ap.add_argument("--scale-out", type=int, nargs="*", default=[],
                    help="only the scale-out runs: full retrievals per second through EnginePool of each of "
                         "these sizes (e.g. --scale-out 1 2)")
    ap.add_argument("--scale-rounds", type=int, default=3, help="with --scale-out: rounds (alternating order)")
    ap.add_argument("--clients-per-worker", type=int, default=4,
                    help="with --scale-out: closed-loop clients per engine process at the shipped budget")
    ap.add_argument("--scale-seconds", type=float, default=15.0, help="with --scale-out: seconds of closed loop")
    ap.add_argument("--json", default=None, help="write the result here")
    args = ap.parse_args(argv)
    res = run(args)
    text = json.dumps(res, indent=1, default=str)
    if args.json:
        Path(args.json).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
