"""A realistic scale corpus for any pack, generated from the pack's own corpus.

Real knowledge bases hold a few authoritative documents (policies, fee schedules, procedures) and
many documents that restate them: FAQs, agent notes, email templates, training material, older
drafts. :func:`scale_corpus` writes such restatements for a pack at any size, from nothing but
the pack's documents:

* every generated document **restates one pack document** (its *source*; any document whose
  ``doc_type`` is not itself a restatement type): its sections quote, reorder and lightly reword
  the source's sentences, and cite the source's title and section;
* it **copies the source's chunk fields** (tenant, the pack's filter fields such as tier, product,
  plan, policy type, region, and ``status``, ``version``, ``valid_until``), and is dated on or
  after the source's ``valid_from``. So a filter (and an ``as_of``) that lets a generated chunk
  through also lets its source through: generated documents never cover a cell (a combination of
  field values, at a date) that no pack document covers. A pack without a document for Canadian
  name changes gets no generated material about Canadian name changes;
* it declares a ``doc_type`` of a restatement kind (:data:`RESTATEMENT_TYPES`, with their shares);
  a ``draft`` keeps the source's numbered layout with some figures changed, the others use bare
  headings;
* ``mirror_tenants`` give another tenant a copy of the pack's documents (same ``doc_type``, new
  ids) and restatements of them, so cross-tenant look-alikes exist and that tenant, too, has an
  authoritative document for every cell it has material for.

Which documents and fields exist is read from the documents; nothing here knows a domain. A
benchmark may ask for a share of the chunks to restate the documents ``focus`` selects (the
search benchmark's filter: its eligible set). Same documents + arguments => the same output (one
seeded ``random.Random``).
"""

from __future__ import annotations

import datetime as _dt
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from hopweave.errors import InputError
from hopweave.models.documents import Document

#: Bumped whenever the generated text or metadata changes (benchmark stores are rebuilt).
SCALE_CORPUS_VERSION = 1
#: Restatement document types and their shares (percent of generated documents).
RESTATEMENT_TYPES: tuple[tuple[str, int], ...] = (("faq", 34), ("note", 30), ("template", 20), ("training", 10),
                                                  ("draft", 6))
#: Front-matter keys that identify a source document rather than describe its cell.
_IDENTITY_KEYS = frozenset({"document", "source_uri", "summary", "supersedes", "doc_type", "title", "document_id",
                            "revision", "valid_from", "tenant_id"})
_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\s+(.+)$")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9$€£])")
_NUMBER = re.compile(r"(?<![\w.])(\d+)(?![\w.])")
#: The phrases that frame restatements (support-desk English, data: scale_phrases.yaml).
_PHRASES = yaml.safe_load((Path(__file__).with_name("scale_phrases.yaml")).read_text(encoding="utf-8"))
_REWORDINGS: tuple[tuple[str, str], ...] = tuple((a, b) for a, b in _PHRASES["rewordings"])
_FRAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    k: (tuple(v["openings"]), tuple(v["closings"])) for k, v in _PHRASES["frames"].items()}
_HEADINGS: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in _PHRASES["headings"].items()}
_TITLES: dict[str, str] = dict(_PHRASES["titles"])
_DATE_OFFSETS_DAYS = (0, 0, 0, 7, 30, 90)


@dataclass(frozen=True)
class SourceSection:
    """One section of a pack document: its number ("3.2", "" when unnumbered), heading and
    sentences."""

    number: str
    heading: str
    sentences: tuple[str, ...]


def source_sections(doc: Document) -> list[SourceSection]:
    """The ``## `` sections of a document with at least one sentence (numbered or not)."""
    out: list[SourceSection] = []
    for block in re.split(r"(?m)^## ", doc.text)[1:]:
        head, _, body = block.partition("\n")
        m = _NUMBERED.match(head.strip())
        number, heading = (m.group(1), m.group(2).strip()) if m else ("", head.strip())
        text = " ".join(line.strip() for line in body.splitlines() if line.strip() and not line.startswith("#"))
        sentences = tuple(s.strip() for s in _SENTENCE_SPLIT.split(text) if s.strip())
        if sentences and heading:
            out.append(SourceSection(number, heading, sentences))
    return out


def cell_of(doc: Document) -> dict[str, Any]:
    """The fields that decide which filters (and ``as_of`` dates, with ``valid_from``) a
    document passes: tenant, version and every metadata field but the identity ones."""
    out: dict[str, Any] = {"tenant_id": doc.tenant_id, "version": doc.version}
    out.update({k: v for k, v in doc.metadata.items() if k not in _IDENTITY_KEYS})
    return out


