"""Build a scale store for ANY pack: the pack loaded as usual plus a generated corpus restating it.

    python benchmarks/scale_pack.py examples/telecom --chunks 50000 --store DIR

Loads the pack (``hopweave load``: graph, goals, filter mapping, its corpus), then ingests
``--chunks`` generated chunks from :func:`hopweave.pack.scale_corpus.scale_corpus` over the pack's
own corpus (FAQs, agent notes, templates, training material, drafts restating its documents, with
their filter fields and dates; the pack's tenants without documents get a copy of the pack; no
material for a cell the pack has no document for), embeddings through the on-disk cache, and
optimizes the index. Then run the pack's scenarios against it:
``hopweave eval scenarios PACK --store DIR``. Prints a JSON summary (corpus, timings).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
# generic helpers of the DeltaBank scale store (embedding cache, pre-computed embedder)
sys.path.insert(0, str(ROOT / "examples" / "deltabank"))

from generator.scale_store import PrecomputedEmbedder, chunk_texts, embed_texts_cached  # noqa: E402
from machine import machine  # noqa: E402

from hopweave.models.schema import GraphSchema  # noqa: E402
from hopweave.pack.manifest import read_manifest  # noqa: E402
from hopweave.pack.scale_corpus import SCALE_CORPUS_VERSION, load_pack_documents, scale_corpus  # noqa: E402


def build(pack: Path, store: Path, chunks: int, seed: int) -> dict[str, Any]:
    import shutil

    from hopweave.pack.loader import load_pack
    from hopweave.search.edge_index import EdgeIndex
    from hopweave.search.embedder import default_embedder
    from hopweave.search.ingest import Ingestor

    timings: dict[str, float] = {}
    if store.exists():
        shutil.rmtree(store)
    t = time.perf_counter()
    load_pack(pack, store)
    timings["load_pack_s"] = time.perf_counter() - t
    t = time.perf_counter()
    pack_docs, tenants = load_pack_documents(pack)
    docs = scale_corpus(pack_docs, chunks, seed, mirror_tenants=tenants)
    timings["generate_s"] = time.perf_counter() - t
    embedder = default_embedder()
    vectors, cache = embed_texts_cached(embedder, chunk_texts(docs))
    timings["embed_s"] = cache["embed_s"]
    manifest = read_manifest(pack)
    index = EdgeIndex(store, GraphSchema.load(pack / manifest.schema_))
    try:
        t = time.perf_counter()
        rep = Ingestor(index, PrecomputedEmbedder(embedder, vectors)).ingest(docs)
        timings["ingest_s"] = time.perf_counter() - t
        t = time.perf_counter()
        index.optimize()
        timings["optimize_s"] = time.perf_counter() - t
    finally:
        index.close()
    count = lambda key: dict(sorted(Counter(str(d.metadata.get(key) if key != "tenant_id" else d.tenant_id)  # noqa: E731
                                            for d in docs).items()))
    return {"pack": str(pack), "store": str(store), "generator": SCALE_CORPUS_VERSION, "seed": seed,
            "pack_documents": len(pack_docs), "generated_documents": len(docs), "chunks_written": rep.chunks_written,
            "documents_by_doc_type": count("doc_type"), "documents_by_tenant": count("tenant_id"),
            "embedding_cache": cache, "timings_s": {k: round(v, 2) for k, v in timings.items()},
            "machine": machine()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pack", type=Path)
    ap.add_argument("--chunks", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=4421)
    ap.add_argument("--store", type=Path, required=True)
    args = ap.parse_args()
    print(json.dumps(build(args.pack, args.store, args.chunks, args.seed), indent=1, default=str))


if __name__ == "__main__":
    main()
