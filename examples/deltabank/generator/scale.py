"""Deterministic scale corpus for the DeltaBank example: ~50,000 restatement chunks.

Since generator version 5 the text comes from the pack itself: :func:`scale_documents` is
:func:`hopweave.pack.scale_corpus.scale_corpus` over DeltaBank's example corpus (FAQs, agent notes,
email templates, training material and older drafts that restate the pack's policies, each with
its source's filter fields and in-force dates), so the corpus at scale never covers a cell the
pack has no document for, and the other tenant (northbank) gets a copy of the pack's documents
and restatements of them. What stays DeltaBank's: Maria's filter (:func:`maria_filter`: tenant
deltabank, tier Platinum, product Platinum_Card, policy_type in [LateFeeWaiver, FeeSchedule],
status active, version current, region US), which exactly ``round(chunks * maria_share)`` of the
generated chunks pass (8,000 of 50,000 by default: the search benchmark's eligible set), and the
quality ground truth of the Maria benchmark: :data:`QUALITY_QUERIES` name the topic (the section
heading of the pack document) a relevant chunk restates (:func:`topic_of_heading`).

Same ``chunks`` + ``seed`` => the same documents in the same order.
Benchmark stores are built from it by :mod:`generator.scale_store`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from hopweave.errors import InputError
from hopweave.models.documents import CURRENT, Document
from hopweave.models.filters import And, Eq, FilterTree, In
from hopweave.pack.scale_corpus import load_pack_documents, scale_corpus

#: Bumped whenever the generated text or metadata changes (benchmark stores are rebuilt).
#: 3: every document declares a ``doc_type`` with realistic shares.
#: 4: the example pack's tenant gets no second authoritative document for a cell (drafts).
#: 5: generated documents restate the pack's own documents (hopweave.pack.scale_corpus): no
#: material for a cell (fields, dates) the pack has no document for; templated topics removed.
GENERATOR_VERSION = 5
DEFAULT_CHUNKS = 50_000
DEFAULT_SEED = 4421
#: Share of the generated chunks that pass Maria's filter (8,000 of 50,000).
MARIA_SHARE = 0.16
#: Share of the generated chunks of the other tenant (a copy of the pack + restatements of it).
OTHER_TENANT_SHARE = 0.1
TENANT = "deltabank"
OTHER_TENANTS = ("northbank",)
MARIA_POLICY_TYPES = ("LateFeeWaiver", "FeeSchedule")
#: Doc-id prefix of generated documents (so they never collide with the example corpus).
PREFIX = "kb"

#: Customer-style questions with the topic (pack section heading, see topic_of_heading) they ask about.
QUALITY_QUERIES: tuple[tuple[str, str], ...] = (
    ("I want to dispute this $39 late fee on my Platinum card", "courtesy_waiver"),
    ("can my late payment charge be reversed as a one-time courtesy this year", "courtesy_waiver"),
    ("what counts as good standing for a fee waiver, how many missed payments are allowed", "definitions"),
    ("how long after the statement can I still ask for the late fee to be waived", "eligibility"),
    ("who approves a second fee waiver in the same year", "escalation"),
    ("I lost my job and cannot pay, can you remove the late charges", "financial_hardship"),
    ("how is a fee reversal recorded and when will I see it on my account", "recording_the_decision"),
    ("how much is the late payment fee and is there a grace period", "late_payment_fee"),
    ("is there a yearly fee on the platinum credit card", "annual_fee"),
    ("do I pay extra for purchases abroad in another currency", "foreign_transaction_fee"),
    ("what does it cost to withdraw cash with my card", "cash_advance_fee"),
    ("my payment bounced, what fee do I get charged", "returned_payment_fee"),
)


def _key(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", heading.lower()).strip("_")


@lru_cache(maxsize=1)
def pack_documents() -> tuple[Document, ...]:
    """DeltaBank's example corpus (the generator's only source)."""
    from .build import PACK_DIR

    return tuple(load_pack_documents(PACK_DIR)[0])


@lru_cache(maxsize=1)
def _topics() -> tuple[str, ...]:
    """Section headings of the pack's Maria documents, longest first."""
    heads = {h for d in pack_documents() if is_maria(d) for h in _headings(d)}
    return tuple(sorted(heads, key=lambda h: (-len(h), h)))


