"""Ingest documents: read -> validate all -> chunk -> embed in batches -> upsert -> flip.

Guarantees:

* **Validate before the first write.** Every record is parsed and checked against the schema's
  chunk fields first. ``on_error="reject"`` raises InputError listing every problem (line or id)
  and writes nothing; ``on_error="skip"`` reports the bad records and ingests the rest.
* **Idempotent.** A document whose content hash and lifecycle are already stored is left alone
  (a missing vector is repaired). Unchanged chunks keep their vectors (no re-embedding).
* **Revisions supersede, never delete.** A new current revision is written as ``version=staging``
  (invisible to search), then the previous current chunks of that document are set to
  ``superseded`` and the staged ones to ``current``. A crash leaves at most invisible staging
  points; re-running the ingest finishes the job.
* **Changed text invalidates its vector.** A chunk whose text changed is written without its old
  vector; it gets a new one when embedded (coverage reports it as missing until then).
* **Batches, and never a half-built index served.** Points are written in batches of about
  ``batch_size`` chunks (whole documents). The index is marked INCOMPLETE before the first write
  and COMPLETE (with counts and a sha256 of the inputs) only when the whole ingest succeeded; an
  index left INCOMPLETE is refused when opened (see :mod:`hopweave.search.edge_index`). Loaders
  use :func:`hopweave.search.staging.rebuild_index`, which builds aside and swaps in atomically,
  so a crash leaves the previous complete index in service.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Literal, Sequence

import numpy as np
import yaml
from pydantic import ValidationError

from hopweave.errors import InputError
from hopweave.models.documents import CURRENT, SUPERSEDED, Chunk, Document
from hopweave.models.filters import And, Eq
from hopweave.models.schema import GraphSchema
from hopweave.search.chunker import chunk_document
from hopweave.search.embedder import Embedder
from hopweave.search.index_base import SPACE_FIELD, CollectionInfo, IndexPoint, VectorIndex
from hopweave.search.lexical import Bm25Encoder, Tokenizer, TokenizerConfig, average_length

STAGING = "staging"
OnError = Literal["skip", "reject"]
_TOP_LEVEL = {"document_id", "_id", "id", "tenant_id", "text", "title", "revision", "version", "metadata"}


@dataclass(frozen=True)
class Problem:
    """A record that could not be ingested."""

    source: str
    line: int | None
    document_id: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line is not None else self.source
        who = f" (document {self.document_id!r})" if self.document_id else ""
        return f"{where}{who}: {self.message}"


@dataclass
class IngestReport:
    documents: int = 0
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    superseded_chunks: int = 0
    chunks_written: int = 0
    chunks_embedded: int = 0
    vectors_reused: int = 0
    chunks_without_vector: int = 0
    skipped: list[Problem] = field(default_factory=list)
    extra_fields: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "skipped"}
        d["skipped"] = [
            {"source": p.source, "line": p.line, "document_id": p.document_id, "message": p.message}
            for p in self.skipped
        ]
        d["chunks_per_s"] = round(self.chunks_written / self.elapsed_s, 1) if self.elapsed_s else None
        return d


# ---- reading ---------------------------------------------------------------------------
@dataclass(frozen=True)
class RawRecord:
    source: str
    line: int | None
    data: dict[str, Any] | None
    error: str | None = None


#: The file types a corpus folder holds.
RECORD_SUFFIXES = (".md", ".markdown", ".jsonl")


def read_records(path: str | Path) -> list[RawRecord]:
    """Raw records of a ``.jsonl`` file, a markdown file with YAML front matter, or a folder of them.

    Raises:
        InputError: the path does not exist, has an unsupported type or is not UTF-8 text.
    """
    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.suffix in RECORD_SUFFIXES and f.is_file())
        if not files:
            raise InputError(f"{p} contains no .md or .jsonl files")
        return [r for f in files for r in read_records(f)]
    if not p.is_file():
        raise InputError(f"{p} does not exist")
    if p.suffix not in RECORD_SUFFIXES:
        raise InputError(f"{p}: unsupported file type {p.suffix!r} (use .jsonl or .md with front matter)")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{p} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from None
    return parse_records(text, str(p))


def parse_records(text: str, source: str) -> list[RawRecord]:
    """Raw records of one file's text: a ``.jsonl`` ``source`` holds one JSON object a line,
    anything else is a markdown document with optional YAML front matter. Malformed records
    are returned with their ``error``; never raises."""
    if source.endswith(".jsonl"):
        out: list[RawRecord] = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as exc:
                out.append(RawRecord(source, n, None, f"not valid JSON: {getattr(exc, 'msg', exc)}"))
                continue
            if not isinstance(obj, dict):
                out.append(RawRecord(source, n, None, "a record must be a JSON object"))
                continue
            out.append(RawRecord(source, n, obj))
        return out
    return [_parse_markdown(text, source)]


def _parse_markdown(text: str, source: str) -> RawRecord:
    meta: dict[str, Any] = {}
    if text.startswith("---"):
        parts = text.split("\n---", 1)
        if len(parts) != 2:
            return RawRecord(source, 1, None, "front matter is not closed by '---'")
        try:
            loaded = yaml.safe_load(parts[0][3:]) or {}
        except (yaml.YAMLError, RecursionError) as exc:
            return RawRecord(source, 1, None, f"front matter is not valid YAML: {exc}")
        if not isinstance(loaded, dict):
            return RawRecord(source, 1, None, "front matter must be a mapping")
        meta = loaded
        text = parts[1].split("\n", 1)[1] if "\n" in parts[1] else ""
    meta.setdefault("document_id", Path(source).stem)
    meta["text"] = text
    return RawRecord(source, 1, meta)


# ---- validation ------------------------------------------------------------------------
def _check_value(name: str, ftype: str, value: Any) -> Any:
    if value is None:
        return None
    if ftype in ("date", "datetime"):
        if isinstance(value, datetime):
            return value.isoformat()
        if isinstance(value, date):
            return value.isoformat()
        if isinstance(value, str):
            try:
                if len(value) == 10:
                    date.fromisoformat(value)
                else:
                    datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                raise InputError(f"metadata {name!r}: {value!r} is not an ISO date (YYYY-MM-DD)") from None
            return value
        raise InputError(f"metadata {name!r}: expected an ISO date string, got {type(value).__name__}")
    if ftype == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise InputError(f"metadata {name!r}: expected an integer, got {value!r}")
    if ftype == "float":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise InputError(f"metadata {name!r}: expected a number, got {value!r}")
    if ftype == "bool":
        if isinstance(value, bool):
            return value
        raise InputError(f"metadata {name!r}: expected true/false, got {value!r}")
    # str (a list of strings is allowed: a chunk can apply to several tiers)
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value)
    raise InputError(f"metadata {name!r}: expected a string or a list of strings, got {value!r}")


def parse_document(
    raw: dict[str, Any], schema: GraphSchema, tenant_id: str | None = None
) -> tuple[Document, list[str]]:
    """Build a Document from a raw record, checking metadata types against the schema.

    Returns:
        (document, names of extra non-vocabulary metadata keys kept in the payload).

    Raises:
        InputError: missing/blank text or id, wrong metadata type, tenant mismatch.
    """
    data = dict(raw)
    meta: dict[str, Any] = {}
    nested = data.pop("metadata", None)
    if nested is not None and not isinstance(nested, dict):
        raise InputError("metadata must be an object")
    for k in list(data):
        if k not in _TOP_LEVEL:
            meta[k] = data.pop(k)
    meta.update(nested or {})
    doc_id = data.get("document_id", data.get("_id", data.get("id")))
    if doc_id is None or (isinstance(doc_id, str) and not doc_id.strip()):
        raise InputError("record has no document_id")
    rec_tenant = data.get("tenant_id", meta.pop("tenant_id", None))
    if tenant_id is not None and rec_tenant is not None and rec_tenant != tenant_id:
        raise InputError(f"record belongs to tenant {rec_tenant!r}, the ingest is for {tenant_id!r}")
    tenant = rec_tenant or tenant_id
    if not tenant:
        raise InputError("record has no tenant_id and no --tenant was given")
    text = data.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InputError("record has no text (or the text is blank / not a string)")
    version = data.get("version", meta.pop("version", CURRENT))
    if version not in (CURRENT, SUPERSEDED):
        raise InputError(f"version must be 'current' or 'superseded', got {version!r}")
    revision = data.get("revision", meta.pop("revision", "v1"))
    if not isinstance(revision, (str, int)) or isinstance(revision, bool):
        raise InputError(f"revision must be a string, got {revision!r}")
    title = data.get("title", meta.pop("title", ""))
    if not isinstance(title, str):
        raise InputError(f"title must be a string, got {title!r}")
    fields = schema.chunk_field_map
    clean: dict[str, Any] = {}
    extra: list[str] = []
    for k, v in meta.items():
        if k in ("chunk_id", "document_id", "section"):
            raise InputError(f"metadata {k!r} is set by ingest and cannot be given")
        if k in fields:
            clean[k] = _check_value(k, fields[k].type, v)
        else:
            if not isinstance(v, (str, int, float, bool, type(None), list)):
                raise InputError(f"extra metadata {k!r} must be a JSON scalar or list")
            clean[k] = v
            extra.append(k)
    try:
        doc = Document(
            document_id=str(doc_id),
            tenant_id=str(tenant),
            text=text,
            title=title,
            revision=str(revision),
            version=version,
            metadata=clean,
        )
    except ValidationError as exc:
        raise InputError("; ".join(e["msg"] for e in exc.errors())) from None
    return doc, extra


# ---- the ingestor ----------------------------------------------------------------------
class Ingestor:
    """Writes documents into a VectorIndex (see the module docstring for the guarantees).

    Args:
        index: the target index.
        embedder: the embedder; None writes lexical-only points (coverage reports them missing).
        max_words: chunk size cap in words.
        k1 / b / title_weight / tokenizer: BM25 settings used when the collection is created.
    """

    def __init__(
        self,
        index: VectorIndex,
        embedder: Embedder | None,
        max_words: int = 180,
        batch_size: int = 64,
        k1: float = 1.2,
        b: float = 0.75,
        title_weight: int = 2,
        tokenizer: TokenizerConfig | None = None,
    ) -> None:
        self.index = index
        self.embedder = embedder
        self.max_words = max_words
        self.batch_size = batch_size
        self._bm25 = (k1, b, title_weight, tokenizer or TokenizerConfig())

    def _collection(self, chunks: Sequence[Chunk]) -> CollectionInfo:
        info = self.index._load_info()
        if info is not None:
            self.index.info = info
            return info
        if self.embedder is None:
            raise InputError("the first ingest into a store needs an embedder (it fixes the vector space)")
        k1, b, tw, tok = self._bm25
        probe = Bm25Encoder(tokenizer=Tokenizer(tok), title_weight=tw)
        avg = average_length(probe, ((c.text, c.title) for c in chunks))
        info = CollectionInfo(
            space=self.embedder.space, k1=k1, b=b, avg_len=round(avg, 3), title_weight=tw,
            tokenizer=dict(tok.__dict__),
        )
        return self.index.ensure_collection(info)

    def ingest(
        self,
        documents: Sequence[Document],
        progress: Callable[[str, int, int], None] | None = None,
        report: IngestReport | None = None,
    ) -> IngestReport:
        """Ingest validated documents. Returns the report (``report`` is filled in if given).

        Raises:
            InputError: two records claim to be the current revision of one document.
        """
        t0 = time.perf_counter()
        rep = report or IngestReport()
        _check_current(documents)
        self.index.begin_ingest()
        try:
            self._ingest(documents, progress, rep)
        except BaseException:
            self.index.end_ingest(failed=True)  # partial writes stay marked INCOMPLETE
            raise
        self.index.end_ingest({"documents": len(documents), "inputs_sha256": inputs_digest(documents, self.max_words)})
        self.index.flush()
        rep.elapsed_s += time.perf_counter() - t0
        return rep

    def _ingest(
        self, documents: Sequence[Document], progress: Callable[[str, int, int], None] | None, rep: IngestReport
    ) -> None:
        # superseded history first, then current revisions (so the flip sees the history)
        ordered = sorted(documents, key=lambda d: (d.version != SUPERSEDED,))
        plans = [(d, chunk_document(d, self.max_words, version=STAGING if d.version == CURRENT else SUPERSEDED)) for d in ordered]
        info = self._collection([c for _, cs in plans for c in cs])
        rep.documents += len(documents)
        todo, to_embed = self._plan(plans, info.space.key, rep)
        vectors = self._embed(to_embed, progress, rep)
        self._write(todo, vectors, info, rep, progress)

    def _plan(
        self, plans: list[tuple[Document, list[Chunk]]], space_key: str, rep: IngestReport
    ) -> tuple[list[tuple[Document, list[Chunk], dict[str, np.ndarray]]], list[Chunk]]:
        """What to write (document, chunks, reused vectors) and which chunks to embed."""
        todo: list[tuple[Document, list[Chunk], dict[str, np.ndarray]]] = []
        to_embed: list[Chunk] = []
        for doc, chunks in plans:
            existing = self.index.fetch(doc.tenant_id, Eq(field="document_id", value=doc.document_id))
            mine = [p for p in existing if p.get("revision") == doc.revision]
            same_content = bool(mine) and {p.get("chunk_id") for p in mine} == {c.chunk_id for c in chunks} and all(
                (p.get("provenance") or {}).get("document_hash") == doc.content_hash() for p in mine
            )
            want = CURRENT if doc.version == CURRENT else SUPERSEDED
            if same_content and all(p.get("version") == want for p in mine):
                missing = [c for c in chunks if not any(p.get("chunk_id") == c.chunk_id and p.get(SPACE_FIELD) == space_key for p in mine)]
                if missing and self.embedder is not None:
                    fixed = [c.model_copy(update={"metadata": dict(c.metadata, version=want)}) for c in missing]
                    todo.append((doc, fixed, {}))
                    to_embed.extend(fixed)
                rep.unchanged += 1
                continue
            if mine or existing:
                rep.updated += 1
            else:
                rep.new += 1
            old = {p["chunk_id"]: p for p in mine}
            reuse_ids = [c.chunk_id for c in chunks if c.chunk_id in old and old[c.chunk_id].get("text_hash") == c.text_hash and old[c.chunk_id].get(SPACE_FIELD) == space_key]
            reused = self.index.dense_vectors(doc.tenant_id, reuse_ids) if reuse_ids else {}
            rep.vectors_reused += len(reused)
            todo.append((doc, chunks, reused))
            to_embed.extend(c for c in chunks if c.chunk_id not in reused)
        return todo, to_embed

    def _embed(
        self, to_embed: list[Chunk], progress: Callable[[str, int, int], None] | None, rep: IngestReport
    ) -> dict[str, np.ndarray]:
        """Embed in batches, before any write: a failing embedder leaves the store untouched."""
        vectors: dict[str, np.ndarray] = {}
        if self.embedder is None or not to_embed:
            return vectors
        total = len(to_embed)
        for start in range(0, total, self.batch_size):
            batch = to_embed[start : start + self.batch_size]
            vecs = self.embedder.embed([c.rerank_text() for c in batch], batch_size=self.batch_size)
            for c, v in zip(batch, vecs):
                vectors[c.chunk_id] = v
            if progress:
                progress("embedding", min(start + self.batch_size, total), total)
        rep.chunks_embedded += len(to_embed)
        return vectors

    def _write(
        self,
        todo: list[tuple[Document, list[Chunk], dict[str, np.ndarray]]],
        vectors: dict[str, np.ndarray],
        info: CollectionInfo,
        rep: IngestReport,
        progress: Callable[[str, int, int], None] | None,
    ) -> None:
        """Write in batches of about ``batch_size`` chunks: one upsert per tenant of the batch's
        staging/superseded points, then the flips of its current revisions."""
        enc, space_key = info.encoder(), info.space.key
        done = 0
        for batch in _batches(todo, self.batch_size):
            by_tenant: dict[str, list[IndexPoint]] = {}
            for doc, chunks, reused in batch:
                for c in chunks:
                    vec = reused.get(c.chunk_id, vectors.get(c.chunk_id))
                    payload = c.payload()
                    if vec is not None:
                        payload[SPACE_FIELD] = space_key
                    else:
                        rep.chunks_without_vector += 1
                    by_tenant.setdefault(doc.tenant_id, []).append(
                        IndexPoint(c.chunk_id, payload, enc.encode_document(c.text, c.title), vec))
            for tenant, points in sorted(by_tenant.items()):
                self.index.upsert(tenant, points)
                rep.chunks_written += len(points)
            for doc, chunks, _ in batch:
                if doc.version == CURRENT and any(c.metadata.get("version") == STAGING for c in chunks):
                    rep.superseded_chunks += self._flip(doc)
            done += len(batch)
            if progress:
                progress("writing", done, len(todo))

    def _flip(self, doc: Document) -> int:
        """Supersede the document's current chunks and make its staged ones current. Returns
        how many chunks were superseded."""
        same_doc = Eq(field="document_id", value=doc.document_id)
        before = self.index.count(doc.tenant_id, same_doc, current_only=True)
        self.index.set_payload(doc.tenant_id, {"version": SUPERSEDED}, And(clauses=(same_doc, Eq(field="version", value=CURRENT))))
        self.index.set_payload(doc.tenant_id, {"version": CURRENT}, And(clauses=(same_doc, Eq(field="version", value=STAGING))))
        return before


def _check_current(documents: Sequence[Document]) -> None:
    """Raises InputError when two records claim to be the current revision of one document."""
    current_seen: dict[tuple[str, str], str] = {}
    for d in documents:
        if d.version == CURRENT:
            key = (d.tenant_id, d.document_id)
            if key in current_seen and current_seen[key] != d.revision:
                raise InputError(
                    f"document {d.document_id!r} has two current revisions in this ingest "
                    f"({current_seen[key]!r} and {d.revision!r}): mark the older one superseded"
                )
            current_seen[key] = d.revision


def _batches(
    todo: list[tuple[Document, list[Chunk], dict[str, np.ndarray]]], size: int
) -> Iterator[list[tuple[Document, list[Chunk], dict[str, np.ndarray]]]]:
    """Whole documents grouped into batches of at least ``size`` chunks (the last may be smaller)."""
    batch: list[tuple[Document, list[Chunk], dict[str, np.ndarray]]] = []
    n = 0
    for item in todo:
        batch.append(item)
        n += len(item[1])
        if n >= size:
            yield batch
            batch, n = [], 0
    if batch:
        yield batch


def inputs_digest(documents: Iterable[Document], max_words: int) -> str:
    """sha256 over what determines an ingest's points: each document's tenant, id, revision,
    lifecycle and content hash (order-independent), plus the chunk size."""
    keys = sorted(f"{d.tenant_id}\0{d.document_id}\0{d.revision}\0{d.version}\0{d.content_hash()}" for d in documents)
    h = hashlib.sha256(f"max_words={max_words}\n".encode())
    for k in keys:
        h.update(k.encode())
        h.update(b"\n")
    return h.hexdigest()


def load_documents(
    records: Iterable[RawRecord],
    schema: GraphSchema,
    tenant_id: str | None,
    on_error: OnError = "reject",
    report: IngestReport | None = None,
) -> tuple[list[Document], IngestReport]:
    """Validate every raw record. Returns the good documents and a report listing the bad ones.

    Raises:
        InputError: ``on_error="reject"`` and at least one record is malformed (lists them all).
    """
    if on_error not in ("skip", "reject"):
        raise InputError(f"on_error must be 'skip' or 'reject', got {on_error!r}")
    rep = report or IngestReport()
    docs: list[Document] = []
    problems: list[Problem] = []
    extra: set[str] = set()
    seen: dict[tuple[str, str, str], str] = {}
    for r in records:
        doc_id = None
        if r.data is not None:
            doc_id = r.data.get("document_id", r.data.get("_id", r.data.get("id")))
        if r.error is not None:
            problems.append(Problem(r.source, r.line, None, r.error))
            continue
        try:
            doc, ex = parse_document(r.data or {}, schema, tenant_id)
        except InputError as exc:
            problems.append(Problem(r.source, r.line, str(doc_id) if doc_id is not None else None, str(exc)))
            continue
        key = (doc.tenant_id, doc.document_id, doc.revision)
        where = f"{r.source}:{r.line}"
        if key in seen:
            problems.append(Problem(r.source, r.line, doc.document_id, f"duplicate of revision {doc.revision!r} at {seen[key]}"))
            continue
        seen[key] = where
        extra.update(ex)
        docs.append(doc)
    rep.extra_fields = sorted(set(rep.extra_fields) | extra)
    if problems and on_error == "reject":
        listing = "\n  ".join(str(p) for p in problems)
        raise InputError(
            f"{len(problems)} malformed record(s); nothing was written (use --on-error skip to "
            f"ingest the rest):\n  {listing}"
        )
    rep.skipped.extend(problems)
    return docs, rep
