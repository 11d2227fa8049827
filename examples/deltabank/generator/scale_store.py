"""Benchmark stores from the scale corpus: cached embeddings, one ingest, the DeltaBank graph.

:func:`build_scale_store` (re)builds ``<store>/graph`` (engineer A's generator at ``nodes`` nodes)
and ``<store>/vectors`` (the example corpus + :func:`generator.scale.scale_documents`,
one :class:`~hopweave.search.ingest.Ingestor` run). Corpus embeddings go through the search
package's on-disk cache (:func:`embed_texts_cached`), so only the first build of a corpus embeds.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from hopweave.models.documents import Document
from hopweave.search.embedder import Embedder

from .scale import DEFAULT_CHUNKS, DEFAULT_SEED, TENANT, corpus_stats, maria_filter, scale_documents


class PrecomputedEmbedder(Embedder):
    """An embedder that serves vectors computed ahead of time (by exact text) and falls back to
    the wrapped embedder for any other text. ``seconds`` accumulates the time spent inside
    ``embed`` (lookups and fallbacks), ``fallbacks`` the texts it had to embed."""

    def __init__(self, inner: Embedder, vectors: dict[str, np.ndarray]) -> None:
        self.inner = inner
        self.space = inner.space
        self._vectors = vectors
        self.seconds = 0.0
        self.fallbacks = 0

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Float32 matrix (len(texts), dims): cached rows, the rest embedded by the inner embedder."""
        t = time.perf_counter()
        missing = [x for x in dict.fromkeys(texts) if x not in self._vectors]
        if missing:
            self.fallbacks += len(missing)
            for x, v in zip(missing, self.inner.embed(missing, batch_size=batch_size)):
                self._vectors[x] = v
        out = (np.stack([self._vectors[x] for x in texts]).astype(np.float32, copy=False) if len(texts)
               else np.zeros((0, self.space.dimensions), dtype=np.float32))
        self.seconds += time.perf_counter() - t
        return out


