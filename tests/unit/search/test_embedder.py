"""The default embedder: offline, normalised float32, one model per process, cached queries,
and the ONNX encoder's guarantees (byte-identical vectors whatever else is in the call, a space
identity that tells it apart from the torch encoder)."""

from __future__ import annotations

import json
import os
import threading

import numpy as np
import pytest

from hopweave.errors import ConfigError
from hopweave.search import embedder as emb_mod
from hopweave.search.embedder import (
    DIMENSIONS,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    default_embedder,
    encoder_choice,
)

TEXTS = [
    "late fee waiver",
    "ORA-51805 on refresh",
    "x" * 5000,  # truncated at 256 tokens
    "waive my late fee",
    "refund a late payment charge",
    "mortgage rates",
    "Why was my card declined at the airport in Lisbon yesterday?",
    "a",
    "",
    "ünïcödé and emoji 🙂 text",
    "mortgage rates",  # duplicate in the same call
]


def test_default_embedder_space_and_vectors(embedder):
    assert embedder is default_embedder()
    s = embedder.space
    assert (s.model, s.dimensions) == ("all-MiniLM-L6-v2", DIMENSIONS)
    assert s.revision.startswith("0.1.0+")
    if encoder_choice() != "torch":
        assert s.provider == "onnxruntime" and "+ort" in s.revision and "onnx-" in s.revision
    if encoder_choice() == "onnx-int8":
        assert "int8" in s.revision
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


def test_prefetch_loads_the_default_encoder_once(monkeypatch):
    """Engine.open starts the default encoder's session in the background: one thread per
    process, which leaves the session loaded on the process-wide default embedder."""
    fresh = OnnxEmbedder(int8=True)
    monkeypatch.setattr(emb_mod, "_DEFAULT", fresh)
    monkeypatch.setattr(emb_mod, "_PREFETCHED", False)
    before = {t.ident for t in threading.enumerate()}
    emb_mod.prefetch_default_encoder()
    emb_mod.prefetch_default_encoder()
    started = [t for t in threading.enumerate() if t.ident not in before and t.name == "hopweave-encoder-load"]
    assert len(started) <= 1
    for t in started:
        t.join(timeout=60)
    assert fresh._encoder is not None


@pytest.fixture(scope="module")
def onnx_embedder() -> OnnxEmbedder:
    """The fp32 graph (HOPWEAVE_ENCODER=onnx)."""
    return OnnxEmbedder(query_cache_size=0)


@pytest.fixture(scope="module", params=["fp32", "int8"])
def any_onnx(request, embedder, onnx_embedder) -> OnnxEmbedder:
    if request.param == "fp32":
        return onnx_embedder
    return embedder if isinstance(embedder, OnnxEmbedder) and embedder._int8 else OnnxEmbedder(int8=True)


