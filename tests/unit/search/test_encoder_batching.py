"""Whether the query encoder could batch concurrent requests: a text's vector alone vs in a
padded fixed-shape (batch, length) bucket with other texts (the full 10,000-query check is
``benchmarks/bench_encoder_batching.py``, figures in docs/BENCHMARKS.md).

The shipped int8 graph's dynamic quantization scales activations over the whole input tensor, so
batch mates (and padding) move a text's vector: the engine runs each text alone and unpadded,
which these tests pin (alone == in any call). The fp32 graph is batch-independent in a padded
bucket, and equal there to its unpadded vector.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from hopweave.search.embedder import OnnxEmbedder

ROOT = Path(__file__).resolve().parents[3]
BATCH, LENGTH = 4, 64


def _utterances() -> list[str]:
    out: dict[str, None] = {}

    def walk(node: Any) -> None:
        if isinstance(node, str):
            out[node.strip()] = None
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for pack in ("deltabank", "telecom"):
        for f in sorted((ROOT / "examples" / pack / "utterances").glob("*.yaml")):
            walk(yaml.safe_load(f.read_text(encoding="utf-8")))
    return [t for t in out if t]


UTTERANCES = _utterances()


def _padded(enc: Any, texts: list[str]) -> np.ndarray:
    """The vectors of ``texts`` (at most BATCH) in one (BATCH, LENGTH) tensor, padding rows after."""
    ids = np.zeros((BATCH, LENGTH), dtype=np.int64)
    types = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    lens = []
    for i, t in enumerate(texts):
        e = enc._tok.encode(t)
        n = len(e.ids)
        assert n <= LENGTH
        ids[i, :n], types[i, :n], mask[i, :n] = e.ids, e.type_ids, 1
        lens.append(n)
    hidden = enc._sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
    out = np.empty((len(texts), hidden.shape[2]), dtype=np.float32)
    for i, n in enumerate(lens):
        v = hidden[i, :n].sum(axis=0, dtype=np.float32) / np.float32(n)
        out[i] = v / max(np.sqrt((v * v).sum(dtype=np.float32)), np.float32(1e-12))
    return out


@pytest.fixture(scope="module")
def int8() -> OnnxEmbedder:
    return OnnxEmbedder(int8=True, query_cache_size=0)


def test_the_corpus_is_a_few_hundred_utterances():
    assert len(UTTERANCES) >= 300


def test_shipped_vectors_are_byte_identical_alone_and_in_any_call(int8):
    """300 pack utterances each alone, then in one call of 60 and in shuffled calls of 4."""
    texts = UTTERANCES[:300]
    alone = np.stack([int8.embed_uncached([t])[0] for t in texts])
    assert int8.embed_uncached(texts[100:160]).tobytes() == alone[100:160].tobytes()
    order = list(range(len(texts)))
    random.Random(31).shuffle(order)
    for s in range(0, 40, 4):
        ix = order[s:s + 4]
        got = int8.embed_uncached([texts[i] for i in ix])
        assert got.tobytes() == alone[ix].tobytes()


def test_int8_vectors_move_with_their_padded_batch(int8):
    """The refutation the engine's per-text runs rest on: in a fixed (4, 64) bucket, a text's
    int8 vector alone (padding mates) differs from the same text among 3 other texts, and from
    the shipped unpadded vector; batching would change output bytes."""
    enc = int8.encoder
    texts = UTTERANCES[:24]
    moved = changed = 0
    for i in range(0, len(texts), BATCH):
        group = texts[i:i + BATCH]
        mixed = _padded(enc, group)
        for j, t in enumerate(group):
            alone = _padded(enc, [t])[0]
            moved += alone.tobytes() != mixed[j].tobytes()
            changed += alone.tobytes() != int8.embed_uncached([t])[0].tobytes()
            assert float(alone @ mixed[j]) > 0.95  # close, not equal
    assert moved >= 0.9 * len(texts) and changed >= 0.9 * len(texts)


def test_fp32_vectors_do_not_depend_on_their_padded_batch():
    """The fp32 graph in the same bucket: alone, among 3 others and unpadded, the same bytes."""
    fp32 = OnnxEmbedder(query_cache_size=0)
    enc = fp32.encoder
    texts = UTTERANCES[:16]
    for i in range(0, len(texts), BATCH):
        group = texts[i:i + BATCH]
        mixed = _padded(enc, group)
        for j, t in enumerate(group):
            assert _padded(enc, [t])[0].tobytes() == mixed[j].tobytes() == fp32.embed_uncached([t])[0].tobytes()
