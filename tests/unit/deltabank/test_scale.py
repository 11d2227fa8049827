"""DeltaBank's scale corpus (generator v5: restatements of the pack, hopweave.pack.scale_corpus):
exact sizes, Maria's filter share, near misses, determinism, topics."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "deltabank"))  # the pack's generator

from generator.scale import (  # noqa: E402
    QUALITY_QUERIES,
    corpus_stats,
    count_chunks,
    maria_filter,
    scale_documents,
    topic_of_heading,
)
from generator.scale_store import PrecomputedEmbedder  # noqa: E402

from hopweave.errors import InputError
from hopweave.models.filters import matches
from hopweave.search.chunker import chunk_document

MARIA_FIELDS = {"tenant_id": "deltabank", "tier": "Platinum", "product": "Platinum_Card", "status": "active",
                "version": "current", "region": "US"}


@pytest.fixture(scope="module")
def chunks3000():
    docs = scale_documents(3000, seed=7)
    return docs, [c for d in docs for c in chunk_document(d, version=d.version)]


def test_exact_chunk_count_and_maria_share(chunks3000) -> None:
    docs, chunks = chunks3000
    assert len(chunks) == 3000 == sum(count_chunks(d) for d in docs)
    flt = maria_filter()
    eligible = [c for c in chunks if matches(flt, c.payload())]
    assert len(eligible) == round(3000 * 0.16)
    stats = corpus_stats(docs)
    assert stats["chunks"] == 3000 and stats["maria_eligible"] == len(eligible)


def test_most_misses_differ_from_maria_in_one_field(chunks3000) -> None:
    _, chunks = chunks3000
    flt = maria_filter()
    differs: dict[str, int] = {}
    for c in chunks:
        p = c.payload()
        if matches(flt, p):
            continue
        off = [k for k, v in MARIA_FIELDS.items() if p.get(k) != v]
        if p.get("policy_type") not in ("LateFeeWaiver", "FeeSchedule"):
            off.append("policy_type")
        if set(off) == {"tier", "product"}:  # the Gold look-alike: another tier and its card
            off = ["tier"]
        if len(off) == 1:
            differs[off[0]] = differs.get(off[0], 0) + 1
    # every trap kind of seed 004 is present: Gold look-alike, superseded, retired, region, tenant
    for field in ("tier", "version", "status", "region", "tenant_id", "policy_type"):
        assert differs.get(field, 0) > 0, (field, differs)
    assert sum(differs.values()) > 0.3 * (len(chunks) - 480)


def test_deterministic_per_seed() -> None:
    a, b, c = scale_documents(500, seed=1), scale_documents(500, seed=1), scale_documents(500, seed=2)
    assert a == b
    assert a != c


def test_superseded_restatements_end_with_their_source(chunks3000) -> None:
    docs, _ = chunks3000
    superseded = [d for d in docs if d.version == "superseded"]
    assert superseded and all("valid_until" in d.metadata for d in superseded)


def test_every_section_heading_has_a_topic(chunks3000) -> None:
    docs, chunks = chunks3000
    from generator.scale import is_maria

    # every chunk passing Maria's filter restates a section of waiver-policy v4 / fee-schedule v4
    maria = [c for d in docs if is_maria(d) for c in chunk_document(d, version=d.version)]
    topics = {topic_of_heading(str(c.metadata.get("heading") or c.section)) for c in maria}
    assert None not in topics
    assert {t for _, t in QUALITY_QUERIES} <= topics
    assert topic_of_heading("FAQ: Courtesy waiver (2)") == "courtesy_waiver"  # waiver-policy 3.2
    assert topic_of_heading("Something else") is None


def test_rejects_bad_sizes() -> None:
    with pytest.raises(InputError):
        scale_documents(10)
    with pytest.raises(InputError):
        scale_documents(1000, maria_share=0.9)


class _Counting:
    def __init__(self) -> None:
        from hopweave.search.embedder import EmbeddingSpace

        self.space = EmbeddingSpace(provider="t", model="count", revision="1", dimensions=2)
        self.calls: list[list[str]] = []

    def embed(self, texts, batch_size=64):
        import numpy as np

        self.calls.append(list(texts))
        return np.array([[1.0, 0.0]] * len(texts), dtype=np.float32)


def test_precomputed_embedder_serves_known_texts_and_falls_back() -> None:
    import numpy as np

    inner = _Counting()
    pre = PrecomputedEmbedder(inner, {"a": np.array([0.0, 1.0], dtype=np.float32)})
    out = pre.embed(["a", "b", "a"])
    assert out.shape == (3, 2) and out[0][1] == 1.0 and out[1][0] == 1.0
    assert inner.calls == [["b"]] and pre.fallbacks == 1
    pre.embed(["b"])
    assert inner.calls == [["b"]]  # remembered


def test_the_example_tenant_gets_no_rival_authority(chunks3000) -> None:
    """Generator v5: DeltaBank's generated documents are restatements only (the example corpus
    holds its authoritative documents); the other tenant gets a copy of the pack."""
    docs = chunks3000[0]
    types = {(d.tenant_id, d.metadata.get("doc_type")) for d in docs}
    assert {t for tenant, t in types if tenant == "deltabank"} == {"faq", "note", "template", "training", "draft"}
    assert {t for tenant, t in types if tenant != "deltabank"} & {"policy", "fee_schedule"}
