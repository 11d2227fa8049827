"""Benchmark: Maria's compositional retrieval at scale (issue 7).

    python benchmarks/bench_maria.py --chunks 50000 --nodes 1000000 --concurrency 100 --json

Builds (or reuses) a store with the DeltaBank graph at ``--nodes`` nodes and a vector index of
the example corpus plus ``--chunks`` generated chunks (``generator.scale``; embeddings
cached on disk), then measures in one run: Maria's full retrieval (p50/p95/p99 + stages),
concurrent retrievals (threads and asyncio), hybrid search alone over Maria's filtered set,
baselines as ratios (naive unfiltered top-10 + post-filter, sequential traversals, LangChain's
BM25 + vector EnsembleRetriever), ingestion, cold start, peak memory, and the scenarios' pass
rate at scale. Prints JSON (``--json``) or a summary, and writes a Markdown table (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The DeltaBank pack's generator (examples/deltabank/generator) builds the scale store.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "deltabank"))

import maria_measure as mm  # noqa: E402
from generator.scale import DEFAULT_SEED, GENERATOR_VERSION, QUALITY_QUERIES  # noqa: E402
from generator.scale_store import build_scale_store  # noqa: E402
from machine import machine  # noqa: E402
from maria_baselines import langchain_available, langchain_ensemble, post_filtered, quality  # noqa: E402

#: Targets of issue 7 (benchmarks, not tests).
TARGETS = {"maria_p50_ms_concurrent": 50.0, "maria_p99_ms_concurrent": 150.0, "search_alone_p50_ms": 15.0,
           "ingest_embedder_share": 0.90, "peak_memory_gib": 8.0}
STORE_FORMAT = 1




def default_store(chunks: int, nodes: int, seed: int) -> Path:
    from hopweave.search.eval.cache import default_cache_dir

    return default_cache_dir() / "bench" / f"maria-c{chunks}-n{nodes}-s{seed}"


def prepare_store(store: Path, chunks: int, nodes: int, seed: int, rebuild: bool, log: Any) -> dict[str, Any]:
    """Reuse ``store`` when it was built with the same parameters, else (re)build it."""
    meta_path = store / "bench_meta.json"
    want = {"format": STORE_FORMAT, "generator": GENERATOR_VERSION, "chunks": chunks, "nodes": nodes, "seed": seed}
    if not rebuild and meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        if meta.get("params") == want:
            log(f"reusing the store at {store}")
            from hopweave.graph import open_graph_store

            g = open_graph_store(store)
            if g.stats().get("journal_bytes"):
                g.compact()  # fold traces of earlier runs into the snapshot (steady cold start)
            g.close()
            return {**meta["build"], "reused": True}
    if store.exists():
        shutil.rmtree(store)
    store.mkdir(parents=True)
    log(f"building the store at {store} ({chunks} chunks, {nodes} nodes) ...")

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "embedding-cache" or done == total:
            log(f"  {stage} {done}/{total}")

    build = build_scale_store(store, chunks=chunks, nodes=nodes, seed=seed, progress=progress)
    meta_path.write_text(json.dumps({"params": want, "build": build}, indent=1, default=str))
    return {**build, "reused": False}


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 2) if a and b and a == a and b == b else None


def run(args: argparse.Namespace, log: Any = None) -> dict[str, Any]:
    """Run the whole benchmark; returns the result dict (see the module docstring)."""
    log = log or (lambda m: print(m, file=sys.stderr, flush=True))
    from hopweave.engine.engine import Engine, EngineConfig
    from hopweave.engine.replay import check, load_scenario, scenario_paths

    t_run = time.perf_counter()
    res: dict[str, Any] = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                           "command": args.command_line, "machine": machine(),
                           "params": {k: getattr(args, k) for k in ("chunks", "nodes", "concurrency", "seed", "runs",
                                                                   "budget_ms", "pattern_budget_scale")}}
    store = Path(args.store) if args.store else default_store(args.chunks, args.nodes, args.seed)
    res["store"] = prepare_store(store, args.chunks, args.nodes, args.seed, args.rebuild, log)
    if args.build_only:
        return res

    log("cold start (child process) ...")
    res["cold_start"] = mm.cold_start(store, args.budget_ms, args.pattern_budget_scale)

    cfg = EngineConfig(budget_ms=args.budget_ms, pattern_budget_scale=args.pattern_budget_scale)
    engine = Engine.open(store, config=cfg)
    try:
        res["warmup_ms"] = engine.warmup()
        rec = mm.StageRecorder()
        rec.install(engine)
        log(f"Maria sequential x{args.runs} ...")
        variants = mm.maria_variants(args.runs)
        res["maria_repeated"] = mm.maria_sequential(engine, rec, args.runs, [mm.MARIA_UTTERANCE])
        with _profile(args, "sequential"):
            res["maria_distinct"] = mm.maria_sequential(engine, rec, args.runs, variants)

        scen_dir = Path(__file__).resolve().parents[1] / "examples" / "deltabank" / "scenarios"
        scenarios = [s for s in (load_scenario(p) for p in scenario_paths([scen_dir]))
                     if not s.options.faults] if scen_dir and scen_dir.is_dir() else []
        n = args.concurrency
        log(f"concurrency {n}: Maria (distinct phrasings), threads ...")
        with _profile(args, "concurrent"):
            res["concurrent_maria_threads"] = mm.concurrent_threads(engine, mm.maria_requests(n, True, "c"))
        res["concurrent_maria_repeated_threads"] = mm.concurrent_threads(engine, mm.maria_requests(n, distinct=False))
        if scenarios:
            log(f"concurrency {n}: {len(scenarios)} scenarios, threads and asyncio ...")
            res["concurrent_varied_threads"] = mm.concurrent_threads(engine, mm._requests(scenarios, n, True, "t"))
            res["concurrent_varied_asyncio"] = mm.concurrent_asyncio(engine, mm._requests(scenarios, n, True, "a"))
            log("scenarios at scale ...")
            res["scenarios"] = _scenario_pass(engine, scenarios, check)

        log("search alone, naive baseline, traversals ...")
        queries = [q for q, _ in QUALITY_QUERIES]
        topics = [t for _, t in QUALITY_QUERIES]
        vectors = mm.query_vectors(engine.embedder, queries)
        alone = mm.search_alone(engine.index, engine.embedder, queries, vectors, args.search_repeats)
        naive = mm.naive_search(engine.index, engine.embedder, queries, vectors, args.search_repeats)
        res["search_alone"] = {k: v for k, v in alone.items() if k != "_tops"}
        res["naive_baseline"] = {k: v for k, v in naive.items() if k != "_tops"}
        res["quality"] = {"hopweave_prefiltered_hybrid": quality(alone["_tops"], topics),
                          "naive_dense_top10": quality(naive["_tops"], topics),
                          "naive_dense_top10_postfiltered": quality(post_filtered(naive["_tops"]), topics)}
        res["traversal"] = mm.traversal_modes(engine, args.traversal_runs)
        why = None if args.no_langchain else langchain_available()
        if args.no_langchain:
            res["langchain"] = {"skipped": "--no-langchain"}
        elif why:
            res["langchain"] = {"skipped": why}
        else:
            log("LangChain EnsembleRetriever baseline ...")
            lc = langchain_ensemble(engine.index, queries, vectors, args.search_repeats)
            res["langchain"] = {k: v for k, v in lc.items() if k != "_tops"}
            res["quality"]["langchain_ensemble"] = quality(lc["_tops"], topics)
            res["quality"]["langchain_ensemble_postfiltered"] = quality(post_filtered(lc["_tops"]), topics)
        res["memory"] = {"bench_process_peak_rss_mib": mm.peak_rss_mib(), "bench_process_rss_mib": mm.rss_mib()}
    finally:
        engine.close()
    log(f"ingestion sample ({args.ingest_chunks} chunks, live embedder) ...")
    res["ingest_sample"] = mm.ingest_sample(engine.embedder, args.ingest_chunks, args.seed)
    res["summary"] = summarise(res)
    res["wall_s"] = round(time.perf_counter() - t_run, 1)
    res["machine"]["load_avg_end"] = round(os.getloadavg()[0], 2)
    return res


def _scenario_pass(engine: Any, scenarios: list[Any], check: Any) -> dict[str, Any]:
    failed: dict[str, list[str]] = {}
    for sc in scenarios:
        r = engine.retrieve(sc.utterance, session=sc.resolved_session(), as_of=sc.as_of,
                            token_budget=sc.options.token_budget, record=False,
                            pattern_overrides=sc.options.pattern_overrides or None)
        f = check(sc, r)
        if f:
            failed[sc.name] = f[:3]
    return {"run": len(scenarios), "passed": len(scenarios) - len(failed), "failed": failed}


class _Profile:
    """All-thread profile of one phase: py-spy attached to this process when it is installed
    (the stages run on pool threads), else pyinstrument (main thread only). Writes
    ``<dir>/<name>.raw`` + ``<name>.md`` (py-spy) or ``<name>.txt`` / ``.html`` (pyinstrument)."""

    def __init__(self, out_dir: str, name: str) -> None:
        self.dir, self.name = Path(out_dir), name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.proc: Any = None
        self.pyi: Any = None

    def __enter__(self) -> "_Profile":
        spy = shutil.which("py-spy")
        if spy:
            import subprocess

            self.proc = subprocess.Popen(
                [spy, "record", "--pid", str(os.getpid()), "-r", "250", "--format", "raw", "--nonblocking",
                 "-o", str(self.dir / f"{self.name}.raw")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)  # let it attach
        else:
            from pyinstrument import Profiler

            self.pyi = Profiler(interval=0.001, async_mode="disabled")
            self.pyi.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            import signal

            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except Exception:  # pragma: no cover - py-spy hung
                self.proc.kill()
            raw = self.dir / f"{self.name}.raw"
            if raw.is_file():
                from profile_summary import summarise

                total, incl, own = summarise(raw, ["Engine.retrieve", "_WorkItem.run"], ["warmup"], 40)
                lines = [f"samples: {total}", "", "| inclusive % | function |", "|---|---|"]
                lines += [f"| {v} | `{k.strip()}` |" for k, v in incl]
                lines += ["", "| self % | function |", "|---|---|"] + [f"| {v} | `{k.strip()}` |" for k, v in own[:15]]
                (self.dir / f"{self.name}.md").write_text("\n".join(lines) + "\n")
        elif self.pyi is not None:
            self.pyi.stop()
            (self.dir / f"{self.name}.txt").write_text(self.pyi.output_text(unicode=False, color=False))
            (self.dir / f"{self.name}.html").write_text(self.pyi.output_html())


def _profile(args: argparse.Namespace, name: str) -> Any:
    import contextlib

    return _Profile(args.profile, name) if args.profile else contextlib.nullcontext()


def summarise(res: dict[str, Any]) -> dict[str, Any]:
    """Headline figures (the --json keys p50_ms / p95_ms / p99_ms / stages) and target checks."""
    seq = res.get("maria_distinct", {})
    conc = res.get("concurrent_maria_threads", {})
    alone = res.get("search_alone", {})
    ing = res.get("ingest_sample", {})
    cold = res.get("cold_start", {})
    peak_gib = max(cold.get("peak_rss_mib", 0) or 0, 0) / 1024
    out = {
        "p50_ms": seq.get("p50_ms"), "p95_ms": seq.get("p95_ms"), "p99_ms": seq.get("p99_ms"),
        "stages_p50_ms": seq.get("stages_p50_ms"),
        "concurrent_p50_ms": conc.get("p50_ms"), "concurrent_p99_ms": conc.get("p99_ms"),
        "concurrent_throughput_rps": conc.get("throughput_rps"),
        "search_alone_p50_ms": alone.get("p50_ms"),
        "ingest_chunks_per_s": ing.get("chunks_per_s"), "ingest_embedder_share": ing.get("embedder_share"),
        "cold_start_s": cold.get("first_answer_s"), "peak_memory_gib": round(peak_gib, 2),
        "ratios": {
            "naive_vs_prefiltered_search_latency": _ratio(res.get("naive_baseline", {}).get("p50_ms"), alone.get("p50_ms")),
            "sequential_vs_parallel_traversal": _ratio(res.get("traversal", {}).get("sequential", {}).get("p50_ms"),
                                                       res.get("traversal", {}).get("parallel", {}).get("p50_ms")),
            "langchain_vs_hopweave_search_latency": _ratio(res.get("langchain", {}).get("p50_ms"), alone.get("p50_ms")),
        },
    }
    out["targets"] = {
        "maria_p50_ms_concurrent<=50": _met(conc.get("p50_ms"), TARGETS["maria_p50_ms_concurrent"]),
        "maria_p99_ms_concurrent<=150": _met(conc.get("p99_ms"), TARGETS["maria_p99_ms_concurrent"]),
        "search_alone_p50_ms<=15": _met(alone.get("p50_ms"), TARGETS["search_alone_p50_ms"]),
        "ingest_embedder_share>=0.90": (None if ing.get("embedder_share") is None
                                        else ing["embedder_share"] >= TARGETS["ingest_embedder_share"]),
        "peak_memory_gib<8": _met(peak_gib or None, TARGETS["peak_memory_gib"]),
    }
    return out


def _met(v: float | None, limit: float) -> bool | None:
    return None if v is None or v != v else v <= limit


def flat(res: dict[str, Any]) -> dict[str, Any]:
    """The JSON output: the headline keys (p50_ms, p95_ms, p99_ms, stages_p50_ms, ...) at the top
    level, then every section."""
    return {**res.get("summary", {}), **{k: v for k, v in res.items() if k != "summary"}}


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=50_000)
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--runs", type=int, default=100, help="sequential Maria retrievals per variant")
    ap.add_argument("--search-repeats", type=int, default=5)
    ap.add_argument("--traversal-runs", type=int, default=100)
    ap.add_argument("--ingest-chunks", type=int, default=2000, help="live (uncached) ingest sample size")
    ap.add_argument("--budget-ms", type=int, default=30_000,
                    help="engine budget (large: measure full work, not timeouts; degradations are counted)")
    ap.add_argument("--pattern-budget-scale", type=float, default=100.0)
    ap.add_argument("--store", default=None, help="store directory (default: under the hopweave cache dir)")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--build-only", action="store_true", help="build (or check) the store, measure nothing")
    ap.add_argument("--no-langchain", action="store_true")
    ap.add_argument("--profile", default=None,
                    help="profile the sequential and concurrent Maria phases into this folder (py-spy, else pyinstrument)")
    ap.add_argument("--out", default=None, help="write the Markdown report here (e.g. benchmarks/results/maria_DATE.md)")
    ap.add_argument("--json", action="store_true", help="print the full result as JSON")
    return ap


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = build_parser().parse_args(argv)
    args.command_line = "python benchmarks/bench_maria.py " + " ".join(argv if argv is not None else sys.argv[1:])
    return finish(args, run(args))


def finish(args: argparse.Namespace, res: dict[str, Any]) -> dict[str, Any]:
    if args.build_only:
        print(json.dumps(res["store"], indent=1, default=str))
        return res
    if args.out:
        from report_md import write_report

        write_report(Path(args.out), res)
    if args.json:
        print(json.dumps(flat(res), indent=1, default=str))
    else:
        print(json.dumps(res["summary"], indent=1, default=str))
    return res


if __name__ == "__main__":
    main()
