"""Ranking ablation on a BEIR split: each fusion change as one row, paired bootstrap intervals.

Rows (all on one frozen index, the same query vectors):
  lexical_only (BM25), dense_only, hybrid_convex_v1 (the previous default), then one change at a
  time on top of it (z-score normalisation; filled channels; both; 100 candidates + alpha 0.45)
  and the published hybrid_features_v2. Each row reports nDCG@10 etc. and the paired bootstrap
  95% interval of its nDCG@10 difference against BM25 and against hybrid_convex_v1.

Query vectors are embedded once per query (the model is not timed here: the latency column is
search only). Tuning was done on the train split; run the test split once.

    python benchmarks/bench_ranking.py --data ../shared/data/scifact --split test --out ranking.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from hopweave.models.ranking import RankingProfile
from hopweave.search.embedder import Embedder
from hopweave.search.eval.beir import load_beir
from hopweave.search.eval.metrics import paired_bootstrap
from hopweave.search.eval.runner import build_index, evaluate
from hopweave.search.profiles import get_profile


class _Once(Embedder):
    """Embeds each distinct text once (the ablation compares rankings, not the model)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.space, self._memo = inner, inner.space, {}

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            self._memo.update(zip(missing, self.inner.embed(missing)))
        return np.stack([self._memo[t] for t in texts])


def variants() -> list[tuple[str, RankingProfile]]:
    """(row label, profile): the baselines, one change at a time, the published profile."""
    v1 = get_profile("hybrid_convex_v1").model_dump()
    mk = lambda name, **kw: RankingProfile(**{**v1, "name": name, **kw})  # noqa: E731
    return [
        ("BM25 (`lexical_only`)", get_profile("lexical_only")),
        ("dense (`dense_only`)", get_profile("dense_only")),
        ("`hybrid_convex_v1` (previous default)", get_profile("hybrid_convex_v1")),
        ("+ z-score normalisation", mk("abl_zscore", normalisation="zscore")),
        ("+ filled channels (both scores for every candidate)", mk("abl_fill", fill_channels=True)),
        ("+ z-score + filled channels", mk("abl_zfill", normalisation="zscore", fill_channels=True)),
        ("+ z-score + filled + 100 candidates + alpha 0.45", mk("abl_zfill100", normalisation="zscore",
                                                               fill_channels=True, candidates_per_channel=100,
                                                               alpha=0.45)),
        ("`hybrid_features_v2` (published: the above + features)", get_profile("hybrid_features_v2")),
    ]


def run(data: Path, split: str) -> dict[str, Any]:
    from hopweave.search.embedder import default_embedder

    ds = load_beir(data, split)
    emb = _Once(default_embedder())
    index, info = build_index(ds, default_embedder())
    rows, runs = [], {}
    for label, prof in variants():
        t = time.perf_counter()
        r = evaluate(index, ds, prof, emb, name=label)
        runs[label] = r
        rows.append({"row": label, "profile": prof.name, **{k: round(v, 4) for k, v in r.metrics.items()},
                     "search_p50_ms": r.latency_ms["search_p50"], "seconds": round(time.perf_counter() - t, 1)})
    index.close()
    bm25, v1 = runs["BM25 (`lexical_only`)"], runs["`hybrid_convex_v1` (previous default)"]
    for row in rows:
        r = runs[row["row"]]
        a = {q: m["ndcg@10"] for q, m in r.per_query.items()}
        for key, base in (("vs_bm25", bm25), ("vs_hybrid_convex_v1", v1)):
            if base is not r:
                iv = paired_bootstrap(a, {q: m["ndcg@10"] for q, m in base.per_query.items()})
                row[key] = {**iv.as_dict(), "excludes_zero": iv.excludes_zero}
    return {"dataset": ds.name, "split": split, "queries": len(ds.queries), "rows": rows, "index": info}


def markdown(res: dict[str, Any]) -> str:
    """The ablation table."""
    def ci(d: dict | None) -> str:
        if not d:
            return "baseline"
        return f"{d['mean']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]{' *' if d['excludes_zero'] else ''}"
    out = ["| run | nDCG@10 | Recall@10 | Recall@100 | MRR@10 | search p50 ms | vs BM25 (95% CI) | vs hybrid_convex_v1 (95% CI) |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in res["rows"]:
        out.append(f"| {r['row']} | {r['ndcg@10']:.4f} | {r['recall@10']:.4f} | {r['recall@100']:.4f} | "
                   f"{r['mrr@10']:.4f} | {r['search_p50_ms']} | {ci(r.get('vs_bm25'))} | {ci(r.get('vs_hybrid_convex_v1'))} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("../shared/data/scifact"))
    ap.add_argument("--split", default="test")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    res = run(args.data, args.split)
    if args.out:
        args.out.write_text(json.dumps(res, indent=1))
    print(markdown(res))


if __name__ == "__main__":
    main()