def _count_sections(text: str) -> int:
    return len(re.findall(r"(?m)^## ", text))


def _date(value: Any) -> _dt.date | None:
    try:
        return _dt.date.fromisoformat(str(value)[:10]) if value else None
    except ValueError:
        return None


def _reword(rng: random.Random, sentence: str, p: float) -> str:
    s = f" {sentence} "
    for a, b in _REWORDINGS:
        if a in s and rng.random() < p:
            s = s.replace(a, b, 1)
    return s.strip()


def _change_figures(rng: random.Random, sentence: str) -> str:
    """An older draft's figures: some numbers of the sentence changed (never section numbers)."""
    def sub(m: re.Match[str]) -> str:
        n = int(m.group(1))
        if n < 2 or rng.random() < 0.5:
            return m.group(1)
        return str(max(1, round(n * rng.choice((0.5, 0.8, 1.25, 1.5)))))
    return _NUMBER.sub(sub, sentence)


@dataclass(frozen=True)
class _Source:
    doc: Document
    sections: tuple[SourceSection, ...]


class _Writer:
    def __init__(self, rng: random.Random, prefix: str, shares: Sequence[tuple[str, int]]) -> None:
        self.rng = rng
        self.prefix = prefix
        self.types = [t for t, _ in shares]
        self.weights = [w for _, w in shares]
        self.serial = 0

    def restatement(self, src: _Source, tenant: str, max_sections: int) -> Document:
        rng = self.rng
        self.serial += 1
        doc_type = rng.choices(self.types, weights=self.weights)[0]
        title = src.doc.title or src.doc.document_id
        n = min(max_sections, rng.randint(1, min(8, len(src.sections))))
        picked = rng.sample(src.sections, n)
        if doc_type == "draft":  # laid out as the document it drafts
            picked.sort(key=src.sections.index)
        opens, closes = _FRAMES.get(doc_type, (("",), ("",)))
        body: list[str] = []
        seen: dict[str, int] = {}
        for sec in picked:
            number = sec.number or sec.heading
            if doc_type == "draft":
                heading = f"{sec.number} {sec.heading}".strip()
                sentences = [_change_figures(rng, s) for s in sec.sentences]
            else:
                heading = rng.choice(_HEADINGS.get(doc_type, ("{h}",))).format(h=sec.heading)
                k = rng.randint(1, len(sec.sentences))
                start = rng.randint(0, len(sec.sentences) - k)
                sentences = [_reword(rng, s, 0.3) for s in sec.sentences[start:start + k]]
                if rng.random() < 0.5:
                    sentences.insert(0, rng.choice(opens))
                if rng.random() < 0.5:
                    sentences.append(rng.choice(closes).format(title=title, number=number))
            seen[heading] = seen.get(heading, 0) + 1
            if seen[heading] > 1:
                heading = f"{heading} ({seen[heading]})"
            body.append(f"## {heading}\n\n{' '.join(s for s in sentences if s)}\n")
        doc_id = f"{self.prefix}-{tenant[:2]}-{self.serial:06d}-{doc_type}"
        meta = {k: v for k, v in src.doc.metadata.items() if k not in _IDENTITY_KEYS}
        meta["doc_type"] = doc_type
        meta["document"] = f"{doc_id}.pdf"
        start_date = _date(src.doc.metadata.get("valid_from"))
        if start_date is not None:
            until = _date(src.doc.metadata.get("valid_until"))
            offset = rng.choice(_DATE_OFFSETS_DAYS)
            if until is not None and start_date + _dt.timedelta(days=offset) >= until:
                offset = 0
            meta["valid_from"] = (start_date + _dt.timedelta(days=offset)).isoformat()
        doc_title = f"{_TITLES.get(doc_type, doc_type)}: {title}"
        return Document(document_id=doc_id, tenant_id=tenant, text="\n".join(body), title=doc_title,
                        revision="v1", version=src.doc.version, metadata=meta)

    def mirror(self, src: Document, tenant: str) -> Document:
        """A copy of a pack document for another tenant (same fields, type and text, new ids)."""
        self.serial += 1
        doc_id = f"{self.prefix}-{tenant[:2]}-{self.serial:06d}-{src.metadata.get('doc_type') or 'doc'}"
        meta = {k: v for k, v in src.metadata.items() if k not in ("document", "source_uri", "summary", "supersedes")}
        meta["document"] = f"{doc_id}-{src.revision}.pdf"
        return Document(document_id=doc_id, tenant_id=tenant, text=src.text, title=src.title, revision=src.revision,
                        version=src.version, metadata=meta)


