"""Measurements for ``bench_maria``: stage timings, sequential and concurrent retrievals, search
alone, traversals, ingestion, cold start, memory. Every function returns plain dicts (ms, s, MiB).

Nothing here asserts a speed: the runner reports figures and compares them to the targets.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Sequence

from generator.scale import TENANT, maria_filter, scale_documents

from hopweave.search.embedder import Embedder

MARIA_UTTERANCE = "I want to dispute this $39 late fee on my Platinum card."
MARIA_SESSION = {"tenant_id": "deltabank", "customer_id": "CUST_4421", "region": "US", "channel": "phone",
                 "agent_id": "AGENT_17", "locale": "en-US"}
AS_OF = "2026-05-12"
_PREFIXES = ("", "Hi, ", "Hello. ", "Good morning, ", "Hey, ", "Um, ", "Sorry to bother you, ", "Okay so ",
             "Hi there. ", "Quick question: ")
_SUFFIXES = ("", " Please help.", " Thanks.", " It showed up this week.", " Can you look at it?",
             " I always pay on time.", " Is that right?", " I'd like it removed.", " What can you do?",
             " I think it's unfair.")


def pct(xs: Sequence[float], q: float) -> float:
    """The q-quantile (nearest rank) of xs, rounded to 0.01; NaN for an empty list."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return round(s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))], 2)


