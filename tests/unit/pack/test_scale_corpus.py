"""The pack-agnostic scale corpus: restatements of a pack's own documents, never material for a
cell (filter fields, dates) the pack has no document for, types and shares as declared, exact
sizes, determinism, for both shipped packs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hopweave.errors import InputError
from hopweave.models.documents import Document
from hopweave.pack.scale_corpus import (
    RESTATEMENT_TYPES,
    cell_of,
    load_pack_documents,
    scale_corpus,
    source_sections,
)
from hopweave.search.chunker import chunk_document

ROOT = Path(__file__).resolve().parents[3]
PACKS = ("deltabank", "telecom")


@pytest.fixture(scope="module", params=PACKS)
def generated(request: Any) -> tuple[list[Document], list[str], list[Document]]:
    pack_docs, tenants = load_pack_documents(ROOT / "examples" / request.param)
    return pack_docs, tenants, scale_corpus(pack_docs, 4000, seed=3, mirror_tenants=tenants)


def _frozen(cell: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in cell.items() if k != "doc_type"))


def _in_force_from(d: Document) -> str:
    return str(d.metadata.get("valid_from") or "")


def test_exact_chunk_count(generated) -> None:
    _, _, docs = generated
    assert sum(len(chunk_document(d, version=d.version)) for d in docs) == 4000


def test_no_generated_document_covers_a_cell_without_a_pack_document(generated) -> None:
    """Every generated document has exactly the filter fields (tenant, pack fields, status,
    version, valid_until) of a document of its tenant that is not a restatement (a pack document,
    or the pack copy of a tenant that had none), and is in force no earlier than it."""
    pack_docs, _, docs = generated
    restatement = {t for t, _ in RESTATEMENT_TYPES}
    authorities = list(pack_docs) + [d for d in docs if d.metadata.get("doc_type") not in restatement]
    starts: dict[tuple[tuple[str, Any], ...], list[str]] = {}
    for a in authorities:
        starts.setdefault(_frozen(cell_of(a)), []).append(_in_force_from(a))
    for d in docs:
        if d.metadata.get("doc_type") not in restatement:
            continue
        key = _frozen(cell_of(d))
        assert key in starts, (d.document_id, cell_of(d))
        assert any(s <= _in_force_from(d) for s in starts[key]), (d.document_id, _in_force_from(d), starts[key])


def test_field_combinations_are_the_packs(generated) -> None:
    """Seen as (policy type, product or plan, region, tenant): nothing the pack lacks, e.g. no
    DeltaBank material on savings-account late-fee waivers or Canadian name changes."""
    pack_docs, _, docs = generated
    tenants = {d.tenant_id for d in pack_docs}
    keys = ("policy_type", "product", "plan", "region", "tier", "market")

    def combo(d: Document) -> tuple[Any, ...]:
        return tuple(str(d.metadata.get(k)) for k in keys)

    have = {combo(d) for d in pack_docs}
    assert {combo(d) for d in docs if d.tenant_id in tenants} <= have


def test_deltabank_uncovered_cells_stay_empty() -> None:
    pack_docs, tenants = load_pack_documents(ROOT / "examples" / "deltabank")
    docs = scale_corpus(pack_docs, 6000, seed=5, mirror_tenants=tenants)
    # the pack has no late-fee waiver for savings, no fraud policy for savings or checking, no
    # Canadian name-change procedure (what the "no policy" scenarios rely on)
    assert not [d for d in docs if d.metadata.get("policy_type") == "LateFeeWaiver"
                and d.metadata.get("product") == "Savings"]
    assert not [d for d in docs if d.metadata.get("policy_type") == "FraudClaim"
                and d.metadata.get("product") in ("Savings", "Checking")]
    assert not [d for d in docs if d.metadata.get("policy_type") == "NameChange" and d.metadata.get("region") == "CA"]


def test_types_and_shares_as_declared(generated) -> None:
    pack_docs, _, docs = generated
    restatement = dict(RESTATEMENT_TYPES)
    counts = Counter(d.metadata.get("doc_type") for d in docs if d.metadata.get("doc_type") in restatement)
    total = sum(counts.values())
    assert total > 900
    for t, w in RESTATEMENT_TYPES:
        assert abs(counts[t] / total - w / 100) < 0.04, (t, counts[t] / total)
    # only restatements, plus (for a tenant without documents) copies of the pack's own types
    pack_types = {d.metadata.get("doc_type") for d in pack_docs}
    assert {d.metadata.get("doc_type") for d in docs} <= set(restatement) | pack_types


def test_restatements_share_the_sources_words(generated) -> None:
    """A restatement section quotes its source: one of its sentences is mostly the pack's words
    (the others may be a greeting or a closing line)."""
    pack_docs, _, docs = generated
    words = {w for d in pack_docs for s in source_sections(d) for x in s.sentences for w in x.lower().split()}

    def share(sentence: str) -> float:
        ws = sentence.lower().split()
        return sum(w in words for w in ws) / len(ws)

    for d in docs[:300]:
        for s in source_sections(d):
            assert max(share(x) for x in s.sentences) >= 0.75, s


def test_drafts_keep_the_numbered_layout(generated) -> None:
    _, _, docs = generated
    drafts = [d for d in docs if d.metadata.get("doc_type") == "draft"]
    assert drafts
    numbered = [s.number for d in drafts for s in source_sections(d)]
    assert sum(bool(n) for n in numbered) > 0.5 * len(numbered)


def test_mirror_tenant_gets_a_copy_of_the_pack() -> None:
    pack_docs, _ = load_pack_documents(ROOT / "examples" / "deltabank")
    docs = scale_corpus(pack_docs, 3000, seed=1, mirror_tenants=["northbank"], mirror_share=0.2)
    nb = [d for d in docs if d.tenant_id == "northbank"]
    assert sum(len(chunk_document(d)) for d in nb) == 600
    copies = [d for d in nb if d.text in {p.text for p in pack_docs}]
    assert copies and all(d.document_id.startswith("kb-") for d in nb)
    assert not any(p.metadata.get("document") in d.text for d in nb for p in pack_docs)


def test_focus_share_is_exact() -> None:
    pack_docs, _ = load_pack_documents(ROOT / "examples" / "telecom")

    def focus(d: Document) -> bool:
        return d.metadata.get("policy_type") == "OutageCredit"

    docs = scale_corpus(pack_docs, 2000, seed=2, focus=focus, focus_share=0.25)
    assert sum(len(chunk_document(d)) for d in docs if focus(d)) == 500


def test_deterministic_per_seed() -> None:
    pack_docs, _ = load_pack_documents(ROOT / "examples" / "telecom")
    a, b, c = (scale_corpus(pack_docs, 500, seed=s) for s in (1, 1, 2))
    assert a == b and a != c


def test_rejects_bad_arguments() -> None:
    pack_docs, _ = load_pack_documents(ROOT / "examples" / "telecom")
    with pytest.raises(InputError):
        scale_corpus(pack_docs, 0)
    with pytest.raises(InputError):
        scale_corpus(pack_docs, 100, focus_share=0.99)
    with pytest.raises(InputError):
        scale_corpus(pack_docs, 100, shares=())
    with pytest.raises(InputError):
        scale_corpus([Document(document_id="x", tenant_id="t", text="no sections")], 100)


def test_a_packs_own_faq_is_not_restated() -> None:
    """The telecom pack's roaming FAQ is restated material itself: generated documents restate
    the documents behind it, never the FAQ."""
    pack_docs, tenants = load_pack_documents(ROOT / "examples" / "telecom")
    faq_titles = {d.title for d in pack_docs if d.metadata.get("doc_type") == "faq"}
    assert faq_titles
    docs = scale_corpus(pack_docs, 3000, seed=4, mirror_tenants=tenants)
    assert not [d for d in docs if any(d.title.endswith(f": {t}") for t in faq_titles)]
