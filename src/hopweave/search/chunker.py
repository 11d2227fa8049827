"""Section-aware chunking.

A document is split at markdown headings (``#`` .. ``######``) and at numbered section lines
(``3.2 Late fee waivers``); a numbered heading keeps its number as the chunk's ``section``
("3.2"), any other heading keeps its text. Each section is packed paragraph by paragraph into
chunks of at most ``max_words`` words (a longer paragraph is split at sentence ends). Chunk ids
are deterministic: ``sha256(tenant, document_id, revision, section, index-within-section)``, so
editing one section never renames the chunks of another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hopweave.models.documents import CURRENT, Chunk, Document, Provenance, content_hash

_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)[.)]?\s+(\S.{0,80})$")
_NUM_PREFIX = re.compile(r"^(?:section\s+)?(\d+(?:\.\d+)*)[.)]?\s+(.+)$", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")


@dataclass(frozen=True)
class Section:
    section: str  # "3.2", a heading text, or "" before the first heading
    heading: str
    text: str
    start: int  # char offset of the section body in the document


def _heading(line: str) -> tuple[str, str] | None:
    """(section, heading) if ``line`` is a heading, else None."""
    m = _MD_HEADING.match(line)
    if m:
        text = m.group(2).strip()
        n = _NUM_PREFIX.match(text)
        if n:
            return n.group(1), n.group(2).strip()
        return text, text
    m = _NUMBERED.match(line.strip())
    if m and not m.group(2).rstrip().endswith((".", ",", ";", ":")) and m.group(2)[0].isupper():
        return m.group(1), m.group(2).strip()
    return None


def split_sections(text: str) -> list[Section]:
    """Split ``text`` into sections at headings; text before the first heading has section ""."""
    sections: list[Section] = []
    cur_sec, cur_head, buf_start = "", "", 0
    buf: list[str] = []
    pos = 0
    for line in text.splitlines(keepends=True):
        h = _heading(line.rstrip("\r\n"))
        if h is not None:
            body = "".join(buf)
            if body.strip():
                sections.append(Section(cur_sec, cur_head, body, buf_start))
            cur_sec, cur_head, buf, buf_start = h[0], h[1], [], pos + len(line)
        else:
            buf.append(line)
        pos += len(line)
    body = "".join(buf)
    if body.strip():
        sections.append(Section(cur_sec, cur_head, body, buf_start))
    return sections


def _pieces(paragraph: str, max_words: int) -> list[str]:
    words = paragraph.split()
    if len(words) <= max_words:
        return [" ".join(words)]
    out: list[str] = []
    cur: list[str] = []
    for sent in _SENTENCE_END.split(paragraph):
        sw = sent.split()
        while len(sw) > max_words:  # one very long sentence: hard split
            if cur:
                out.append(" ".join(cur))
                cur = []
            out.append(" ".join(sw[:max_words]))
            sw = sw[max_words:]
        if cur and len(cur) + len(sw) > max_words:
            out.append(" ".join(cur))
            cur = []
        cur.extend(sw)
    if cur:
        out.append(" ".join(cur))
    return out


def _pack(section_text: str, max_words: int) -> list[tuple[str, int, int]]:
    """Chunks of one section as (text, start, end) offsets relative to the section."""
    chunks: list[tuple[str, int, int]] = []
    cur: list[str] = []
    cur_words = 0
    cur_start = cur_end = 0
    for m in re.finditer(r"\S(?:.*?\S)?(?=\n\s*\n|\s*\Z)", section_text, re.DOTALL):
        para = m.group(0)
        for piece in _pieces(para, max_words):
            n = len(piece.split())
            if cur and cur_words + n > max_words:
                chunks.append(("\n\n".join(cur), cur_start, cur_end))
                cur, cur_words = [], 0
            if not cur:
                cur_start = m.start()
            cur.append(piece)
            cur_words += n
            cur_end = m.end()
    if cur:
        chunks.append(("\n\n".join(cur), cur_start, cur_end))
    return chunks


def chunk_id(tenant_id: str, document_id: str, revision: str, section: str, index: int) -> str:
    """Deterministic chunk id: ``c_`` + 24 hex chars of sha256 over the identifying fields."""
    return "c_" + content_hash(tenant_id, document_id, revision, section, str(index))[:24]


def chunk_document(
    doc: Document, max_words: int = 180, source_line: int | None = None, version: str = CURRENT
) -> list[Chunk]:
    """Cut ``doc`` into chunks carrying every chunk field and their provenance.

    Returns:
        Chunks in document order (``index`` counts from 0 over the whole document).
    """
    if max_words < 10:
        raise ValueError("max_words must be at least 10")
    doc_hash = doc.content_hash()
    base_meta = dict(doc.metadata)
    base_meta.update(
        tenant_id=doc.tenant_id,
        document_id=doc.document_id,
        revision=doc.revision,
        version=version,
        title=doc.title,
    )
    out: list[Chunk] = []
    for sec in split_sections(doc.text):
        for i, (text, start, end) in enumerate(_pack(sec.text, max_words)):
            cid = chunk_id(doc.tenant_id, doc.document_id, doc.revision, sec.section, i)
            meta = dict(base_meta, chunk_id=cid, section=sec.section)
            if sec.heading and sec.heading != sec.section:
                meta["heading"] = sec.heading
            out.append(
                Chunk(
                    chunk_id=cid,
                    document_id=doc.document_id,
                    tenant_id=doc.tenant_id,
                    text=text,
                    section=sec.section,
                    index=len(out),
                    metadata=meta,
                    provenance=Provenance(
                        document_id=doc.document_id,
                        revision=doc.revision,
                        source_uri=_opt_str(doc.metadata.get("source_uri")),
                        chunk_index=len(out),
                        char_start=sec.start + start,
                        char_end=sec.start + end,
                        document_hash=doc_hash,
                        source_line=source_line,
                    ),
                    text_hash=content_hash(doc.title, text)[:32],
                )
            )
    return out


def _opt_str(v: object) -> str | None:
    return None if v is None else str(v)
