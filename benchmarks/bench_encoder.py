"""The query encoder, old (sentence-transformers on torch) vs new (ONNX Runtime), in one run (issue 13).

    python benchmarks/bench_encoder.py --data ../shared/data/scifact --queries 200 --out docs/benchmarks/encoder.json

Both encoders run the same bundled all-MiniLM-L6-v2 weights on one intra-op thread. Measured:

* per query: CPU time (``time.process_time``) of ``embed_uncached([q])`` for distinct SciFact
  claims, the two encoders interleaved query by query so both see the same machine load;
* batched: CPU time per text of ``embed_uncached`` on batches of 32 of the same claims;
* vectors: max |old - new|, min cosine, and whether each encoder gives a text the same bytes alone
  and inside a batch (replay needs byte-identical vectors);
* cold start to the first goal classification (a new process: open a DeltaBank store, build the
  classifier's example index, classify one utterance) with the old encoder, the new encoder
  without the classifier's vector cache, and the new encoder with it (``--no-cold`` skips it).

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


def per_query(old: Any, new: Any, queries: list[str]) -> dict[str, Any]:
    """CPU ms per single-query call, interleaved old/new."""
    o, n = [], []
    for q in queries:
        o.append(_cpu_ms(lambda q=q: old.embed_uncached([q])))
        n.append(_cpu_ms(lambda q=q: new.embed_uncached([q])))
    res = {"old_median_ms": round(statistics.median(o), 2), "old_p90_ms": round(_pct(o, 0.9), 2),
           "new_median_ms": round(statistics.median(n), 2), "new_p90_ms": round(_pct(n, 0.9), 2)}
    res["ratio_old_over_new"] = round(res["old_median_ms"] / res["new_median_ms"], 2)
    return res


def batched(old: Any, new: Any, queries: list[str], size: int = 32) -> dict[str, Any]:
    """CPU ms per text in calls of ``size`` texts (median over the batches)."""
    o, n = [], []
    for i in range(0, len(queries) - size + 1, size):
        b = queries[i:i + size]
        o.append(_cpu_ms(lambda b=b: old.embed_uncached(b, batch_size=size)) / len(b))
        n.append(_cpu_ms(lambda b=b: new.embed_uncached(b, batch_size=size)) / len(b))
    res = {"batch": size, "batches": len(o), "old_median_ms_per_text": round(statistics.median(o), 2),
           "new_median_ms_per_text": round(statistics.median(n), 2)}
    res["ratio_old_over_new"] = round(res["old_median_ms_per_text"] / res["new_median_ms_per_text"], 2)
    return res


def vectors(old: Any, new: Any, queries: list[str]) -> dict[str, Any]:
    import numpy as np

    qs = queries[:64]
    o1 = np.stack([old.embed_uncached([q])[0] for q in qs])
    n1 = np.stack([new.embed_uncached([q])[0] for q in qs])
    ob, nb = old.embed_uncached(qs, batch_size=32), new.embed_uncached(qs, batch_size=32)
    return {"texts": len(qs), "max_abs_diff_old_new": float(np.abs(o1 - n1).max()),
            "min_cosine_old_new": float((o1 * n1).sum(axis=1).min()),
            "old_alone_equals_batched": bool(o1.tobytes() == ob.tobytes()),
            "old_alone_vs_batched_max_abs": float(np.abs(o1 - ob).max()),
            "new_alone_equals_batched": bool(n1.tobytes() == nb.tobytes()),
            "new_repeat_identical": bool(new.embed_uncached(qs).tobytes() == nb.tobytes())}


_COLD = """
import sys, time
t0 = time.perf_counter()
from hopweave.graph import open_graph_store
from hopweave.search.embedder import default_embedder
from hopweave.understand.classifier import GoalClassifier
store = open_graph_store(sys.argv[1], read_only=True)
clf = GoalClassifier(store, default_embedder(), vector_cache_dir=sys.argv[2])
c = clf.classify("I want to dispute this $39 late fee on my Platinum card")
print(round(time.perf_counter() - t0, 3), c.goal)
"""


def cold_start(store: Path, work: Path) -> dict[str, Any]:
    """Seconds from process start (after the interpreter) to the first classification."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

    def run(encoder: str, cache: Path) -> float:
        out = subprocess.run([sys.executable, "-c", _COLD, str(store), str(cache)], env={**env, "HOPWEAVE_ENCODER": encoder},
                             capture_output=True, text=True, check=True)
        return float(out.stdout.split()[0])

    res: dict[str, Any] = {}
    for name, encoder in (("old_no_cache", "torch"), ("new_no_cache", "onnx")):
        res[name + "_s"] = round(statistics.median(run(encoder, Path(tempfile.mkdtemp(dir=work))) for _ in range(3)), 2)
    warm = Path(tempfile.mkdtemp(dir=work))
    run("onnx", warm)  # writes the cache
    res["new_with_cache_s"] = round(statistics.median(run("onnx", warm) for _ in range(3)), 2)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shared = next((p / "shared" for p in (ROOT.parent, ROOT.parents[1]) if (p / "shared").is_dir()), ROOT.parent / "shared")
    ap.add_argument("--data", type=Path, default=shared / "data" / "scifact", help="BEIR SciFact folder")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-start part")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch

    torch.set_num_threads(1)
    from hopweave.search.embedder import OnnxEmbedder, SentenceTransformerEmbedder

    old, new = SentenceTransformerEmbedder(query_cache_size=0), OnnxEmbedder(query_cache_size=0)
    queries = _queries(args.data, args.queries)
    old.embed_uncached(queries[:8]), new.embed_uncached(queries[:8])  # load both models
    report: dict[str, Any] = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                              "machine": machine(), "command": " ".join(["python", *sys.argv]),
                              "old": old.space.key, "new": new.space.key, "queries": len(queries)}
    report["per_query_cpu"] = per_query(old, new, queries)
    report["batched_cpu"] = batched(old, new, queries)
    report["vectors"] = vectors(old, new, queries)
    if not args.no_cold:
        with tempfile.TemporaryDirectory() as work:
            store = Path(work) / "store"
            subprocess.run([sys.executable, "-c", "from hopweave.cli import app; app()", "load", str(ROOT / "examples" / "deltabank"),
                            "--store", str(store), "--no-vectors"], check=True, capture_output=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
            report["cold_start_to_first_classification"] = cold_start(store, Path(work))
    report["load_avg_end"] = round(os.getloadavg()[0], 2)
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
