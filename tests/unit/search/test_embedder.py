"""The default embedder: offline, normalised float32, one model per process, cached queries."""

from __future__ import annotations

import os
import threading

import numpy as np

from hopweave.search.embedder import DIMENSIONS, default_embedder


def test_default_embedder_space_and_vectors(embedder):
    assert embedder is default_embedder()
    s = embedder.space
    assert (s.provider, s.model, s.dimensions) == ("sentence-transformers", "all-MiniLM-L6-v2", DIMENSIONS)
    assert s.revision.startswith("0.1.0+")
    v = embedder.embed(["late fee waiver", "ORA-51805 on refresh", "x" * 5000])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    a, b = embedder.embed(["waive my late fee", "refund a late payment charge"]), embedder.embed(["mortgage rates"])
    assert float(a[0] @ a[1]) > float(a[0] @ b[0])


def test_query_cache_and_threads(embedder):
    q1 = embedder.embed_query("cached query text")
    assert embedder.embed_query("cached query text") is q1
    assert np.allclose(q1, embedder.embed(["cached query text"])[0], atol=1e-6)
    seen = []
    ts = [threading.Thread(target=lambda: seen.append(default_embedder())) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(e is embedder for e in seen)
