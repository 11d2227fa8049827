"""Quality ground truth and the LangChain baseline for ``bench_maria``.

Quality: for each :data:`~generator.scale.QUALITY_QUERIES` query, a top-10 chunk is
*eligible* when it passes Maria's filter and *relevant* when it is eligible and its section has
the query's topic (``topic_of_heading``). precision@10 = relevant / 10; violations@10 = chunks
that break the filter (wrong tier, superseded, retired, other region or policy type) / 10.

LangChain baseline (optional ``bench`` extra: langchain-classic, langchain-community, faiss-cpu):
``EnsembleRetriever`` of ``BM25Retriever`` + a FAISS vector store, equal weights, over the same
chunks (the tenant's whole collection, every version and status, like the naive baseline) and
the same vectors; query vectors are precomputed for both systems, so the latency compared is
retrieval alone.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np
from generator.scale import TENANT, maria_filter, topic_of_heading
from maria_measure import summary

from hopweave.models.filters import matches


def quality(tops: Sequence[Sequence[dict[str, Any]]], topics: Sequence[str], k: int = 10) -> dict[str, float]:
    """Mean precision@k, violations@k and eligible results left after a post-filter."""
    flt = maria_filter()
    prec, viol, kept = [], [], []
    for top, topic in zip(tops, topics):
        top = list(top)[:k]
        ok = [matches(flt, dict(p, tenant_id=p.get("tenant_id", TENANT))) for p in top]
        rel = [o and topic_of_heading(p.get("heading") or p.get("section")) == topic for o, p in zip(ok, top)]
        prec.append(sum(rel) / k)
        viol.append(sum(1 for o in ok if not o) / k)
        kept.append(sum(ok))
    n = max(1, len(prec))
    return {"precision_at_10": round(sum(prec) / n, 3), "violations_at_10": round(sum(viol) / n, 3),
            "eligible_left_after_postfilter": round(sum(kept) / n, 2)}


def post_filtered(tops: Sequence[Sequence[dict[str, Any]]], k: int = 10) -> list[list[dict[str, Any]]]:
    """Each list with the chunks that fail Maria's filter removed (what a post-filter leaves)."""
    flt = maria_filter()
    return [[p for p in top if matches(flt, dict(p, tenant_id=p.get("tenant_id", TENANT)))][:k] for top in tops]


def langchain_available() -> str | None:
    """None when the LangChain baseline can run, else the reason it cannot."""
    try:
        import faiss  # noqa: F401
        from langchain_classic.retrievers import EnsembleRetriever  # noqa: F401
        from langchain_community.retrievers import BM25Retriever  # noqa: F401
        from langchain_community.vectorstores import FAISS  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is not installed (pip install 'hopweave[bench]')"
    return None


def langchain_ensemble(index: Any, queries: Sequence[str], vectors: Sequence[np.ndarray],
                       repeats: int) -> dict[str, Any]:
    """Build the LangChain ensemble over the tenant's chunks and time ``invoke`` per query.

    Returns:
        build_s, chunks, latency summary, and ``_tops`` (payload dicts of each query's results).
    """
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever
    from langchain_community.vectorstores import FAISS
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings

    qvec = {q: [float(x) for x in v] for q, v in zip(queries, vectors)}

    class _Precomputed(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:  # pragma: no cover - unused
            raise RuntimeError("documents are added with precomputed vectors")

        def embed_query(self, text: str) -> list[float]:
            return qvec[text]

    t = time.perf_counter()
    payloads = index.fetch(TENANT)
    ids = [str(p["chunk_id"]) for p in payloads]
    vecs: dict[str, np.ndarray] = {}
    for start in range(0, len(ids), 2000):
        vecs.update(index.dense_vectors(TENANT, ids[start:start + 2000]))
    docs, pairs, metas = [], [], []
    for p in payloads:
        cid = str(p["chunk_id"])
        if cid not in vecs:
            continue
        title = str(p.get("title") or "")
        text = f"{title}. {p.get('text', '')}" if title else str(p.get("text", ""))
        meta = {k: v for k, v in p.items() if k not in ("text", "provenance")}
        docs.append(Document(page_content=text, metadata=meta))
        pairs.append((text, [float(x) for x in vecs[cid]]))
        metas.append(meta)
    bm25 = BM25Retriever.from_documents(docs, k=10)
    store = FAISS.from_embeddings(pairs, _Precomputed(), metadatas=metas)
    ensemble = EnsembleRetriever(retrievers=[bm25, store.as_retriever(search_kwargs={"k": 10})],
                                 weights=[0.5, 0.5])
    build_s = time.perf_counter() - t
    tops: list[list[dict[str, Any]]] = []
    for q in queries:
        tops.append([dict(d.metadata) for d in ensemble.invoke(q)][:10])
    lat: list[float] = []
    parts: dict[str, list[float]] = {"bm25": [], "faiss": []}
    for _ in range(repeats):
        for q in queries:
            t = time.perf_counter()
            ensemble.invoke(q)
            lat.append((time.perf_counter() - t) * 1000)
        for q in queries[:4]:
            t = time.perf_counter()
            bm25.invoke(q)
            parts["bm25"].append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            store.similarity_search_by_vector(qvec[q], k=10)
            parts["faiss"].append((time.perf_counter() - t) * 1000)
    return {**summary(lat), "build_s": round(build_s, 2), "chunks": len(docs),
            "parts_p50_ms": {k: summary(v)["p50_ms"] for k, v in parts.items()}, "_tops": tops}
