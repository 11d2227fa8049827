"""The scale corpus generator: exact sizes, Maria's filter share, near misses, determinism."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "deltabank"))  # the pack's generator

from generator.scale import (  # noqa: E402
    QUALITY_QUERIES,
    TOPICS,
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


def test_revisions_supersede_within_a_document(chunks3000) -> None:
    docs, _ = chunks3000
    current: dict[str, list[str]] = {}
    for d in docs:
        if d.version == "current":
            current.setdefault(d.document_id, []).append(d.revision)
    assert all(len(v) == 1 for v in current.values())
    superseded = [d for d in docs if d.version == "superseded"]
    assert superseded and all("valid_until" in d.metadata for d in superseded)


def test_every_section_heading_has_a_topic(chunks3000) -> None:
    _, chunks = chunks3000
    # numbered sections keep the heading in "heading"; unnumbered ones (restatements) in "section"
    topics = {topic_of_heading(str(c.metadata.get("heading") or c.section)) for c in chunks}
    assert None not in topics
    assert {t for _, t in QUALITY_QUERIES} <= topics
    assert topic_of_heading("Annual courtesy waiver") == "courtesy_waiver"  # as in waiver-policy v3 3.2
    assert topic_of_heading("Something else") is None
    assert all(t.key for ts in TOPICS.values() for t in ts)


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


def test_the_example_tenant_gets_drafts_not_rival_policies(chunks3000) -> None:
    """Generator v4: the example corpus holds DeltaBank's authoritative documents, so a generated
    DeltaBank policy or fee schedule is declared a draft (laid out as the policy, dated a year
    back); the other tenant keeps its generated policies."""
    from generator.scale import AUTHORITATIVE_TYPES, DRAFT_TYPE

    docs = chunks3000[0]
    types = {(d.tenant_id, d.metadata["doc_type"]) for d in docs}
    assert not {t for tenant, t in types if tenant == "deltabank"} & set(AUTHORITATIVE_TYPES)
    assert ("deltabank", DRAFT_TYPE) in types
    assert {t for tenant, t in types if tenant != "deltabank"} & set(AUTHORITATIVE_TYPES)
    drafts = [d for d in docs if d.metadata["doc_type"] == DRAFT_TYPE]
    assert all(d.text.startswith("## 1.1 ") and d.metadata["kind"] == "policy" for d in drafts)
