"""Benchmark commands: ``hopweave bench maria`` (issue 7's suite; the runner is
``benchmarks/bench_maria.py`` of the source checkout)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import handle_errors
from hopweave.errors import ConfigError

bench_app = typer.Typer(help="Performance benchmarks (run from a source checkout).", no_args_is_help=True)
app.add_typer(bench_app, name="bench")


def load_runner(name: str = "bench_maria") -> ModuleType:
    """Import ``benchmarks/<name>.py`` of the source checkout.

    Raises:
        ConfigError: not running from a checkout (the benchmarks are not part of the wheel).
    """
    from hopweave.paths import repo_root

    root = repo_root()
    path = root / "benchmarks" / f"{name}.py" if root else None
    if path is None or not path.is_file():
        raise ConfigError("the benchmark suite lives in benchmarks/ of the source checkout: run from a clone")
    bench_dir = str(path.parent)
    if bench_dir not in sys.path:
        sys.path.insert(0, bench_dir)
    spec = importlib.util.spec_from_file_location(f"hopweave_bench_{name}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@bench_app.command("maria")
@handle_errors
def maria_cmd(
    chunks: int = typer.Option(50_000, "--chunks", help="Generated policy/knowledge chunks."),
    nodes: int = typer.Option(1_000_000, "--nodes", help="Graph nodes."),
    concurrency: int = typer.Option(100, "--concurrency", help="Concurrent retrievals."),
    seed: int = typer.Option(4421, "--seed"),
    runs: int = typer.Option(100, "--runs", help="Sequential Maria retrievals per variant."),
    search_repeats: int = typer.Option(5, "--search-repeats"),
    traversal_runs: int = typer.Option(100, "--traversal-runs"),
    ingest_chunks: int = typer.Option(2000, "--ingest-chunks", help="Live (uncached) ingest sample size."),
    budget_ms: int = typer.Option(30_000, "--budget-ms", help="Engine budget (degradations are counted)."),
    pattern_budget_scale: float = typer.Option(100.0, "--pattern-budget-scale"),
    store: Optional[Path] = typer.Option(None, "--store", help="Store directory (default: in the cache dir)."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Rebuild the store even if it matches."),
    build_only: bool = typer.Option(False, "--build-only", help="Build (or check) the store, measure nothing."),
    no_langchain: bool = typer.Option(False, "--no-langchain", help="Skip the LangChain baseline."),
    profile: Optional[Path] = typer.Option(None, "--profile", help="Write pyinstrument profiles here."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write the Markdown report (docs/benchmarks/perf.md)."),
    as_json: bool = typer.Option(False, "--json", help="Print the full result as JSON."),
) -> None:
    """Maria's retrieval at scale: latency (p50/p95/p99, stages), concurrency, baselines, ingest,
    cold start, memory. Prints p50_ms, p95_ms, p99_ms and stage medians."""
    mod = load_runner()
    argv = ["--chunks", str(chunks), "--nodes", str(nodes), "--concurrency", str(concurrency), "--seed", str(seed),
            "--runs", str(runs), "--search-repeats", str(search_repeats), "--traversal-runs", str(traversal_runs),
            "--ingest-chunks", str(ingest_chunks), "--budget-ms", str(budget_ms),
            "--pattern-budget-scale", str(pattern_budget_scale)]
    for flag, val in (("--store", store), ("--profile", profile), ("--out", out)):
        if val is not None:
            argv += [flag, str(val)]
    argv += [f for f, on in (("--rebuild", rebuild), ("--build-only", build_only), ("--no-langchain", no_langchain),
                             ("--json", as_json)) if on]
    args = mod.build_parser().parse_args(argv)
    args.command_line = "hopweave bench maria " + " ".join(argv)
    mod.finish(args, mod.run(args))