def embed_texts_cached(embedder: Embedder, texts: Sequence[str], cache_dir: Path | None = None,
                       slice_size: int = 2048,
                       progress: Callable[[int, int], None] | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Vectors of the distinct ``texts``, through the search package's on-disk cache
    (``hopweave.search.eval.cache.embed_cached``, keyed by embedding space + a hash of the
    texts) in slices of ``slice_size``, so an interrupted run resumes where it stopped.

    Returns:
        ({text: vector}, {"texts", "slices", "cache_hits", "embed_s"}) — embed_s is the time
        spent embedding misses (0 when every slice came from the cache).
    """
    from hopweave.search.eval.cache import embed_cached

    distinct = list(dict.fromkeys(texts))
    out: dict[str, np.ndarray] = {}
    hits = 0
    embed_s = 0.0
    n_slices = 0
    for start in range(0, len(distinct), slice_size):
        part = distinct[start:start + slice_size]
        t = time.perf_counter()
        vecs, hit = embed_cached(embedder, part, cache_dir=cache_dir)
        if not hit:
            embed_s += time.perf_counter() - t
        hits += int(hit)
        n_slices += 1
        out.update(zip(part, vecs))
        if progress:
            progress(min(start + slice_size, len(distinct)), len(distinct))
    return out, {"texts": len(distinct), "slices": n_slices, "cache_hits": hits, "embed_s": round(embed_s, 2)}


def benchmark_documents(chunks: int = DEFAULT_CHUNKS, seed: int = DEFAULT_SEED,
                        example_dir: str | Path | None = None) -> list[Document]:
    """:func:`scale_documents` followed by the example policy corpus (``<example_dir>/corpus``,
    engineer E's) — what :func:`build_scale_store` ingests. The generated part comes first so an
    edit of the example corpus only invalidates the last embedding-cache slice. Raises InputError."""
    from hopweave.models.schema import GraphSchema
    from hopweave.pack.corpus import load_corpus

    from .build import default_example_dir

    ex = Path(example_dir) if example_dir is not None else default_example_dir()
    docs: list[Document] = []
    if ex is not None and (ex / "corpus").is_dir():
        docs = list(load_corpus(ex / "corpus", GraphSchema.load(ex / "schema.yaml"), TENANT))
    return scale_documents(chunks, seed) + docs


def chunk_texts(docs: Sequence[Document], max_words: int | None = None) -> list[str]:
    """The texts the ingest embeds for ``docs`` (title + chunk text, in chunk order)."""
    from hopweave.search.chunker import chunk_document
    from hopweave.search.ingest import Ingestor

    mw = max_words or Ingestor(None, None).max_words  # type: ignore[arg-type]  # the ingest default
    return [c.rerank_text() for d in docs for c in chunk_document(d, mw)]


def precompute_traces(store: Path, embedder: Embedder | None = None) -> dict[str, Any]:
    """Embed the store's precedent traces into its text-vector cache (what ``hopweave load``
    does; the scale build loads the graph without vectors)."""
    from hopweave.graph import open_graph_store
    from hopweave.models.store_settings import read_store_settings
    from hopweave.search.text_vectors import precompute_trace_vectors

    settings = read_store_settings(store)
    tenants = sorted(settings.tenant_domains()) if settings is not None else []
    graph = open_graph_store(store)
    try:
        return precompute_trace_vectors(store, graph, tenants, embedder)
    finally:
        graph.close()


def build_scale_store(store_dir: str | Path, *, chunks: int = DEFAULT_CHUNKS, nodes: int = 1_000_000,
                      seed: int = DEFAULT_SEED, embedder: Embedder | None = None,
                      cache_dir: Path | None = None, example_dir: str | Path | None = None,
                      progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """(Re)build a benchmark store: the DeltaBank graph with ``nodes`` nodes (engineer A's
    generator) plus a vector index holding the example policy corpus and ``chunks`` generated
    chunks (one ingest: documents -> chunks -> embed -> upsert, then optimize). Embeddings come
    from the on-disk cache when present (:func:`embed_texts_cached`).

    Returns:
        Summary: graph (load summary), corpus stats, chunks written, timings in seconds
        (graph_s, generate_s, embed_s, ingest_s of which in_embedder_s, optimize_s).

    Raises:
        StoreError / InputError from the graph load or the ingest.
    """
    import shutil

    from hopweave.models.schema import GraphSchema
    from hopweave.search.edge_index import EdgeIndex
    from hopweave.search.ingest import Ingestor

    from .build import PACK_DIR, load_deltabank

    store = Path(store_dir)
    timings: dict[str, float] = {}
    t = time.perf_counter()
    graph = load_deltabank(store, nodes=nodes, seed=seed, with_vectors=False)
    timings["graph_s"] = time.perf_counter() - t
    schema = GraphSchema.load(PACK_DIR / "schema.yaml")
    t = time.perf_counter()
    docs = benchmark_documents(chunks, seed, example_dir)
    timings["generate_s"] = time.perf_counter() - t
    if embedder is None:
        from hopweave.search.embedder import default_embedder

        embedder = default_embedder()
    vectors, cache = embed_texts_cached(embedder, chunk_texts(docs), cache_dir,
                                        progress=(lambda a, b: progress("embedding-cache", a, b)) if progress else None)
    timings["embed_s"] = cache["embed_s"]
    vec_dir = store / "vectors"
    if vec_dir.exists():
        shutil.rmtree(vec_dir)
    pre = PrecomputedEmbedder(embedder, vectors)
    index = EdgeIndex(store, schema)
    try:
        t = time.perf_counter()
        rep = Ingestor(index, pre).ingest(docs, progress=progress)
        timings["ingest_s"] = time.perf_counter() - t
        timings["in_embedder_s"] = pre.seconds
        t = time.perf_counter()
        index.optimize()
        timings["optimize_s"] = time.perf_counter() - t
        eligible = index.count(TENANT, maria_filter())
    finally:
        index.close()
    t = time.perf_counter()
    traces = precompute_traces(store, embedder)
    timings["trace_vectors_s"] = time.perf_counter() - t
    return {
        "store": str(store), "graph": graph, "corpus": {k: v for k, v in corpus_stats(docs).items() if k != "by"},
        "chunks_written": rep.chunks_written, "maria_eligible_indexed": eligible, "embedding_cache": cache,
        "fallback_embeds": pre.fallbacks, "trace_vectors": traces, "timings_s": {k: round(v, 2) for k, v in timings.items()},
    }
