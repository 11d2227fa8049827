"""Small randomized chunk sets loaded into either adapter (shared by several test modules)."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from hopweave.models.documents import content_hash
from hopweave.search.client_index import ClientIndex
from hopweave.search.edge_index import EdgeIndex
from hopweave.search.embedder import Embedder, EmbeddingSpace
from hopweave.search.index_base import SPACE_FIELD, CollectionInfo, IndexPoint, VectorIndex
from hopweave.search.lexical import Bm25Encoder, Bm25Params  # noqa: F401


class HashEmbedder(Embedder):
    """A deterministic 16-d bag-of-words embedder: a cheap *dependency* for index tests.

    The index, filters and fusion are what those tests exercise; the real model is tested in
    test_embedder.py and used by the ingest tests.
    """

    def __init__(self, revision: str = "1", dims: int = 16) -> None:
        self.space = EmbeddingSpace(provider="test", model="hash-bow", revision=revision, dimensions=dims)

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), self.space.dimensions), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "little")
                out[i, h % self.space.dimensions] += 1.0
            out[i, 0] += 0.01
            out[i] /= np.linalg.norm(out[i])
        return out


WORDS = (
    "late fee waiver platinum gold silver card payment dispute refund fraud claim limit "
    "overdraft courtesy annual escalation hardship account customer statement interest"
).split()
TIERS = ["Platinum", "Gold", "Silver", "Standard"]
PRODUCTS = ["Platinum_Card", "Gold_Card", "Checking"]
POLICY = ["LateFeeWaiver", "FeeSchedule", "FraudClaim"]
REGIONS = ["US", "EU", "CA"]


def random_payloads(n: int, seed: int, tenants=("t1", "t2")) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))
        p = {
            "tenant_id": rng.choice(tenants),
            "chunk_id": f"c{i:04d}",
            "document_id": f"doc{i % 17}",
            "title": rng.choice(["Waiver policy", "Fee schedule", "Fraud claims"]),
            "text": text,
            "tier": rng.choice(TIERS) if rng.random() < 0.9 else [rng.choice(TIERS), rng.choice(TIERS)],
            "product": rng.choice(PRODUCTS),
            "policy_type": rng.choice(POLICY),
            "status": rng.choice(["active", "active", "retired"]),
            "version": rng.choice(["current", "current", "current", "superseded"]),
            "revision": rng.choice(["v1", "v2", "v3"]),
            "region": rng.choice(REGIONS),
            "valid_from": f"202{rng.randint(0, 6)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
            "section": f"{rng.randint(1, 4)}.{rng.randint(1, 3)}",
            "text_hash": content_hash(text)[:32],
        }
        if rng.random() < 0.1:
            del p["region"]
        out.append(p)
    return out


def make_index(kind: str, root: Path, schema, embedder) -> VectorIndex:
    if kind == "edge":
        return EdgeIndex(root / "edge", schema)
    return ClientIndex(schema, path=str(root / "client"))


def load(index: VectorIndex, payloads, embedder, embed_mask=None, avg_len: float = 10.0) -> CollectionInfo:
    info = index.ensure_collection(CollectionInfo(space=embedder.space, avg_len=avg_len, title_weight=1))
    enc = info.encoder()
    vecs = embedder.embed([p["title"] + ". " + p["text"] for p in payloads])
    by_tenant: dict[str, list[IndexPoint]] = {}
    for i, (p, v) in enumerate(zip(payloads, vecs)):
        p = dict(p)
        has_vec = embed_mask is None or embed_mask(i, p)
        if has_vec:
            p[SPACE_FIELD] = embedder.space.key
        by_tenant.setdefault(p["tenant_id"], []).append(
            IndexPoint(p["chunk_id"], p, enc.encode_document(p["text"], p["title"]), v if has_vec else None)
        )
    for t, pts in sorted(by_tenant.items()):
        index.upsert(t, pts)
    return info
