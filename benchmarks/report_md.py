"""Markdown report of a ``bench_maria`` run (benchmarks/results/maria_DATE.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Everything after this line in the report is hand-written analysis, kept across re-runs.
ANALYSIS_MARKER = "<!-- analysis: kept when the benchmark rewrites the tables above -->"


def _f(v: Any, unit: str = "", nd: int = 1) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "n/a"
    if isinstance(v, bool):
        return "met" if v else "**missed**"
    if isinstance(v, (int, float)):
        return f"{v:,.{nd}f}{unit}"
    return str(v)


def _lat(d: dict[str, Any]) -> str:
    return " / ".join(_f(d.get(k)) for k in ("p50_ms", "p95_ms", "p99_ms")) if d else "n/a"


def _deg(d: dict[str, Any]) -> str:
    deg = d.get("degraded") or {}
    n = sum(deg.values())
    return f"{n} degraded stage(s)" if n else "none degraded"


def write_report(path: Path, res: dict[str, Any]) -> None:
    """Write the Markdown table for ``res`` to ``path`` (parents created)."""
    m, p, s = res["machine"], res["params"], res["summary"]
    st = res.get("store", {})
    cold = res.get("cold_start", {})
    lines = [
        "# Benchmark: Maria's retrieval at scale (issue 7)",
        "",
        f"- Date: {res['date']}",
        f"- Machine: {m['cpu']}, nproc {m['nproc']}, {m['ram_gib']} GiB RAM, Python {m['python']}, {m['os']}; "
        f"1-min load average {m['load_avg_start']} at the start, {m.get('load_avg_end')} at the end (shared machine)",
        f"- Command: `{res['command']}`",
        f"- Store: {_f(st.get('graph', {}).get('nodes'), nd=0)} graph nodes, "
        f"{_f(st.get('chunks_written'), nd=0)} chunks indexed, {_f(st.get('maria_eligible_indexed'), nd=0)} "
        f"pass Maria's filter; seed {p['seed']}; engine budget {p['budget_ms']} ms, pattern budgets x{p['pattern_budget_scale']}",
        f"- Wall time of the run: {_f(res.get('wall_s'))} s",
        "",
        "## Targets",
        "",
        "| Target | Measured | Status |",
        "|---|---|---|",
        f"| Maria, 100 concurrent: p50 <= 50 ms | {_f(s.get('concurrent_p50_ms'))} ms | {_f(s['targets'].get('maria_p50_ms_concurrent<=50'))} |",
        f"| Maria, 100 concurrent: p99 <= 150 ms | {_f(s.get('concurrent_p99_ms'))} ms | {_f(s['targets'].get('maria_p99_ms_concurrent<=150'))} |",
        f"| Hybrid search alone over the filtered set: p50 <= 15 ms | {_f(s.get('search_alone_p50_ms'))} ms | {_f(s['targets'].get('search_alone_p50_ms<=15'))} |",
        f"| Ingestion: >= 90% of the time in the embedder | {_f((s.get('ingest_embedder_share') or 0) * 100)} % | {_f(s['targets'].get('ingest_embedder_share>=0.90'))} |",
        f"| Memory, graph + chunks, serving engine < 8 GiB | {_f(s.get('peak_memory_gib'), ' GiB', 2)} | {_f(s['targets'].get('peak_memory_gib<8'))} |",
        "",
        "## Latency (ms: p50 / p95 / p99)",
        "",
        "| Measure | p50 / p95 / p99 | Notes |",
        "|---|---|---|",
    ]
    for key, label in (("maria_repeated", "Maria, one at a time, same sentence (query caches warm)"),
                       ("maria_distinct", "Maria, one at a time, distinct phrasings (caches cold)"),
                       ("concurrent_maria_threads", f"Maria, {p['concurrency']} concurrent, distinct phrasings (threads)"),
                       ("concurrent_maria_repeated_threads", f"Maria, {p['concurrency']} concurrent, same sentence (threads)"),
                       ("concurrent_varied_threads", f"{p['concurrency']} concurrent, varied scenarios (threads)"),
                       ("concurrent_varied_asyncio", f"{p['concurrency']} concurrent, varied scenarios (asyncio aretrieve)")):
        d = res.get(key)
        if not d:
            continue
        note = _deg(d)
        if "throughput_rps" in d:
            note = f"{_f(d['throughput_rps'])} req/s, batch wall {_f(d['wall_s'], ' s', 2)}; {note}"
        lines.append(f"| {label} | {_lat(d)} | {note} |")
    a = res.get("search_alone", {})
    lines.append(f"| Hybrid search alone (Maria's filter, {_f(a.get('eligible'), nd=0)} eligible, profile "
                 f"{a.get('profile')}) | {_lat(a)} | query vector precomputed; parts p50 {a.get('parts_p50_ms')} |")
    nb = res.get("naive_baseline", {})
    lines.append(f"| Naive: dense top-10 over the whole tenant, then post-filter | {_lat(nb)} | |")
    lc = res.get("langchain", {})
    if "p50_ms" in lc:
        lines.append(f"| LangChain EnsembleRetriever (BM25Retriever + FAISS, 0.5/0.5) | {_lat(lc)} | "
                     f"{_f(lc.get('chunks'), nd=0)} chunks, built in {_f(lc.get('build_s'))} s; parts p50 {lc.get('parts_p50_ms')} |")
    elif lc:
        lines.append(f"| LangChain EnsembleRetriever | n/a | skipped: {lc.get('skipped')} |")
    tr = res.get("traversal", {})
    for mode in ("parallel", "sequential"):
        if mode in tr:
            lines.append(f"| Maria's {tr.get('patterns')} LateFeeDispute patterns, {mode} | {_lat(tr[mode])} | "
                         f"{tr[mode].get('rows')} rows |")
    seq = res.get("maria_distinct", {})
    lines += ["", "## Stage medians, Maria one at a time (distinct phrasings), ms", "",
              "| " + " | ".join(seq.get("stages_p50_ms", {})) + " |",
              "|" + "---|" * len(seq.get("stages_p50_ms", {})),
              "| " + " | ".join(_f(v, nd=2) for v in seq.get("stages_p50_ms", {}).values()) + " |", "",
              "`understand` contains classify + resolve + filter mapping + lexical plan; `search_branch` "
              "contains embed + search; search_branch and the graph branch (traverse, then precedent) run "
              "concurrently. `total` is the engine's own wall time of the request.", ""]
    r = s.get("ratios", {})
    lines += ["## Baselines as ratios (same run)", "",
              f"- Naive unfiltered dense top-10 (+ post-filter) vs hopweave's pre-filtered hybrid search, p50 latency: "
              f"x{_f(r.get('naive_vs_prefiltered_search_latency'), nd=2)}",
              f"- Traversals one after another vs in parallel, p50: x{_f(r.get('sequential_vs_parallel_traversal'), nd=2)}",
              f"- LangChain ensemble vs hopweave hybrid search, p50: x{_f(r.get('langchain_vs_hopweave_search_latency'), nd=2)}",
              "", "## Quality over the 12 generated queries (top-10)", "",
              "| System | precision@10 | filter violations@10 | eligible left after post-filter |", "|---|---|---|---|"]
    for name, q in res.get("quality", {}).items():
        lines.append(f"| {name} | {_f(q.get('precision_at_10'), nd=3)} | {_f(q.get('violations_at_10'), nd=3)} | "
                     f"{_f(q.get('eligible_left_after_postfilter'), nd=2)} |")
    lines += ["", "Relevant = passes Maria's filter and the section's topic is the query's topic "
              "(`generator.scale.topic_of_heading`).", ""]
    ing, build = res.get("ingest_sample", {}), st.get("timings_s", {})
    lines += ["## Ingestion, cold start, memory", "",
              f"- Live ingest sample (uncached embedder): {_f(ing.get('chunks'), nd=0)} chunks in {_f(ing.get('seconds'))} s = "
              f"{_f(ing.get('chunks_per_s'))} chunks/s; embedder {_f(ing.get('embed_s'))} s = "
              f"{_f((ing.get('embedder_share') or 0) * 100)} % of the ingest (embedder alone "
              f"{_f(ing.get('embed_chunks_per_s'))} chunks/s).",
              f"- Store build ({'reused' if st.get('reused') else 'this run'}): graph {_f(build.get('graph_s'))} s, "
              f"embedding {_f(build.get('embed_s'))} s (0 = on-disk cache hit), ingest with cached vectors "
              f"{_f(build.get('ingest_s'))} s for {_f(st.get('chunks_written'), nd=0)} chunks, optimize {_f(build.get('optimize_s'))} s.",
              f"- Cold start (fresh process): imports {_f(cold.get('import_s'), ' s', 2)}, Engine.open {_f(cold.get('open_s'), ' s', 2)}, "
              f"open -> first answer {_f(cold.get('first_answer_s'), ' s', 2)} (warm-up ms: {cold.get('warmup_ms')}); "
              f"second answer {_f(cold.get('second_answer_ms'))} ms.",
              f"- Peak memory of that serving process (max RSS): {_f(cold.get('peak_rss_mib'), ' MiB', 0)}; "
              f"of the benchmark process (also holds the LangChain copies): {_f(res.get('memory', {}).get('bench_process_peak_rss_mib'), ' MiB', 0)}.",
              ""]
    sc = res.get("scenarios")
    if sc:
        lines += [f"## Scenarios at scale: {sc['passed']}/{sc['run']} pass", ""]
        for name, f in sc.get("failed", {}).items():
            lines.append(f"- {name}: {'; '.join(f)}")
        lines.append("")
    if res.get("notes"):
        lines += ["## Notes", "", *res["notes"], ""]
    # Hand-written analysis below the marker survives a re-run.
    keep = ""
    if path.is_file():
        old = path.read_text(encoding="utf-8")
        if ANALYSIS_MARKER in old:
            keep = old[old.index(ANALYSIS_MARKER):]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + ("\n" + keep if keep else "\n" + ANALYSIS_MARKER + "\n"), encoding="utf-8")
