"""BEIR evaluation through the real search path (qdrant-edge index, profiles, rerankers).

The corpus is indexed once into a *frozen* edge index under the cache directory, keyed by corpus
hash, embedding space and BM25 settings; corpus vectors come from the embedding cache. Each
document is one chunk (``title. text`` embedded; the title weighted in BM25 as configured).
Queries are embedded live (no cache) so the latency includes the query embedding; the first
``warmup`` queries are run once untimed before the timed pass.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from hopweave.models.documents import CURRENT, content_hash
from hopweave.models.fusion_methods import FUSION_METHODS
from hopweave.models.ranking import RankingProfile
from hopweave.models.schema import GraphSchema
from hopweave.search.edge_index import EdgeIndex
from hopweave.search.embedder import Embedder
from hopweave.search.eval.beir import BeirDataset, BeirDoc
from hopweave.search.eval.cache import default_cache_dir, embed_cached
from hopweave.search.eval.metrics import METRICS, Interval, mean_metrics, paired_bootstrap, query_metrics
from hopweave.search.index_base import SPACE_FIELD, CollectionInfo, IndexPoint
from hopweave.search.lexical import Bm25Encoder, Bm25Params, Tokenizer, TokenizerConfig, average_length
from hopweave.search.rerank import DEFAULT_TOP_N, Reranker

EVAL_TENANT = "beir"


@dataclass(frozen=True)
class EvalSettings:
    """Index-side settings of an evaluation (part of the frozen index key)."""

    k1: float = 1.2
    b: float = 0.75
    title_weight: int = 2
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)

    def key(self) -> str:
        return hashlib.sha256(repr((self.k1, self.b, self.title_weight, self.tokenizer)).encode()).hexdigest()[:10]


def doc_text(d: BeirDoc) -> str:
    """What is embedded for a corpus document: ``title. text``."""
    t = d.title.strip()
    if not t:
        return d.text
    return f"{t} {d.text}" if t[-1] in ".?!:" else f"{t}. {d.text}"


def build_index(
    ds: BeirDataset,
    embedder: Embedder,
    cache_dir: Path | None = None,
    settings: EvalSettings | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> tuple[EdgeIndex, dict[str, Any]]:
    """Open (or build once) the frozen edge index of ``ds``'s corpus.

    Returns:
        (index, build info: path, built, documents, embed_cached, seconds, docs_per_s).
    """
    settings = settings or EvalSettings()
    cache_dir = cache_dir or default_cache_dir()
    schema = GraphSchema.base()  # BEIR corpora need only the base chunk fields
    tag = f"{ds.name}-{ds.corpus_hash()[:12]}-{hashlib.sha256(embedder.space.key.encode()).hexdigest()[:8]}-{settings.key()}"
    store = cache_dir / "beir" / tag
    index = EdgeIndex(store, schema)
    info_out: dict[str, Any] = {"path": str(store), "documents": len(ds.corpus)}
    if index._load_info() is not None and (store / "vectors" / "complete").is_file():
        index.require_info()
        info_out.update(built=False)
        return index, info_out
    if store.exists():
        import shutil

        shutil.rmtree(store)
    t0 = time.perf_counter()
    texts = [doc_text(d) for d in ds.corpus]
    vecs, hit = embed_cached(
        embedder, texts, cache_dir, progress=(lambda a, b: progress("embedding", a, b)) if progress else None
    )
    t_embed = time.perf_counter() - t0
    tok = Tokenizer(settings.tokenizer)
    probe = Bm25Encoder(Bm25Params(settings.k1, settings.b, 1.0), tok, settings.title_weight)
    avg = average_length(probe, ((d.text, d.title) for d in ds.corpus))
    info = CollectionInfo(
        space=embedder.space, k1=settings.k1, b=settings.b, avg_len=round(avg, 3),
        title_weight=settings.title_weight, tokenizer=dict(settings.tokenizer.__dict__),
    )
    index.ensure_collection(info)
    enc = info.encoder()
    t1 = time.perf_counter()
    batch: list[IndexPoint] = []
    for i, (d, v) in enumerate(zip(ds.corpus, vecs)):
        payload = {
            "tenant_id": EVAL_TENANT, "chunk_id": d.doc_id, "document_id": d.doc_id, "title": d.title,
            "section": "", "revision": "v1", "version": CURRENT, "status": "active", "text": d.text,
            "text_hash": content_hash(d.title, d.text)[:32], SPACE_FIELD: embedder.space.key,
        }
        batch.append(IndexPoint(d.doc_id, payload, enc.encode_document(d.text, d.title), v))
        if len(batch) == 256 or i == len(ds.corpus) - 1:
            index.upsert(EVAL_TENANT, batch)
            batch = []
            if progress:
                progress("indexing", i + 1, len(ds.corpus))
    index.optimize()
    index.flush()
    (store / "vectors" / "complete").write_text("ok\n")
    t_index = time.perf_counter() - t1
    info_out.update(
        built=True, embed_cached=hit, embed_s=round(t_embed, 2), index_s=round(t_index, 2),
        index_docs_per_s=round(len(ds.corpus) / t_index, 1) if t_index else None,
    )
    return index, info_out


@dataclass
class EvalRun:
    """Result of one configuration over one split."""

    name: str
    profile: RankingProfile
    reranker: str | None
    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    latency_ms: dict[str, float]

    def row(self) -> dict[str, Any]:
        return {
            "name": self.name, "profile": self.profile.name, "reranker": self.reranker,
            **{m: round(v, 4) for m, v in self.metrics.items()},
            "p50_ms": self.latency_ms["p50"], "p95_ms": self.latency_ms["p95"],
            "embed_p50_ms": self.latency_ms["embed_p50"], "search_p50_ms": self.latency_ms["search_p50"],
        }


def _pct(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def evaluate(
    index: EdgeIndex,
    ds: BeirDataset,
    profile: RankingProfile,
    embedder: Embedder,
    reranker: Reranker | None = None,
    top_n: int = DEFAULT_TOP_N,
    limit: int = 100,
    warmup: int = 5,
    name: str | None = None,
) -> EvalRun:
    """Run every query of the split through search (+ rerank); metrics and latency.

    Latency per query = query embedding + search (+ rerank), measured after a warm-up.
    """
    qids = list(ds.queries)

    parts: dict[str, list[float]] = {"embed": [], "search": []}

    def one(qid: str) -> list[str]:
        text = ds.queries[qid]
        live = getattr(embedder, "embed_uncached", embedder.embed)  # time the model, not a cache
        t0 = time.perf_counter()
        vec = live([text])[0]
        t1 = time.perf_counter()
        parts["embed"].append((t1 - t0) * 1000)
        res = index.search(EVAL_TENANT, text, profile, limit=limit, query_vector=vec, query_space=embedder.space)
        hits = list(res.hits)
        if reranker is not None:
            hits = reranker.rerank(text, hits, top_n, query_vector=vec)
        parts["search"].append((time.perf_counter() - t1) * 1000)
        seen: list[str] = []
        for h in hits:
            if h.document_id not in seen:
                seen.append(h.document_id)
        return seen

    for qid in qids[:warmup]:
        one(qid)
    parts["embed"].clear()
    parts["search"].clear()
    per_query: dict[str, dict[str, float]] = {}
    lat: list[float] = []
    for qid in qids:
        t = time.perf_counter()
        ranked = one(qid)
        lat.append((time.perf_counter() - t) * 1000)
        per_query[qid] = query_metrics(ranked, ds.qrels[qid])
    return EvalRun(
        name=name or (profile.name + (f"+{reranker.name.split(':')[0]}" if reranker else "")),
        profile=profile,
        reranker=reranker.name if reranker else None,
        metrics=mean_metrics(per_query),
        per_query=per_query,
        latency_ms={
            "p50": round(_pct(lat, 0.5), 2), "p95": round(_pct(lat, 0.95), 2), "mean": round(statistics.fmean(lat), 2),
            "embed_p50": round(_pct(parts["embed"], 0.5), 2), "search_p50": round(_pct(parts["search"], 0.5), 2),
            "search_p95": round(_pct(parts["search"], 0.95), 2),
        },
    )


def compare(runs: Sequence[EvalRun], metric: str = "ndcg@10") -> dict[str, Any]:
    """Paired bootstrap CI of every run against the best single channel (dense or lexical).

    Returns:
        {"baseline": name, "intervals": {run name: Interval dict}}.
    """
    singles = [r for r in runs if FUSION_METHODS[r.profile.method].single_channel and r.reranker is None]
    if not singles:
        return {"baseline": None, "intervals": {}}
    base = max(singles, key=lambda r: (r.metrics[metric], r.name))
    out: dict[str, Interval] = {}
    for r in runs:
        if r is base:
            continue
        a = {q: m[metric] for q, m in r.per_query.items()}
        b = {q: m[metric] for q, m in base.per_query.items()}
        out[r.name] = paired_bootstrap(a, b)
    return {
        "baseline": base.name,
        "metric": metric,
        "intervals": {k: {**v.as_dict(), "excludes_zero": v.excludes_zero} for k, v in out.items()},
    }


__all__ = ["EvalRun", "EvalSettings", "build_index", "compare", "evaluate", "METRICS"]
