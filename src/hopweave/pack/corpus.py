"""A pack's policy corpus: ingested into the vector index AND described in the graph.

``<pack>/corpus/*.md`` are markdown documents with YAML front matter in the schema's chunk
fields (``document_id``, ``revision``, ``document`` = the file name cited, ``title``,
``version`` = current | superseded, ``status`` = active | retired, ``valid_from`` /
``valid_until``, ``supersedes`` = the revision it replaces, and the pack's own fields). Numbered
``## 3.2 ...`` headings become chunk sections (the search package's reader and chunker cut them).

:func:`load_corpus` reads and validates them, :func:`check_corpus_dir` reports their problems
(``hopweave validate``), :func:`ingest_corpus` writes the chunks into a vector index and
:func:`document_graph` gives the ``:Document`` nodes (one per revision, id
:func:`~hopweave.models.documents.document_node_id`) with ``SUPERSEDES`` edges between
revisions and one edge per **corpus link** of the manifest: ``{field, relationship, label,
match}`` links the Document to the ``label`` node whose ``match`` property equals the field's
value (a list value gives one edge per item). Which fields link where is data, not code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from hopweave.errors import InputError, PackError
from hopweave.graph.base import Edge, Node
from hopweave.models.documents import Document, document_node_id
from hopweave.models.schema import GraphSchema
from hopweave.pack.files import PackFileError, PackFiles
from hopweave.pack.problems import Problem

#: ``resolve(label, match_property, value)`` -> the id of the vocabulary node, or None.
Resolver = Callable[[str, str, str], "str | None"]

#: Document node properties taken from the document itself, not from its front matter.
_OWN = ("document_id", "title", "revision", "version")
#: Front-matter keys the corpus reader uses that are not chunk fields.
_CORPUS_KEYS = frozenset({"supersedes", "summary", "tenant_id"})
#: Front-matter fields copied onto the node when no schema is given (the base Document properties).
_BASE_FIELDS = ("status", "source_uri", "valid_from", "valid_until")


class _Read:
    """A corpus folder as read: its records, the files that could not be read, and the
    markdown files without front matter."""

    def __init__(self) -> None:
        self.records: list[Any] = []
        self.unreadable: list[PackFileError] = []
        self.no_front_matter: list[str] = []


def _read(directory: Path, tenant_id: str, files: PackFiles | None) -> _Read:
    """The corpus records (README files skipped), read through ``files`` (default: confined to
    ``directory``); a record without ``tenant_id`` gets ``tenant_id``. Raises InputError when the
    folder does not exist or holds no document."""
    from hopweave.search.ingest import RECORD_SUFFIXES, parse_records

    pf = files or PackFiles(directory)
    d = pf.inside(directory, "corpus folder")
    if not d.is_dir():
        raise InputError(f"corpus folder {directory} does not exist")
    paths = [p for p in pf.listing(d, RECORD_SUFFIXES, "corpus folder", recursive=True)
             if not p.name.lower().startswith("readme")]
    if not paths:
        raise InputError(f"{directory} contains no .md or .jsonl files")
    out = _Read()
    for path in paths:
        try:
            text = pf.read_text(path, "corpus", "corpus document")
        except PackFileError as exc:
            out.unreadable.append(exc)
            continue
        if not path.name.endswith(".jsonl") and not text.startswith("---"):
            out.no_front_matter.append(str(path))
        out.records += parse_records(text, str(path))
    for r in out.records:
        if isinstance(r.data, dict) and not r.data.get("tenant_id"):
            r.data["tenant_id"] = tenant_id
    return out


def load_corpus(directory: str | Path, schema: GraphSchema, tenant_id: str,
                tenants: Sequence[str] | None = None, files: PackFiles | None = None) -> list[Document]:
    """Every document of the corpus folder (README files skipped), validated against the schema's
    chunk fields, sorted by (tenant, document_id, revision). A document's front matter
    ``tenant_id`` overrides ``tenant_id`` (it must be one of ``tenants`` when given). Files are
    read through ``files`` (the pack's; default: confined to ``directory``). Raises InputError
    listing every malformed file or foreign tenant, PackFileError for a file that cannot be read
    (outside the pack, too large, not UTF-8)."""
    from hopweave.search.ingest import load_documents

    read = _read(Path(directory), tenant_id, files)
    if read.unreadable:
        raise read.unreadable[0]
    docs, _ = load_documents(read.records, schema, None, on_error="reject")
    foreign = sorted({f"{d.document_id} ({d.revision}): tenant_id {d.tenant_id!r}" for d in docs
                      if tenants is not None and d.tenant_id not in tenants})
    if foreign:
        raise InputError(f"corpus documents name tenants the pack does not serve (use one of {list(tenants or ())}):"
                         "\n  " + "\n  ".join(foreign))
    return sorted(docs, key=lambda x: (x.tenant_id, x.document_id, x.revision))


def check_corpus_dir(directory: str | Path, schema: GraphSchema, root: str | Path | None = None,
                     tenant_id: str = "_check", tenants: Sequence[str] | None = None,
                     files: PackFiles | None = None, docs_out: list[Document] | None = None) -> list[Problem]:
    """Every problem of the corpus folder (the dry run): unreadable or malformed files (outside
    the pack, too large, not UTF-8), unknown fields, duplicates, a front-matter ``tenant_id``
    not in ``tenants``, a ``supersedes`` naming no revision of the document. Returns the
    problems (file relative to ``root``); the valid documents are appended to ``docs_out``."""
    from hopweave.search.ingest import load_documents

    d = Path(directory)
    pf = files or PackFiles(root if root is not None else d)

    def rel(src: str) -> str:
        return pf.rel(src) if root is not None else src

    try:
        read = _read(d, tenant_id, pf)
    except PackFileError as exc:
        return [Problem(file=exc.file, message=exc.problem, fix=exc.fix)]
    except InputError as exc:
        return [Problem(file=rel(str(d)), message=str(exc), fix="add policy documents (*.md with front matter)")]
    records = read.records
    out = [Problem(file=exc.file, message=exc.problem, fix=exc.fix) for exc in read.unreadable]
    docs, rep = load_documents(records, schema, None, on_error="skip")
    if docs_out is not None:
        docs_out.extend(docs)
    out += [Problem(file=rel(str(d)), record=doc.document_id, message=f"document {doc.document_id} "
                    f"({doc.revision}) names tenant_id {doc.tenant_id!r}, not a tenant of the pack",
                    fix=f"use one of {list(tenants)} or drop tenant_id (the corpus tenant applies)")
            for doc in docs if tenants is not None and doc.tenant_id not in (*tenants, tenant_id)]
    out += [Problem(file=rel(p.source), line=p.line, record=p.document_id, message=p.message,
                    fix="fix the front matter: use the schema's chunk fields (docs/packs.md, Corpus documents)")
            for p in rep.skipped]
    out += _extra_field_problems(records, schema, rel)
    out += [Problem(file=rel(src), line=1, message="no YAML front matter: a pack document needs its metadata "
                    "(document_id, revision, title, version, status, ...)",
                    fix="start the file with front matter between '---' lines (docs/packs.md)")
            for src in read.no_front_matter]
    out += _supersedes_problems(docs, rel(str(d)))
    return out


def _supersedes_problems(docs: Sequence[Document], folder: str) -> list[Problem]:
    """One problem per revision whose ``supersedes`` names no revision of the same document."""
    revisions = {(d.tenant_id, d.document_id, d.revision) for d in docs}
    out = []
    for d in docs:
        sup = d.metadata.get("supersedes")
        if sup and (d.tenant_id, d.document_id, str(sup)) not in revisions:
            out.append(Problem(file=folder, record=f"{d.document_id} ({d.revision})",
                               message=f"document {d.document_id} ({d.revision}) supersedes revision {sup!r}, "
                                       "which the corpus does not hold",
                               fix="add that revision's file or fix `supersedes:`"))
    return out


def _extra_field_problems(records: list[Any], schema: GraphSchema, rel: Callable[[str], str]) -> list[Problem]:
    """One problem per file whose front matter has fields the schema does not declare."""
    from hopweave.search.ingest import parse_document

    out: list[Problem] = []
    for r in records:
        try:
            _, extra = parse_document(r.data or {}, schema, None)
        except InputError:
            continue  # reported by load_documents
        extra = sorted(set(extra) - _CORPUS_KEYS)
        if extra:
            out.append(Problem(file=rel(r.source), line=r.line, message=f"front-matter fields {extra} are not "
                               "chunk fields of the schema (they would be ignored by filters)",
                               fix="declare them under chunk_fields in schema.yaml, or remove them"))
    return out


def ingest_corpus(index: Any, embedder: Any, docs: list[Document]) -> Any:
    """Ingest the documents into ``index`` (idempotent). Returns the search package's report."""
    from hopweave.search.ingest import Ingestor

    rep = Ingestor(index, embedder).ingest(docs)
    index.optimize()
    return rep


def _as_list(v: Any) -> list[str]:
    if v is None:
        return []
    return [str(x) for x in v] if isinstance(v, (list, tuple)) else [str(v)]


def _node_fields(schema: GraphSchema | None, links: Sequence[Any]) -> list[str]:
    """Front-matter fields copied onto the Document node: its declared properties (with a schema)."""
    if schema is None:
        return list(dict.fromkeys([*_BASE_FIELDS, *(link.field for link in links)]))
    props = schema.label("Document").props
    return [n for n in props if n not in ("id", "tenant_id", "summary", *_OWN)]


def _document_node(d: Document, fields: list[str]) -> Node:
    m = d.metadata
    props: dict[str, Any] = {"document_id": d.document_id, "title": d.title, "revision": d.revision,
                             "version": d.version}
    for f in fields:
        v = m.get(f)
        props[f] = (",".join(_as_list(v)) or None) if isinstance(v, (list, tuple)) else v
    props["summary"] = f"{m.get('document') or d.document_id}: {m.get('summary') or d.title}"
    return Node(id=document_node_id(d.document_id, d.revision), label="Document",
                props={k: v for k, v in props.items() if v is not None})


def document_graph(docs: Iterable[Document], links: Sequence[Any] = (), *, schema: GraphSchema | None = None,
                   resolve: Resolver | None = None) -> tuple[list[Node], list[Edge]]:
    """``:Document`` nodes (one per revision) and their edges, sorted by (document_id, revision).

    ``links`` are the manifest's corpus links (``field``, ``relationship``, ``label``,
    ``match``); ``resolve`` finds the linked node's id (default: none found). Node properties are
    the front-matter fields the schema declares on ``Document`` (list values comma-joined).
    Raises PackError listing every linked value that names no node."""
    docs = sorted(docs, key=lambda x: (x.document_id, x.revision))
    fields = _node_fields(schema, links)
    known = {(d.document_id, d.revision) for d in docs}
    nodes: list[Node] = []
    edges: list[Edge] = []
    missing: list[str] = []
    for d in docs:
        node = _document_node(d, fields)
        nodes.append(node)
        for link in links:
            for value in _as_list(d.metadata.get(link.field)):
                dst = resolve(link.label, link.match, value) if resolve is not None else None
                if dst is None:
                    missing.append(f"{d.metadata.get('document') or d.document_id} ({d.revision}): {link.field} "
                                   f"{value!r} matches no {link.label} node with {link.match} = {value!r}")
                    continue
                edges.append(Edge(src=node.id, dst=dst, type=link.relationship))
        sup = d.metadata.get("supersedes")
        if sup and (d.document_id, str(sup)) in known:
            edges.append(Edge(src=node.id, dst=document_node_id(d.document_id, str(sup)), type="SUPERSEDES"))
    if missing:
        raise PackError("corpus links name vocabulary nodes that do not exist (add the nodes to the graph "
                        "files or fix the front matter):\n  " + "\n  ".join(missing))
    return nodes, edges


def store_resolver(store: Any, tenant_id: str) -> Resolver:
    """A resolver that looks the linked node up in ``store`` (nodes visible to ``tenant_id``),
    memoised. The lowest id wins when several nodes match."""
    from hopweave.models.filters import Eq

    cache: dict[tuple[str, str, str], str | None] = {}

    def resolve(label: str, match: str, value: str) -> str | None:
        key = (label, match, value)
        if key not in cache:
            hits = store.find_nodes(tenant_id, label, Eq(field=match, value=value))
            cache[key] = min((n.id for n in hits), default=None)
        return cache[key]

    return resolve