def summary(xs: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / p99 / max / mean of a latency list (ms)."""
    return {"n": len(xs), "p50_ms": pct(xs, 0.5), "p95_ms": pct(xs, 0.95), "p99_ms": pct(xs, 0.99),
            "max_ms": round(max(xs), 2) if xs else float("nan"),
            "mean_ms": round(statistics.fmean(xs), 2) if xs else float("nan")}


def maria_variants(n: int, salt: str = "") -> list[str]:
    """``n`` distinct phrasings of Maria's sentence (same meaning; defeats the query caches).
    A different ``salt`` gives a different set (each phase of a run uses its own)."""
    out = [f"{p}{MARIA_UTTERANCE}{s}" for s in _SUFFIXES for p in _PREFIXES]
    while len(out) < n:
        out += [f"{u} (call {len(out) + i})" for i, u in enumerate(out[: n - len(out)])]
    return [f"{u} (ref {salt})" if salt else u for u in out[:n]]


def peak_rss_mib() -> float:
    """High-water mark of this process's resident set (MiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def rss_mib() -> float | None:
    """Current resident set of this process (MiB), via psutil when installed."""
    try:
        import psutil
    except ImportError:
        return None
    return round(psutil.Process().memory_info().rss / 2**20, 1)


# ---- stage instrumentation -------------------------------------------------------------------
class StageRecorder:
    """Times the parts of a retrieval the engine's own ``result.timings_ms`` (understand, search,
    traverse, precedent, assemble, record, total) does not split, by wrapping methods of the
    engine's public stage objects, on the instances only:

    - ``classify`` / ``resolve``: the ``classifier`` and ``resolver`` of each domain's
      understanding stage (:meth:`Engine.understander_for`); an embed call made inside them
      counts there;
    - ``search``: the vector index call (``engine.index.search``);
    - ``embed``: the embed call that precedes an index search on the same thread (the search
      query's embedding); ``precedent_embed``: the other embed calls of a request (the
      precedent ranking's), those no index search claimed.

    Attribution is per process, so read it with one request in flight (the sequential runs)."""

    def __init__(self) -> None:
        self._tls = threading.local()
        self._lock = threading.Lock()
        self.events: list[tuple[str, float]] = []
        self._pending: dict[int, float] = {}  # thread id -> embed ms not yet claimed by a search

    def _add(self, stage: str, ms: float) -> None:
        with self._lock:
            self.events.append((stage, ms))

    def _nested(self, key: str, fn: Callable[..., Any], done: Callable[[float], None]) -> Callable[..., Any]:
        """``fn`` timed; ``done(ms)`` runs for the outermost call of ``key`` on a thread only."""
        tls = self._tls

        def inner(*a: Any, **k: Any) -> Any:
            depth = getattr(tls, key, 0)
            setattr(tls, key, depth + 1)
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                setattr(tls, key, depth)
                if depth == 0:
                    done((time.perf_counter() - t) * 1000)

        return inner

    def _understanding(self, fn: Callable[..., Any], stage: str) -> Callable[..., Any]:
        return self._nested("understanding", fn, lambda ms: self._add(stage, ms))

    def _embedded(self, ms: float) -> None:
        if getattr(self._tls, "understanding", 0):
            return  # the classifier's own embedding: part of classify
        tid = threading.get_ident()
        with self._lock:
            self._pending[tid] = self._pending.get(tid, 0.0) + ms

    def _searched(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def inner(*a: Any, **k: Any) -> Any:
            with self._lock:
                ms = self._pending.pop(threading.get_ident(), None)
                if ms is not None:
                    self.events.append(("embed", ms))
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self._add("search", (time.perf_counter() - t) * 1000)

        return inner

    def install(self, engine: Any) -> None:
        """Instrument ``engine``'s understanding stages, embedder and index in place. Raises
        TypeError when an understanding stage has no ``classifier`` / ``resolver`` to time."""
        domains = engine.domains.domains() if engine.domains is not None else []
        stages = {id(s): s for s in (engine.understander_for(d) for d in domains)}
        for u in stages.values():
            if not (hasattr(u, "classifier") and hasattr(u, "resolver")):
                raise TypeError(f"{type(u).__name__} has no classifier/resolver to time")
            u.classifier.classify = self._understanding(u.classifier.classify, "classify")
            u.resolver.resolve = self._understanding(u.resolver.resolve, "resolve")
        emb = engine.embedder
        for name in ("embed", "embed_query"):
            if hasattr(emb, name):
                setattr(emb, name, self._nested("embedding", getattr(emb, name), self._embedded))
        if engine.index is not None:
            engine.index.search = self._searched(engine.index.search)

    def drain(self) -> dict[str, float]:
        """Per-stage totals (ms) recorded since the last drain; the embed calls no index search
        claimed count as ``precedent_embed``."""
        with self._lock:
            ev, self.events = self.events, []
            ev += [("precedent_embed", ms) for ms in self._pending.values()]
            self._pending = {}
        out: dict[str, float] = {}
        for k, v in ev:
            out[k] = out.get(k, 0.0) + v
        return out


STAGES = ("classify", "resolve", "understand", "embed", "search", "traverse", "precedent", "assemble", "record")


def _stage_row(result: Any, extra: dict[str, float]) -> dict[str, float]:
    t = dict(result.timings_ms)
    row = dict(extra.items())
    for k in ("understand", "traverse", "precedent", "assemble", "record", "total"):
        if k in t:
            row[k] = t[k]
    row["search_branch"] = t.get("search", float("nan"))
    return row


# ---- retrieval runs ------------------------------------------------------------------------
def _problems(r: Any) -> list[str]:
    return [f"{d.stage}:{d.what}" for d in r.degraded]


def maria_sequential(engine: Any, recorder: StageRecorder | None, runs: int, utterances: Sequence[str],
                     record: bool = True) -> dict[str, Any]:
    """``runs`` retrievals one after another (cycling ``utterances``), with the stage breakdown."""
    lat: list[float] = []
    rows: list[dict[str, float]] = []
    degraded: dict[str, int] = {}
    if recorder:
        recorder.drain()
    for i in range(runs):
        t = time.perf_counter()
        r = engine.retrieve(utterances[i % len(utterances)], session=MARIA_SESSION, as_of=AS_OF, record=record)
        lat.append((time.perf_counter() - t) * 1000)
        rows.append(_stage_row(r, recorder.drain() if recorder else {}))
        for p in _problems(r):
            degraded[p] = degraded.get(p, 0) + 1
    stages = {}
    for k in ("classify", "resolve", "understand", "embed", "search", "search_branch", "traverse", "precedent",
              "precedent_embed", "assemble", "record", "total"):
        vals = [row[k] for row in rows if k in row]
        if vals:
            stages[k] = round(statistics.median(vals), 2)
    return {**summary(lat), "stages_p50_ms": stages, "degraded": degraded, "utterances": len(set(utterances))}


def _requests(scenarios: Sequence[Any], n: int, distinct: bool, salt: str = "") -> list[dict[str, Any]]:
    """n request kwargs cycling the scenarios; ``distinct`` varies the wording per repetition,
    ``salt`` marks every utterance of this phase (so an earlier phase's caches do not hit)."""
    out = []
    for i in range(n):
        sc = scenarios[i % len(scenarios)]
        rep = i // len(scenarios)
        u = sc.utterance
        if distinct and rep:
            u = f"{_PREFIXES[rep % len(_PREFIXES)]}{u}{_SUFFIXES[(rep // len(_PREFIXES) + rep) % len(_SUFFIXES)]}"
        if salt:
            u = f"{u} (ref {salt})"
        kw = {"session": sc.resolved_session(), "as_of": sc.as_of}
        if sc.options.token_budget:
            kw["token_budget"] = sc.options.token_budget
        if sc.options.pattern_overrides:
            kw["pattern_overrides"] = sc.options.pattern_overrides
        out.append({"utterance": u, "name": sc.name, **kw})
    return out


def maria_requests(n: int, distinct: bool, salt: str = "") -> list[dict[str, Any]]:
    """n Maria requests (distinct phrasings, or her exact sentence n times)."""
    us = maria_variants(n, salt) if distinct else [MARIA_UTTERANCE] * n
    return [{"utterance": u, "name": "maria", "session": MARIA_SESSION, "as_of": AS_OF} for u in us]


def _collect(results: list[tuple[float, Any]], wall: float) -> dict[str, Any]:
    lat = [ms for ms, _ in results]
    degraded: dict[str, int] = {}
    errors = 0
    for _, r in results:
        if isinstance(r, BaseException):
            errors += 1
            continue
        for p in _problems(r):
            degraded[p] = degraded.get(p, 0) + 1
    return {**summary(lat), "wall_s": round(wall, 3), "throughput_rps": round(len(results) / wall, 1),
            "errors": errors, "degraded": degraded}


def concurrent_threads(engine: Any, requests: Sequence[dict[str, Any]], record: bool = True) -> dict[str, Any]:
    """All requests at once, one thread each (released together); per-request latency."""
    start = threading.Event()

    def one(req: dict[str, Any]) -> tuple[float, Any]:
        kw = {k: v for k, v in req.items() if k not in ("utterance", "name")}
        start.wait()
        t = time.perf_counter()
        try:
            r = engine.retrieve(req["utterance"], record=record, **kw)
        except Exception as exc:  # reported as an error, the run goes on
            r = exc
        return (time.perf_counter() - t) * 1000, r

    with ThreadPoolExecutor(max_workers=len(requests)) as pool:
        futs = [pool.submit(one, r) for r in requests]
        time.sleep(0.05)
        t0 = time.perf_counter()
        start.set()
        results = [f.result() for f in futs]
        wall = time.perf_counter() - t0
    return _collect(results, wall)


def concurrent_asyncio(engine: Any, requests: Sequence[dict[str, Any]], record: bool = True) -> dict[str, Any]:
    """All requests as ``aretrieve`` coroutines gathered on one event loop."""
    return _collect(*gather_aretrieve(engine, requests, record=record))


def gather_aretrieve(engine: Any, requests: Sequence[dict[str, Any]],
                     **extra: Any) -> tuple[list[tuple[float, Any]], float]:
    """Every request (``utterance`` plus ``retrieve`` keywords; ``name`` is ignored) as an
    ``aretrieve`` coroutine, all gathered at once on one event loop: ``([(ms, result or
    exception), ...], wall seconds)``. ``extra``: keywords added to every call."""

    async def one(req: dict[str, Any]) -> tuple[float, Any]:
        kw = {k: v for k, v in req.items() if k not in ("utterance", "name")}
        t = time.perf_counter()
        try:
            r = await engine.aretrieve(req["utterance"], **extra, **kw)
        except Exception as exc:
            r = exc
        return (time.perf_counter() - t) * 1000, r

    async def main() -> tuple[list[tuple[float, Any]], float]:
        t0 = time.perf_counter()
        res = await asyncio.gather(*(one(r) for r in requests))
        return list(res), time.perf_counter() - t0

    return asyncio.run(main())


# ---- search and traversal alone ------------------------------------------------------------------
def maria_where() -> Any:
    """Maria's filter without the clauses the index adds itself (tenant, version=current)."""
    from hopweave.models.filters import And

    tree = maria_filter()
    return And(clauses=tuple(c for c in tree.clauses if getattr(c, "field", None) not in ("tenant_id", "version")))


def query_vectors(embedder: Any, queries: Sequence[str]) -> list[Any]:
    return list(embedder.embed(list(queries)))


def search_alone(index: Any, embedder: Any, queries: Sequence[str], vectors: Sequence[Any], repeats: int,
                 profile: str | None = None) -> dict[str, Any]:
    """Pre-filtered hybrid search (Maria's filter) with precomputed query vectors: latency and
    the top-10 per query (for the quality table)."""
    from hopweave.search.profiles import get_profile

    prof = get_profile(profile)
    where = maria_where()
    for q, v in zip(queries, vectors):  # warm-up
        index.search(TENANT, q, prof, where=where, limit=10, query_vector=v, query_space=embedder.space)
    lat: list[float] = []
    parts: dict[str, list[float]] = {}
    tops: list[list[dict[str, Any]]] = []
    for rep in range(repeats):
        for q, v in zip(queries, vectors):
            t = time.perf_counter()
            r = index.search(TENANT, q, prof, where=where, limit=10, query_vector=v, query_space=embedder.space)
            lat.append((time.perf_counter() - t) * 1000)
            for k, x in r.timings_ms.items():
                parts.setdefault(k, []).append(x)
            if rep == 0:
                tops.append([dict(h.payload, chunk_id=h.chunk_id) for h in r.hits])
    return {**summary(lat), "eligible": r.coverage.eligible_records, "profile": prof.name,
            "parts_p50_ms": {k: pct(v, 0.5) for k, v in parts.items()}, "_tops": tops}


def naive_search(index: Any, embedder: Any, queries: Sequence[str], vectors: Sequence[Any],
                 repeats: int) -> dict[str, Any]:
    """The naive baseline: dense top-10 over the tenant's whole collection (every version and
    status, no metadata filter), then Maria's filter applied to those 10 afterwards."""
    from hopweave.models.filters import matches
    from hopweave.search.profiles import get_profile

    prof = get_profile("dense_only")
    flt = maria_filter()
    lat: list[float] = []
    tops: list[list[dict[str, Any]]] = []
    for rep in range(repeats + 1):
        for q, v in zip(queries, vectors):
            t = time.perf_counter()
            r = index.search(TENANT, q, prof, where=None, limit=10, query_vector=v, query_space=embedder.space,
                             include_superseded=True)
            [h for h in r.hits if matches(flt, dict(h.payload, tenant_id=TENANT))]  # the post-filter, timed
            ms = (time.perf_counter() - t) * 1000
            if rep:
                lat.append(ms)
            else:
                tops.append([dict(h.payload, chunk_id=h.chunk_id) for h in r.hits])
    return {**summary(lat), "_tops": tops}


def traversal_modes(engine: Any, runs: int) -> dict[str, Any]:
    """Maria's LateFeeDispute patterns in parallel (the engine's pool size) vs one after
    another (``max_workers=1``), via engineer A's executor."""
    from hopweave.graph.traverse import run_goal_patterns
    from hopweave.models.common import Bindings, Session, to_datetime

    patterns = engine.graph.patterns("LateFeeDispute")
    ents = {"Tier": "Platinum", "Product": "Platinum_Card", "Region": "US"}
    b = Bindings(session=Session.model_validate(MARIA_SESSION), as_of=to_datetime(AS_OF), goal="LateFeeDispute",
                 entities=ents)
    out: dict[str, Any] = {"patterns": len(patterns)}
    for name, workers in (("parallel", engine.config.max_workers), ("sequential", 1)):
        for _ in range(5):
            run_goal_patterns(engine.graph, TENANT, patterns, b, max_workers=workers)
        lat = []
        for _ in range(runs):
            t = time.perf_counter()
            res = run_goal_patterns(engine.graph, TENANT, patterns, b, max_workers=workers)
            lat.append((time.perf_counter() - t) * 1000)
        out[name] = {**summary(lat), "rows": sum(len(r.rows) for r in res),
                     "sum_of_patterns_ms": round(sum(r.elapsed_ms for r in res), 2)}
    return out


# ---- ingestion ---------------------------------------------------------------------------
class TimedEmbedder(Embedder):
    """Counts the wall time spent inside ``embed`` of the wrapped embedder."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.space = inner.space
        self.seconds = 0.0
        self.texts = 0

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> Any:
        t = time.perf_counter()
        try:
            return self.inner.embed(texts, batch_size=batch_size)
        finally:
            self.seconds += time.perf_counter() - t
            self.texts += len(texts)

    def embed_one(self, text: str) -> Any:
        return self.embed([text])[0]


def ingest_sample(embedder: Any, chunks: int, seed: int) -> dict[str, Any]:
    """A live, uncached ingest of a fresh ``chunks``-chunk scale corpus into a temporary store:
    chunks/s and the share of the ingest's wall time spent inside the embedder."""
    import deltabank_pack

    from hopweave.search.edge_index import EdgeIndex
    from hopweave.search.ingest import Ingestor

    docs = scale_documents(chunks, seed + 1)
    timed = TimedEmbedder(embedder)
    with tempfile.TemporaryDirectory(prefix="hopweave-ingest-") as d:
        index = EdgeIndex(d, deltabank_pack.schema())
        t = time.perf_counter()
        rep = Ingestor(index, timed).ingest(docs)
        wall = time.perf_counter() - t
        index.close()
    return {"chunks": rep.chunks_written, "documents": len(docs), "seconds": round(wall, 2),
            "chunks_per_s": round(rep.chunks_written / wall, 1), "embed_s": round(timed.seconds, 2),
            "embedder_share": round(timed.seconds / wall, 4),
            "embed_chunks_per_s": round(timed.texts / timed.seconds, 1) if timed.seconds else None}


# ---- cold start (a child process) ------------------------------------------------------------
_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from hopweave.engine.engine import Engine, EngineConfig
t_import = time.perf_counter() - t0
store, budget, scale = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
sess = json.loads(sys.argv[4])
t1 = time.perf_counter()
eng = Engine.open(store, config=EngineConfig(budget_ms=budget, pattern_budget_scale=scale))
t_open = time.perf_counter() - t1
warm = eng.warmup()  # what the first retrieve would load anyway, timed part by part
r = eng.retrieve(sys.argv[5], session=sess, as_of=sys.argv[6], record=False)
t_first = time.perf_counter() - t1
cpu_first = time.process_time()  # the whole process: imports, open, warm-up, first answer
rss_first = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t2 = time.perf_counter()
r2 = eng.retrieve(sys.argv[5], session=sess, as_of=sys.argv[6], record=False)
t_second = time.perf_counter() - t2
eng.close()
print(json.dumps({"import_s": round(t_import, 2), "open_s": round(t_open, 2), "first_answer_s": round(t_first, 2),
                  "cpu_to_first_answer_s": round(cpu_first, 2),
                  "second_answer_ms": round(t_second * 1000, 1), "goal": r.goal, "warmup_ms": warm,
                  "degraded": [d.stage for d in r.degraded], "first_timings_ms": r.timings_ms,
                  "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                  "rss_after_first_mib": round(rss_first, 1)}))
"""


def cold_start(store: Path, budget_ms: int, pattern_scale: float) -> dict[str, Any]:
    """``Engine.open`` -> first answer in a fresh interpreter (imports timed separately), and
    that process's peak RSS: the memory of a serving engine over the whole store."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(store), str(budget_ms), str(pattern_scale), json.dumps(MARIA_SESSION),
         MARIA_UTTERANCE, AS_OF],
        capture_output=True, text=True, env=env, timeout=1800,
    )
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_wall_s"] = round(wall, 2)
    return out

