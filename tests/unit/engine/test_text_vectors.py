"""Text vectors kept on disk per embedding space: precedent traces (embedded at load time) and
the goals' search questions (embedded once), read back byte-identical."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from hopweave.search.embedder import default_embedder
from hopweave.search.text_vectors import COMPACT_AT, TextVectorCache, precedent_texts, vectors_dir


class _Counting:
    def __init__(self) -> None:
        self.base = default_embedder()
        self.texts: list[str] = []

    @property
    def space(self):  # type: ignore[no-untyped-def]
        return self.base.space

    def embed(self, texts, batch_size=64):  # type: ignore[no-untyped-def]
        self.texts.extend(texts)
        return self.base.embed_uncached(texts, batch_size)


def test_vectors_persist_per_space_and_read_back_identical(tmp_path: Path) -> None:
    emb = _Counting()
    texts = ["Gold customer, LateFeeDispute, $39", "Platinum customer, FraudClaim, $250", "a third text"]
    first = TextVectorCache(tmp_path, "traces").vectors(emb, texts)  # type: ignore[arg-type]
    assert emb.texts == sorted(texts, key=lambda t: __import__("hashlib").sha256(t.encode()).hexdigest())
    emb.texts.clear()
    again = TextVectorCache(tmp_path, "traces")  # a new process: read from disk, nothing embedded
    assert again.vectors(emb, texts[::-1]).tobytes() == first[::-1].tobytes()  # type: ignore[arg-type]
    assert again.vector(emb, texts[1]).tobytes() == first[1].tobytes()  # type: ignore[arg-type]
    assert emb.texts == []
    assert first.tobytes() == emb.base.embed_uncached(texts).tobytes()
    # another kind, or no directory, shares nothing
    assert len(TextVectorCache(tmp_path, "questions").vectors(emb, texts[:1])) == 1  # type: ignore[arg-type]
    assert emb.texts == texts[:1]


def test_a_corrupt_shard_is_ignored_and_many_shards_are_merged(tmp_path: Path) -> None:
    emb = _Counting()
    cache = TextVectorCache(tmp_path, "q")
    for i in range(COMPACT_AT + 2):
        cache.vector(emb, f"question number {i}")  # type: ignore[arg-type]
    (space_dir,) = (tmp_path / "q").iterdir()
    headers = sorted(space_dir.glob("*.json"))
    assert len(headers) == COMPACT_AT + 2
    bad = headers[0].with_suffix(".npy")
    bad.write_bytes(bad.read_bytes()[:-4] + b"\0\0\0\0")  # checksum mismatch
    emb.texts.clear()
    reread = TextVectorCache(tmp_path, "q")
    vecs = reread.vectors(emb, [f"question number {i}" for i in range(COMPACT_AT + 2)])  # type: ignore[arg-type]
    assert len(emb.texts) == 1  # only the corrupt shard's text is embedded again
    assert len(list(space_dir.glob("*.json"))) <= 2  # merged into one (+ the re-embedded one)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    header = json.loads(sorted(space_dir.glob("*.json"), key=lambda p: p.stat().st_size)[-1].read_text())
    assert header["space"] == emb.space.key and len(header["keys"]) >= COMPACT_AT


def test_load_embeds_precedent_traces_and_requests_reuse_them(engine) -> None:  # type: ignore[no-untyped-def]
    from generator.scale_store import precompute_traces

    store = engine.store_dir
    got = precompute_traces(store)  # what `hopweave load` does (already done by the fixture's load)
    texts = precedent_texts(engine.graph, ["deltabank", "northbank"])
    assert got["texts"] == len(texts) > 0
    fresh = TextVectorCache(vectors_dir(store), "traces")
    emb = _Counting()
    vecs = fresh.vectors(emb, texts)  # type: ignore[arg-type]
    assert emb.texts == [] and vecs.shape == (len(texts), emb.space.dimensions)
    assert precompute_traces(store)["embedded"] == 0  # already there
