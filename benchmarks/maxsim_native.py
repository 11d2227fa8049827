"""Passage-level dense scoring with Qdrant's native multivector MaxSim (issue 17 ablation).

Every SciFact abstract becomes ONE point whose dense field is a multivector: the shipped
encoder's document vector (its first 256-token window, title prefixed, exactly the single-vector
index's vector) followed by one vector per further 256-token window (``tune_ranking.windows``:
sentences packed greedily, title prefixed). The field is configured with
``MultiVectorConfig(comparator=MaxSim)`` in a real qdrant-edge shard, and a query is sent as a
one-vector multivector, so a point's score is the cosine of its BEST passage. The script checks
the native scores against a numpy max over the windows, then fuses them with exact BM25 under
``hybrid_convex_v1``'s recipe (minmax, alpha 0.4, 50 candidates per channel) and reports
nDCG@10, with paired-bootstrap 95% intervals (seed 13, 2,000 resamples) against BM25 and
against ``hybrid_convex_v1`` (single-vector dense).

    python benchmarks/maxsim_native.py --data ../shared/data/scifact --split train
    python benchmarks/maxsim_native.py --data ../shared/data/scifact --split test   # once

Window vectors are cached like the corpus vectors (``~/.cache/hopweave``); nothing is downloaded.
This is an offline ablation, not an engine profile: the engine has no multivector option yet.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import tune_ranking as tr  # noqa: E402
from machine import machine  # noqa: E402

from hopweave.search.eval.cache import embed_cached  # noqa: E402
from hopweave.search.eval.metrics import paired_bootstrap  # noqa: E402

DENSE, DIM, LIMIT = "dense", 384, 100


def maxsim_matrix(s: tr.Split, owners: list[int], texts: list[str]) -> tuple[np.ndarray, int, float]:
    """(queries x docs native MaxSim scores, -1 outside each query's top LIMIT; windows; max
    deviation from the numpy max over windows on those top LIMIT)."""
    import qdrant_edge as q

    tail = [j for j, t in enumerate(texts) if t]
    V, _ = embed_cached(s.emb, [texts[j] for j in tail])
    V = V / np.linalg.norm(V, axis=1, keepdims=True)
    multi: dict[int, list[list[float]]] = {i: [s.D[i].tolist()] for i in range(len(s.docs))}
    for col, j in enumerate(tail):
        multi[owners[j]].append(V[col].tolist())
    cfg = q.EdgeConfig(vectors={DENSE: q.EdgeVectorParams(
        size=DIM, distance=q.Distance.Cosine,
        multivector_config=q.MultiVectorConfig(q.MultiVectorComparator.MaxSim))})
    M = np.full_like(s.dense, -1.0)
    with tempfile.TemporaryDirectory() as d:
        shard = q.EdgeShard.create(str(Path(d) / "shard"), cfg)
        pts = [q.Point(i, {DENSE: multi[i]}, {}) for i in range(len(s.docs))]
        for k in range(0, len(pts), 500):
            shard.update(q.UpdateOperation.upsert_points(pts[k:k + 500]))
        shard.flush()
        for qi in range(len(s.qids)):
            req = q.QueryRequest(limit=LIMIT, query=q.Query.Nearest([s.Q[qi].tolist()], using=DENSE))
            for p in shard.query(req):
                M[qi, int(p.id)] = p.score
        shard.close()
    R = s.dense.copy()
    SW = s.Q @ V.T
    for col, j in enumerate(tail):
        np.maximum(R[:, owners[j]], SW[:, col], out=R[:, owners[j]])
    top = np.argsort(-R, axis=1)[:, :LIMIT]
    dev = max(float(np.abs(M[i, top[i]] - R[i, top[i]]).max()) for i in range(len(s.qids)))
    return M, len(tail), dev


def run(data: Path, split: str) -> dict:
    t0 = time.perf_counter()
    s = tr.Split(data, split)
    owners, texts, _ = tr.windows(s)
    M, n_windows, dev = maxsim_matrix(s, owners, texts)
    ids = s.docs
    ranks = {
        "BM25": lambda i: tr.topk(s.lex[i], LIMIT, ids),
        "dense (single vector)": lambda i: tr.topk(s.dense[i], LIMIT, ids),
        "dense MaxSim (native multivector)": lambda i: tr.topk(M[i], LIMIT, ids),
        "hybrid_convex_v1 (minmax, alpha 0.4, 50)": lambda i: tr.fused(s.lex[i], s.dense[i], ids),
        "MaxSim dense + BM25 (minmax, alpha 0.4, 50)": lambda i: tr.fused(s.lex[i], M[i], ids),
    }
    per = {name: {s.qids[i]: s.ndcg(i, f(i)) for i in range(len(s.qids))} for name, f in ranks.items()}
    new = per["MaxSim dense + BM25 (minmax, alpha 0.4, 50)"]
    out = {
        "split": split, "queries": len(s.qids), "windows": n_windows,
        "max_native_vs_numpy_deviation": dev,
        "ndcg@10": {k: round(float(np.mean(list(v.values()))), 4) for k, v in per.items()},
        "maxsim_fused_vs_bm25": paired_bootstrap(new, per["BM25"]).as_dict(),
        "maxsim_fused_vs_hybrid_convex_v1": paired_bootstrap(
            new, per["hybrid_convex_v1 (minmax, alpha 0.4, 50)"]).as_dict(),
        "hybrid_convex_v1_vs_bm25": paired_bootstrap(
            per["hybrid_convex_v1 (minmax, alpha 0.4, 50)"], per["BM25"]).as_dict(),
        "machine": machine(), "seconds": round(time.perf_counter() - t0, 1),
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("../shared/data/scifact"))
    ap.add_argument("--split", default="train", choices=("train", "test"))
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    res = run(args.data, args.split)
    text = json.dumps(res, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
