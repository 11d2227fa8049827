"""Section-aware chunking and deterministic chunk ids."""

from __future__ import annotations

from hopweave.models.documents import Document
from hopweave.search.chunker import chunk_document, chunk_id, split_sections

TEXT = """Preamble line.

# Waiver policy (v3)

## 1 Purpose and scope
This policy governs late fee waivers.

3.2 Annual courtesy waiver
Platinum customers may receive one waiver per calendar year.

1. This numbered list item is not a heading.

### Appendix
Extra words here.
"""


def test_sections():
    secs = [(s.section, s.heading) for s in split_sections(TEXT)]
    assert secs == [("", ""), ("1", "Purpose and scope"), ("3.2", "Annual courtesy waiver"), ("Appendix", "Appendix")]


def test_chunks_carry_metadata_and_deterministic_ids():
    doc = Document(document_id="wp", tenant_id="t1", text=TEXT, title="Waiver", revision="v3",
                   metadata={"tier": "Platinum", "source_uri": "file://wp.md"})
    a, b = chunk_document(doc), chunk_document(doc)
    assert [c.chunk_id for c in a] == [c.chunk_id for c in b]
    c32 = next(c for c in a if c.section == "3.2")
    assert c32.chunk_id == chunk_id("t1", "wp", "v3", "3.2", 0)
    assert "numbered list item" in c32.text
    p = c32.payload()
    for k, v in {"tenant_id": "t1", "document_id": "wp", "revision": "v3", "version": "current",
                 "section": "3.2", "tier": "Platinum", "title": "Waiver"}.items():
        assert p[k] == v
    assert p["provenance"]["source_uri"] == "file://wp.md"
    assert TEXT[c32.provenance.char_start:c32.provenance.char_end].startswith("Platinum customers")
    other_tenant = Document(**{**doc.model_dump(), "tenant_id": "t2"})
    assert chunk_document(other_tenant)[0].chunk_id != a[0].chunk_id


def test_long_sections_are_split():
    body = " ".join(f"Sentence number {i} is here." for i in range(200))
    doc = Document(document_id="d", tenant_id="t1", text="## 2 Long\n" + body)
    chunks = chunk_document(doc, max_words=50)
    assert len(chunks) > 5 and all(len(c.text.split()) <= 50 for c in chunks)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert len({c.chunk_id for c in chunks}) == len(chunks)
