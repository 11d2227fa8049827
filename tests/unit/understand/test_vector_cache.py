"""The classifier's example embeddings cached on disk: exact round trip, any mismatch rebuilds,
a cold classifier reads them without running the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np
import pytest
from domains import DELTABANK_CALIBRATION, DELTABANK_CONFIG

from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.search.embedder import Embedder
from hopweave.understand.classifier import GoalClassifier
from hopweave.understand.vector_cache import cache_dir_for, load_vectors, save_vectors, vectors_key

TEXTS = ["waive my late fee", "my card was stolen", "change my surname"]


class CountingEmbedder(Embedder):
    """The real embedder's space and vectors, counting the texts it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.space, self.embedded = inner, inner.space, 0

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        self.embedded += len(texts)
        return self.inner.embed(texts, batch_size)


def _vecs(n: int = 3, dims: int = 4) -> np.ndarray:
    return np.arange(n * dims, dtype=np.float32).reshape(n, dims) / 7


def test_round_trip_is_exact_and_keyed_by_space_and_texts(tmp_path: Path) -> None:
    v = _vecs()
    path = save_vectors(tmp_path, "space-a", TEXTS, v, "rev1")
    assert path is not None and path.name == vectors_key("space-a", TEXTS) + ".npy"
    got = load_vectors(tmp_path, "space-a", TEXTS, 4)
    assert got is not None and got.tobytes() == v.tobytes() and got.dtype == np.float32
    header = json.loads(path.with_suffix(".json").read_text())
    assert header["metagraph_revision"] == "rev1" and header["count"] == 3
    assert load_vectors(tmp_path, "space-b", TEXTS, 4) is None  # another model or encoder
    assert load_vectors(tmp_path, "space-a", TEXTS[:2], 4) is None  # other examples
    assert load_vectors(tmp_path, "space-a", TEXTS, 5) is None  # other dimensions


def test_corrupt_or_forged_entries_are_misses(tmp_path: Path) -> None:
    path = save_vectors(tmp_path, "s", TEXTS, _vecs(), "r")
    assert path is not None
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF  # one flipped bit of a vector: checksum mismatch
    path.write_bytes(bytes(raw))
    assert load_vectors(tmp_path, "s", TEXTS, 4) is None
    # a pickled object array with a header that matches its bytes is still refused
    with open(path, "wb") as fh:
        np.save(fh, np.array([{"x": 1}, None, 3], dtype=object), allow_pickle=True)
    meta = path.with_suffix(".json")
    header = json.loads(meta.read_text())
    import hashlib

    header["npy_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    meta.write_text(json.dumps(header))
    assert load_vectors(tmp_path, "s", TEXTS, 4) is None
    meta.write_text("{not json")
    assert load_vectors(tmp_path, "s", TEXTS, 4) is None


def test_unwritable_dir_is_not_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert save_vectors(blocker / "sub", "s", TEXTS, _vecs(), "r") is None


def test_cache_dir_is_the_stores_when_it_has_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = NetworkxGraphStore(tmp_path / "graph")
    assert cache_dir_for(store) == tmp_path / "cache" / "classifier"
    monkeypatch.setenv("HOPWEAVE_CACHE_DIR", str(tmp_path / "user"))
    assert cache_dir_for(NetworkxGraphStore(None)) == tmp_path / "user" / "classifier"


def test_cold_classifier_reads_the_disk_cache(bank, embedder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import hopweave.understand.classifier as clf_mod

    first = CountingEmbedder(embedder)
    clf_mod._VECTORS.clear()  # a new process: nothing embedded in memory
    a = GoalClassifier(bank, first, config=DELTABANK_CONFIG, calibration=DELTABANK_CALIBRATION,
                       vector_cache_dir=tmp_path).index()
    assert first.embedded == len(set(a.texts)) > 0
    assert len(list(tmp_path.glob("*.npy"))) == 1

    clf_mod._VECTORS.clear()
    cold = CountingEmbedder(embedder)
    b = GoalClassifier(bank, cold, config=DELTABANK_CONFIG, calibration=DELTABANK_CALIBRATION,
                       vector_cache_dir=tmp_path).index()
    assert cold.embedded == 0 and b.dense.tobytes() == a.dense.tobytes() and b.texts == a.texts

    (npy,) = tmp_path.glob("*.npy")
    npy.write_bytes(npy.read_bytes()[:-4])  # truncated: rebuilt and rewritten
    clf_mod._VECTORS.clear()
    again = CountingEmbedder(embedder)
    c = GoalClassifier(bank, again, config=DELTABANK_CONFIG, calibration=DELTABANK_CALIBRATION,
                       vector_cache_dir=tmp_path)
    assert c.index().dense.tobytes() == a.dense.tobytes() and again.embedded > 0
    assert load_vectors(tmp_path, embedder.space.key, a.texts, embedder.space.dimensions) is not None
    utter = "please waive the late fee on my card"
    fresh = GoalClassifier(bank, embedder, config=DELTABANK_CONFIG, calibration=DELTABANK_CALIBRATION,
                           vector_cache_dir=tmp_path)
    assert c.classify(utter).model_dump_json() == fresh.classify(utter).model_dump_json()
