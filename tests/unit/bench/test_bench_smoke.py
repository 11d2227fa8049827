"""CI smoke version of ``benchmarks/bench_maria.py``: the same runner at a small size.

It fails when the benchmark crashes or reports nonsense (missing stages, errors, an empty
filter), never because the machine is slow: no timing is asserted. Marked ``slow`` (about 3
minutes on 2 idle cores, most of it embedding the 1,000-chunk corpus and the cold-start child
process): ``pytest -m slow`` runs it; ``make test`` runs both suites.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.slow

RUNNER = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_maria.py"
ARGS = ["--chunks", "1000", "--nodes", "20000", "--concurrency", "10", "--runs", "4", "--search-repeats", "1",
        "--traversal-runs", "5", "--ingest-chunks", "120"]


def _load_runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hopweave_bench_maria", RUNNER)
    assert spec is not None and spec.loader is not None, RUNNER
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> tuple[dict, Path]:
    tmp = tmp_path_factory.mktemp("bench")
    # Corpus embeddings are cached by content hash; keep them between local runs (pytest cache).
    pytest_cache = getattr(request.config, "cache", None)  # absent with -p no:cacheprovider
    cache = Path(pytest_cache.mkdir("hopweave-bench-embeddings")) if pytest_cache is not None else tmp / "c"
    mp = pytest.MonkeyPatch()
    mp.setenv("HOPWEAVE_CACHE_DIR", str(cache))
    try:
        mod = _load_runner()
        out = tmp / "perf.md"
        res = mod.main([*ARGS, "--store", str(tmp / "store"), "--out", str(out), "--json"])
    finally:
        mp.undo()
    return json.loads(json.dumps(mod.flat(res), default=str)), out  # as printed by --json


def test_headline_keys_and_stage_breakdown(bench_run) -> None:
    data, _ = bench_run
    for k in ("p50_ms", "p95_ms", "p99_ms"):
        assert data[k] > 0
    stages = data["stages_p50_ms"]
    for k in ("classify", "resolve", "embed", "search", "traverse", "assemble", "record", "total"):
        assert k in stages, stages
    assert data["maria_distinct"]["n"] == 4


def test_retrievals_answer_maria_without_errors(bench_run) -> None:
    data, _ = bench_run
    for key in ("concurrent_maria_threads", "concurrent_varied_threads", "concurrent_varied_asyncio"):
        assert data[key]["n"] == 10 and data[key]["errors"] == 0, (key, data[key])
    assert data["cold_start"].get("goal") == "LateFeeDispute", data["cold_start"]
    assert data["scenarios"]["run"] > 0


def test_filtered_search_and_baselines(bench_run) -> None:
    data, _ = bench_run
    # 16% of 1,000 generated chunks + the example corpus's own Platinum US chunks (12 today)
    assert 160 <= data["search_alone"]["eligible"] <= 240
    q = data["quality"]
    assert q["hopweave_prefiltered_hybrid"]["violations_at_10"] == 0.0
    assert q["naive_dense_top10"]["violations_at_10"] > 0.0  # the traps are there to be hit
    assert data["traversal"]["parallel"]["rows"] == data["traversal"]["sequential"]["rows"] > 0
    assert "p50_ms" in data["langchain"] or "skipped" in data["langchain"]


def test_ingest_and_memory_figures(bench_run) -> None:
    data, _ = bench_run
    ing = data["ingest_sample"]
    assert ing["chunks"] == 120 and 0 < ing["embedder_share"] <= 1
    assert data["cold_start"]["peak_rss_mib"] > 0
    assert set(data["targets"]) >= {"maria_p50_ms_concurrent<=50", "search_alone_p50_ms<=15"}


def test_markdown_report(bench_run) -> None:
    _, out = bench_run
    text = out.read_text()
    for s in ("## Targets", "Command: `python benchmarks/bench_maria.py --chunks 1000", "nproc", "p50 / p95 / p99",
              "LangChain", "Stage medians"):
        assert s in text