def test_onnx_vectors_are_byte_identical_whatever_the_call(any_onnx):
    """Replay needs the same bytes: per item, whole call, any batch size, any company, any thread.
    ("a" and the truncated "x" * 5000 have the same token count, so they share a run.)"""
    e = any_onnx
    whole = e.embed_uncached(TEXTS)
    single = np.stack([e.embed_uncached([t])[0] for t in TEXTS])
    assert whole.tobytes() == single.tobytes()
    assert e.embed_uncached(TEXTS, batch_size=1).tobytes() == whole.tobytes()
    assert e.embed_uncached(TEXTS[::-1], batch_size=3)[::-1].tobytes() == whole.tobytes()
    assert whole[5].tobytes() == whole[10].tobytes()
    # a large call goes through the thread pool: still the same bytes per text
    big = TEXTS * 7
    assert e.embed_uncached(big).tobytes() == np.concatenate([whole] * 7).tobytes()
    got: list[bytes] = []
    ts = [threading.Thread(target=lambda: got.append(e.embed_uncached(TEXTS).tobytes())) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == [whole.tobytes()] * 4
    assert np.allclose(np.linalg.norm(whole, axis=1), 1.0, atol=1e-5)


def test_onnx_small_calls_are_cached_text_by_text():
    """A text embedded in one small call is not encoded again in another call with other texts
    (the classifier's clauses, then the intent split's spans), and the bytes are the same."""
    e = OnnxEmbedder(int8=True, query_cache_size=16)
    seen: list[list[str]] = []
    real = e.embed_uncached

    def counted(texts, batch_size=64):  # type: ignore[no-untyped-def]
        seen.append(list(texts))
        return real(texts, batch_size)

    e.embed_uncached = counted  # type: ignore[method-assign]
    a = e.embed(["waive my late fee", "my card was stolen"])
    b = e.embed(["my card was stolen", "raise my limit", "waive my late fee"])
    assert seen == [["waive my late fee", "my card was stolen"], ["raise my limit"]]
    assert b[0].tobytes() == a[1].tobytes() and b[2].tobytes() == a[0].tobytes()
    assert b[1].tobytes() == real(["raise my limit"])[0].tobytes()
    b[0][:] = 0  # callers get their own matrix
    assert e.embed(["my card was stolen"])[0].tobytes() == a[1].tobytes()


def test_encoders_have_different_spaces(onnx_embedder):
    torch_space = SentenceTransformerEmbedder().space  # no model load: the space is metadata
    assert torch_space.provider == "sentence-transformers"
    assert torch_space.key != onnx_embedder.space.key
    assert onnx_embedder.space.revision.startswith(torch_space.revision + "+")


def test_encoder_setting(monkeypatch):
    monkeypatch.delenv(emb_mod.ENCODER_SETTING, raising=False)
    assert encoder_choice() == "onnx-int8"
    monkeypatch.setenv(emb_mod.ENCODER_SETTING, "onnx")
    assert encoder_choice() == "onnx"
    monkeypatch.setenv(emb_mod.ENCODER_SETTING, " Torch ")
    assert encoder_choice() == "torch"
    monkeypatch.setenv(emb_mod.ENCODER_SETTING, "onnx-int8")
    assert encoder_choice() == "onnx-int8"
    monkeypatch.setenv(emb_mod.ENCODER_SETTING, "tensorflow")
    with pytest.raises(ConfigError, match="HOPWEAVE_ENCODER"):
        encoder_choice()


@pytest.mark.slow
def test_onnx_matches_sentence_transformers(onnx_embedder):
    """Same model, same numbers to float rounding: SciFact quality carries over."""
    ref = SentenceTransformerEmbedder(query_cache_size=0).embed_uncached(TEXTS, batch_size=1)
    got = onnx_embedder.embed_uncached(TEXTS)
    assert np.abs(ref - got).max() < 1e-6
    assert float((ref * got).sum(axis=1).min()) > 0.999999


@pytest.mark.slow
def test_export_is_cached_and_a_corrupt_export_is_redone(tmp_path):
    from hopweave.search.onnx_encoder import ensure_exported

    e = OnnxEmbedder(cache_dir=tmp_path, query_cache_size=0)
    first = e.embed_uncached(TEXTS)
    (onnx_file,) = tmp_path.glob("*.onnx")
    meta = json.loads(onnx_file.with_suffix(".json").read_text())
    assert meta["weights_sha256"] and len(meta["sha256"]) == 64
    mtime = onnx_file.stat().st_mtime_ns
    assert ensure_exported(e._path, meta["weights_sha256"], tmp_path) == onnx_file
    assert onnx_file.stat().st_mtime_ns == mtime  # served from the cache
    onnx_file.write_bytes(onnx_file.read_bytes()[:-10])  # truncated: checksum mismatch
    assert ensure_exported(e._path, meta["weights_sha256"], tmp_path) == onnx_file
    again = OnnxEmbedder(cache_dir=tmp_path, query_cache_size=0).embed_uncached(TEXTS)
    assert again.tobytes() == first.tobytes()


def test_int8_is_its_own_space_close_to_fp32(onnx_embedder):
    q8 = OnnxEmbedder(int8=True, query_cache_size=0)
    assert q8.space.key != onnx_embedder.space.key and "int8" in q8.space.revision
    cos = (q8.embed_uncached(TEXTS) * onnx_embedder.embed_uncached(TEXTS)).sum(axis=1)
    assert float(cos.min()) > 0.97  # close, but not the same vectors: hence another space