def scale_corpus(pack_docs: Sequence[Document], chunks: int, seed: int = 0, *,
                 shares: Sequence[tuple[str, int]] = RESTATEMENT_TYPES,
                 mirror_tenants: Sequence[str] = (), mirror_share: float = 0.1,
                 focus: Callable[[Document], bool] | None = None, focus_share: float = 0.0,
                 prefix: str = "kb") -> list[Document]:
    """Generated documents that chunk into exactly ``chunks`` sections, all restating (or, for
    ``mirror_tenants``, copying) ``pack_docs``.

    Args:
        pack_docs: the pack's corpus (the only source of text, fields and coverage).
        chunks: sections to generate (each a chunk: sections stay short).
        seed: generation seed.
        shares: (doc_type, weight) of the restatements.
        mirror_tenants: other tenants given a copy of the pack's documents and restatements of it.
        mirror_share: share of ``chunks`` for the mirror tenants (together).
        focus: selects pack documents whose restatements make up ``focus_share`` of ``chunks``
            (exactly, as far as the focus documents' sections allow); the rest restate the
            other documents, every section about equally often.
        prefix: document-id prefix (never a pack document's).

    Raises:
        InputError: no pack document has a section, ``chunks`` < 1, or a share outside [0, 0.9].
    """
    if chunks < 1:
        raise InputError(f"chunks must be >= 1, got {chunks}")
    if not 0 <= focus_share <= 0.9 or not 0 <= mirror_share <= 0.9 or focus_share + mirror_share > 0.95:
        raise InputError(f"focus_share and mirror_share must lie in [0, 0.9], got {focus_share}, {mirror_share}")
    if not shares or any(w < 0 for _, w in shares) or sum(w for _, w in shares) <= 0:
        raise InputError("shares must be (doc_type, weight) pairs with a positive total")
    restatement_types = {t for t, _ in shares}
    # a pack's own FAQ or note is restated material already: only the documents it restates are sources
    sources = [_Source(d, tuple(source_sections(d))) for d in pack_docs
               if d.metadata.get("doc_type") not in restatement_types]
    sources = [s for s in sources if s.sections]
    if not sources:
        raise InputError("no pack document (other than restatements) has a '## ' section to restate")
    rng = random.Random(f"hopweave-scale-corpus-{seed}")
    writer = _Writer(rng, prefix, shares)
    mirrors = [t for t in dict.fromkeys(mirror_tenants) if t not in {s.doc.tenant_id for s in sources}]
    focused = [s for s in sources if focus is not None and focus(s.doc)]
    others = [s for s in sources if s not in focused] or sources
    targets: list[tuple[list[_Source], int, str | None]] = []
    n_focus = round(chunks * focus_share) if focused else 0
    n_mirror = round(chunks * mirror_share) if mirrors else 0
    if n_focus:
        targets.append((focused, n_focus, None))
    for i, t in enumerate(mirrors):
        targets.append((sources, n_mirror // len(mirrors) + (1 if i < n_mirror % len(mirrors) else 0), t))
    targets.append((others, chunks - n_focus - n_mirror, None))
    out: list[Document] = []
    for pool, budget, tenant in targets:
        made = 0
        if tenant is not None:
            mirrored_sources: list[_Source] = []
            for s in pool:  # the tenant's own authoritative copies first
                n = _count_sections(s.doc.text)
                if made + n > budget:
                    break
                copy = writer.mirror(s.doc, tenant)
                out.append(copy)
                mirrored_sources.append(_Source(copy, s.sections))
                made += n
            pool = mirrored_sources or pool
        # sections restated equally often: sources drawn with weight = their section count
        weights = [len(s.sections) for s in pool]
        while made < budget:
            src = rng.choices(pool, weights=weights)[0]
            doc = writer.restatement(src, tenant or src.doc.tenant_id, budget - made)
            out.append(doc)
            made += _count_sections(doc.text)
    return out


def load_pack_documents(pack_dir: str | Path) -> tuple[list[Document], list[str]]:
    """A pack's corpus documents (its manifest's corpus folder and tenant) and its tenants."""
    from hopweave.models.schema import GraphSchema
    from hopweave.pack.corpus import load_corpus
    from hopweave.pack.manifest import read_manifest

    root = Path(pack_dir)
    manifest = read_manifest(root)
    if manifest.corpus is None:
        raise InputError(f"pack {root} declares no corpus: nothing to restate")
    schema = GraphSchema.load(root / manifest.schema_)
    tenant = manifest.tenant_for_corpus()
    docs = load_corpus(root / manifest.corpus.dir, schema, tenant, tenants=manifest.tenants)
    return list(docs), list(manifest.tenants)