def _headings(doc: Document) -> list[str]:
    from hopweave.pack.scale_corpus import source_sections

    return [s.heading for s in source_sections(doc)]


def topic_of_heading(heading: str | None) -> str | None:
    """The topic key of a section heading: the Maria-document section heading it contains
    ("FAQ: Courtesy waiver (2)" -> "courtesy_waiver"), or None."""
    if not heading:
        return None
    low = heading.lower()
    for h in _topics():
        if h.lower() in low:
            return _key(h)
    return None


def maria_filter(tenant_id: str = TENANT) -> FilterTree:
    """Maria's filter (seed 004) as a FilterTree over the chunk fields."""
    return And(clauses=(
        Eq(field="tenant_id", value=tenant_id),
        Eq(field="tier", value="Platinum"),
        Eq(field="product", value="Platinum_Card"),
        In(field="policy_type", values=MARIA_POLICY_TYPES),
        Eq(field="status", value="active"),
        Eq(field="version", value=CURRENT),
        Eq(field="region", value="US"),
    ))


def _has(value: Any, want: str) -> bool:
    return want in value if isinstance(value, (list, tuple)) else value == want


def is_maria(d: Document) -> bool:
    """Whether a document's chunks pass :func:`maria_filter`."""
    m = d.metadata
    return (d.tenant_id == TENANT and _has(m.get("tier"), "Platinum") and _has(m.get("product"), "Platinum_Card")
            and m.get("policy_type") in MARIA_POLICY_TYPES and m.get("status") == "active"
            and d.version == CURRENT and _has(m.get("region"), "US"))


def count_chunks(doc: Document) -> int:
    """Chunks a generated document is cut into (one per section; sections stay far below the
    chunker's 180-word cap)."""
    return doc.text.count("\n## ") + (1 if doc.text.startswith("## ") else 0)


def scale_documents(chunks: int = DEFAULT_CHUNKS, seed: int = DEFAULT_SEED,
                    maria_share: float = MARIA_SHARE) -> list[Document]:
    """The scale corpus: documents that chunk into exactly ``chunks`` chunks, of which
    ``round(chunks * maria_share)`` pass :func:`maria_filter`.

    Raises:
        InputError: ``chunks`` < 100 or ``maria_share`` outside (0, 0.5].
    """
    if chunks < 100:
        raise InputError(f"chunks must be >= 100, got {chunks}")
    if not 0 < maria_share <= 0.5:
        raise InputError(f"maria_share must be in (0, 0.5], got {maria_share}")
    return scale_corpus(pack_documents(), chunks, seed, mirror_tenants=OTHER_TENANTS,
                        mirror_share=OTHER_TENANT_SHARE, focus=is_maria, focus_share=maria_share, prefix=PREFIX)


def corpus_stats(docs: list[Document]) -> dict[str, Any]:
    """Summary of a generated corpus: documents, chunks, chunks passing Maria's filter, and
    chunk counts per tenant / tier / policy type / version / status / region / doc_type."""
    out: dict[str, Any] = {"documents": len(docs), "chunks": 0, "maria_eligible": 0}
    by: dict[str, dict[str, int]] = {k: {} for k in ("tenant_id", "tier", "policy_type", "version", "status",
                                                     "region", "kind", "doc_type")}
    for d in docs:
        n = count_chunks(d)
        out["chunks"] += n
        m = d.metadata
        vals = {"tenant_id": d.tenant_id, "version": d.version, **{k: m.get(k) for k in by if k in m}}
        for k, v in vals.items():
            by[k][str(v)] = by[k].get(str(v), 0) + n
        if is_maria(d):
            out["maria_eligible"] += n
    out["by"] = {k: dict(sorted(v.items())) for k, v in by.items()}
    return out
