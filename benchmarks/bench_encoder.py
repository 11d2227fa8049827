"""The query encoder, old (sentence-transformers on torch) vs new (ONNX Runtime, fp32, the default)
and the optional int8 ONNX graph, in one run (issue 13).

    python benchmarks/bench_encoder.py --data ../shared/data/scifact --queries 200 --out benchmarks/results/encoder_DATE.json

All run the same bundled all-MiniLM-L6-v2 weights on one intra-op thread. Measured:

* per query: CPU time (``time.process_time``) of ``embed_uncached([q])`` for distinct SciFact
  claims, the encoders interleaved query by query so all see the same machine load;
* batched: CPU time per text of ``embed_uncached`` on batches of 32 of the same claims;
* vectors: max |old - new|, min cosine, and whether each encoder gives a text the same bytes alone,
  inside a batch and on repeat (replay needs byte-identical vectors);
* cold start to the first goal classification (a new process: open a DeltaBank store, build the
  classifier's example index, classify one utterance), each encoder without and with the
  classifier's on-disk vector cache, wall and process CPU (``--no-cold`` skips it).

Nothing here asserts a number; the JSON report carries the medians, p90s and the ratios.
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
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from machine import machine  # noqa: E402


def _queries(data: Path, n: int) -> list[str]:
    texts = [json.loads(line)["text"] for line in (data / "queries.jsonl").read_text().splitlines() if line.strip()]
    return list(dict.fromkeys(texts))[:n]


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def _cpu_ms(fn: Any) -> float:
    t = time.process_time()
    fn()
    return (time.process_time() - t) * 1000


def per_query(encoders: dict[str, Any], queries: list[str]) -> dict[str, Any]:
    """CPU ms per single-query call, the encoders interleaved query by query."""
    ms: dict[str, list[float]] = {k: [] for k in encoders}
    for q in queries:
        for k, e in encoders.items():
            ms[k].append(_cpu_ms(lambda q=q, e=e: e.embed_uncached([q])))
    res: dict[str, Any] = {}
    for k, xs in ms.items():
        res[f"{k}_median_ms"], res[f"{k}_p90_ms"] = round(statistics.median(xs), 2), round(_pct(xs, 0.9), 2)
    for k in list(encoders)[1:]:
        res[f"ratio_old_over_{k}"] = round(res["old_median_ms"] / res[f"{k}_median_ms"], 2)
    return res


def batched(encoders: dict[str, Any], queries: list[str], size: int = 32) -> dict[str, Any]:
    """CPU ms per text in calls of ``size`` texts (median over the batches)."""
    ms: dict[str, list[float]] = {k: [] for k in encoders}
    for i in range(0, len(queries) - size + 1, size):
        b = queries[i:i + size]
        for k, e in encoders.items():
            ms[k].append(_cpu_ms(lambda b=b, e=e: e.embed_uncached(b, batch_size=size)) / len(b))
    res: dict[str, Any] = {"batch": size, "batches": len(ms["old"])}
    for k, xs in ms.items():
        res[f"{k}_median_ms_per_text"] = round(statistics.median(xs), 2)
    for k in list(encoders)[1:]:
        res[f"ratio_old_over_{k}"] = round(res["old_median_ms_per_text"] / res[f"{k}_median_ms_per_text"], 2)
    return res


def vectors(encoders: dict[str, Any], queries: list[str]) -> dict[str, Any]:
    """Each encoder against the old one, and alone vs batched vs repeated (byte equality)."""
    import numpy as np

    qs = queries[:64]
    res: dict[str, Any] = {"texts": len(qs)}
    alone = {k: np.stack([e.embed_uncached([q])[0] for q in qs]) for k, e in encoders.items()}
    for k, e in encoders.items():
        b = e.embed_uncached(qs, batch_size=32)
        res[f"{k}_alone_equals_batched"] = bool(alone[k].tobytes() == b.tobytes())
        res[f"{k}_alone_vs_batched_max_abs"] = float(np.abs(alone[k] - b).max())
        res[f"{k}_repeat_identical"] = bool(e.embed_uncached(qs, batch_size=32).tobytes() == b.tobytes())
        if k != "old":
            res[f"max_abs_diff_old_{k}"] = float(np.abs(alone["old"] - alone[k]).max())
            res[f"min_cosine_old_{k}"] = float((alone["old"] * alone[k]).sum(axis=1).min())
    return res


#: The DeltaBank pack's classifier settings (the cold-start store is a DeltaBank store).
_CLASSIFIER_FILE = Path(__file__).resolve().parents[1] / "examples" / "deltabank" / "classifier.yaml"

_COLD = """
import sys, time
t0 = time.perf_counter()
from hopweave.graph import open_graph_store
from hopweave.search.embedder import default_embedder
from hopweave.understand.calibration import load_calibration
from hopweave.understand.classifier import GoalClassifier, load_classifier_config
store = open_graph_store(sys.argv[1], read_only=True)
cfg = load_classifier_config(sys.argv[3])  # the DeltaBank pack's classifier.yaml
cal = load_calibration(cfg.calibration_path())
clf = GoalClassifier(store, default_embedder(), config=cfg, calibration=cal, vector_cache_dir=sys.argv[2])
c = clf.classify("I want to dispute this $39 late fee on my Platinum card")
print(round(time.perf_counter() - t0, 3), round(time.process_time(), 3), c.goal)
"""


def cold_start(store: Path, work: Path, runs: int = 3) -> dict[str, Any]:
    """Seconds (wall, and CPU of the whole process) from process start to the first classification;
    medians of ``runs`` runs."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

    def run(encoder: str, cache: Path) -> tuple[float, float]:
        out = subprocess.run([sys.executable, "-c", _COLD, str(store), str(cache),
                              str(_CLASSIFIER_FILE)], env={**env, "HOPWEAVE_ENCODER": encoder},
                             capture_output=True, text=True, check=True)
        wall, cpu = out.stdout.split()[:2]
        return float(wall), float(cpu)

    def record(name: str, runs: list[tuple[float, float]]) -> None:
        res[name + "_wall_s"] = round(statistics.median(r[0] for r in runs), 2)
        res[name + "_cpu_s"] = round(statistics.median(r[1] for r in runs), 2)

    res: dict[str, Any] = {}
    variants = (("old", "torch"), ("new", "onnx"), ("int8", "onnx-int8"))
    for name, encoder in variants:
        record(f"{name}_no_cache", [run(encoder, Path(tempfile.mkdtemp(dir=work))) for _ in range(runs)])
    for name, encoder in variants:
        warm = Path(tempfile.mkdtemp(dir=work))
        run(encoder, warm)  # writes the classifier's vector cache
        record(f"{name}_with_cache", [run(encoder, warm) for _ in range(runs)])
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shared = next((p / "shared" for p in (ROOT.parent, ROOT.parents[1]) if (p / "shared").is_dir()), ROOT.parent / "shared")
    ap.add_argument("--data", type=Path, default=shared / "data" / "scifact", help="BEIR SciFact folder")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-start part")
    ap.add_argument("--cold-only", action="store_true",
                    help="only the cold-start part, replacing it in an existing --out report")
    ap.add_argument("--cold-runs", type=int, default=3, help="runs per cold-start variant (median)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch

    torch.set_num_threads(1)
    from hopweave.search.embedder import OnnxEmbedder, SentenceTransformerEmbedder

    if args.cold_only:
        report = json.loads(args.out.read_text()) if args.out and args.out.is_file() else {}
        report["cold_start_command"] = " ".join(["python", *sys.argv])
        report["cold_start_date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        report["cold_start_load_avg_start"] = round(os.getloadavg()[0], 2)
        _cold(report, args)
        report["cold_start_load_avg_end"] = round(os.getloadavg()[0], 2)
        _emit(report, args.out)
        return
    encoders = {"old": SentenceTransformerEmbedder(query_cache_size=0), "new": OnnxEmbedder(query_cache_size=0),
                "int8": OnnxEmbedder(query_cache_size=0, int8=True)}
    queries = _queries(args.data, args.queries)
    for e in encoders.values():
        e.embed_uncached(queries[:8])  # load the models
    report: dict[str, Any] = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                              "machine": machine(), "command": " ".join(["python", *sys.argv]),
                              "spaces": {k: e.space.key for k, e in encoders.items()}, "queries": len(queries)}
    report["per_query_cpu"] = per_query(encoders, queries)
    report["batched_cpu"] = batched(encoders, queries)
    report["vectors"] = vectors(encoders, queries)
    if not args.no_cold:
        _cold(report, args)
    report["load_avg_end"] = round(os.getloadavg()[0], 2)
    _emit(report, args.out)


def _cold(report: dict[str, Any], args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as work:
        store = Path(work) / "store"
        subprocess.run([sys.executable, "-c", "from hopweave.cli import app; app()", "load",
                        str(ROOT / "examples" / "deltabank"), "--store", str(store), "--no-vectors"],
                       check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        report["cold_start_to_first_classification"] = cold_start(store, Path(work), args.cold_runs)


def _emit(report: dict[str, Any], out: Path | None) -> None:
    text = json.dumps(report, indent=1)
    print(text)
    if out:
        out.write_text(text + "\n")


if __name__ == "__main__":
    main()
