"""Ranking metrics with graded relevance, and a paired bootstrap confidence interval.

Conventions (BEIR / pytrec_eval): gain = grade (linear), discount ``1 / log2(rank + 1)``; the
ideal DCG is computed from *all* judged documents of the query (not just the retrieved ones), so
nDCG lies in [0, 1]. Every metric is asserted to lie in [0, 1]: a value outside means an
evaluation bug, and raises instead of being reported.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Mapping, Sequence

METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "p@10")


class MetricBoundsError(AssertionError):
    """A metric fell outside [0, 1]: the evaluation itself is wrong."""


def _check(name: str, v: float) -> float:
    if not (0.0 <= v <= 1.0 + 1e-9) or math.isnan(v):
        raise MetricBoundsError(f"{name} = {v} lies outside [0, 1]: evaluation bug")
    return min(v, 1.0)


def ndcg_at(ranked: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k with linear gains; ideal DCG from every positively judged document."""
    dcg = 0.0
    for i, doc in enumerate(ranked[:k]):
        g = qrels.get(doc, 0)
        if g > 0:
            dcg += g / math.log2(i + 2)
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return _check(f"ndcg@{k}", dcg / idcg if idcg > 0 else 0.0)


def recall_at(ranked: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents found in the top k."""
    rel = {d for d, g in qrels.items() if g > 0}
    if not rel:
        return 0.0
    found = len(rel.intersection(ranked[:k]))
    return _check(f"recall@{k}", found / len(rel))


def mrr_at(ranked: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant document within the top k (0 if none)."""
    for i, doc in enumerate(ranked[:k]):
        if qrels.get(doc, 0) > 0:
            return _check(f"mrr@{k}", 1.0 / (i + 1))
    return 0.0


def precision_at(ranked: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """Relevant documents in the top k divided by k."""
    hits = sum(1 for doc in ranked[:k] if qrels.get(doc, 0) > 0)
    return _check(f"p@{k}", hits / k)


def query_metrics(ranked: Sequence[str], qrels: Mapping[str, int]) -> dict[str, float]:
    """All of :data:`METRICS` for one query."""
    return {
        "ndcg@10": ndcg_at(ranked, qrels, 10),
        "recall@10": recall_at(ranked, qrels, 10),
        "recall@100": recall_at(ranked, qrels, 100),
        "mrr@10": mrr_at(ranked, qrels, 10),
        "p@10": precision_at(ranked, qrels, 10),
    }


def mean_metrics(per_query: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Macro average of each metric over queries (each asserted in [0, 1])."""
    n = len(per_query)
    if n == 0:
        return dict.fromkeys(METRICS, 0.0)
    return {
        m: _check(m, sum(q[m] for q in per_query.values()) / n) for m in METRICS
    }


@dataclass(frozen=True)
class Interval:
    """Mean paired difference with a percentile bootstrap interval."""

    mean: float
    low: float
    high: float
    level: float = 0.95

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0.0 or self.high < 0.0

    def as_dict(self) -> dict[str, float]:
        return {"mean": round(self.mean, 4), "low": round(self.low, 4), "high": round(self.high, 4)}


def paired_bootstrap(
    a: Mapping[str, float],
    b: Mapping[str, float],
    samples: int = 2000,
    level: float = 0.95,
    seed: int = 13,
) -> Interval:
    """Percentile bootstrap CI of ``mean(a[q] - b[q])`` over the shared queries.

    Deterministic for a given seed. Raises ValueError when the two share no query.
    """
    qs = sorted(set(a) & set(b))
    if not qs:
        raise ValueError("paired bootstrap needs per-query values for the same queries")
    diffs = [a[q] - b[q] for q in qs]
    n = len(diffs)
    rng = random.Random(seed)
    means = []
    for _ in range(samples):
        s = 0.0
        for _ in range(n):
            s += diffs[rng.randrange(n)]
        means.append(s / n)
    means.sort()
    lo = means[int((1 - level) / 2 * samples)]
    hi = means[min(samples - 1, int((1 + level) / 2 * samples))]
    return Interval(sum(diffs) / n, lo, hi, level)
