"""The DeltaBank policy corpus: ingested into the vector index AND described in the graph.

``examples/deltabank/corpus/*.md`` are markdown documents with YAML front matter in the shared
vocabulary (``document_id``, ``revision``, ``document`` = file name, ``title``, ``tier``,
``product``, ``policy_type``, ``region``, ``version`` = current | superseded, ``status`` = active |
retired, ``valid_from`` / ``valid_until``, ``supersedes`` = the revision it replaces). ``tier`` and
``product`` may be lists (the document applies to every listed value). Numbered ``## 3.2 ...``
headings become chunk sections (the search package's reader and chunker do the cutting).

:func:`load_corpus` reads and validates them; :func:`ingest_corpus` writes the chunks into a
vector index; :func:`document_graph` gives the ``:Document`` nodes (one per revision) with
``OF_PRODUCT`` / ``APPLIES_TO`` / ``OF_POLICY_TYPE`` edges to the vocabulary nodes and
``SUPERSEDES`` edges between revisions; chunks and nodes share ``document_id`` + ``revision``
(node id :func:`~hopweave.models.documents.document_node_id`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hopweave.errors import InputError
from hopweave.graph.base import Edge, Node
from hopweave.models.documents import Document, document_node_id
from hopweave.models.schema import GraphSchema

TENANT = "deltabank"


def load_corpus(directory: str | Path, schema: GraphSchema, tenant_id: str = TENANT) -> list[Document]:
    """Every document of the corpus folder, validated against the schema's chunk fields,
    sorted by (document_id, revision). Raises InputError listing every malformed file."""
    from hopweave.search.ingest import load_documents, read_records

    d = Path(directory)
    if not d.is_dir():
        raise InputError(f"corpus folder {d} does not exist")
    records = [r for r in read_records(d) if not Path(r.source).name.lower().startswith("readme")]
    docs, _ = load_documents(records, schema, tenant_id, on_error="reject")
    return sorted(docs, key=lambda x: (x.document_id, x.revision))


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


def document_graph(docs: list[Document]) -> tuple[list[Node], list[Edge]]:
    """``:Document`` nodes (one per revision) and their edges. List-valued tier/product become one
    edge per value and a comma-joined property. Returns (nodes, edges), sorted."""
    nodes: list[Node] = []
    edges: list[Edge] = []
    known = {(d.document_id, d.revision) for d in docs}
    for d in docs:
        m = d.metadata
        nid = document_node_id(d.document_id, d.revision)
        props = {
            "document_id": d.document_id,
            "title": d.title,
            "revision": d.revision,
            "version": d.version,
            "status": m.get("status"),
            "tier": ",".join(_as_list(m.get("tier"))) or None,
            "product": ",".join(_as_list(m.get("product"))) or None,
            "policy_type": m.get("policy_type"),
            "region": m.get("region"),
            "source_uri": m.get("source_uri"),
            "valid_from": m.get("valid_from"),
            "valid_until": m.get("valid_until"),
            "summary": f"{m.get('document') or d.document_id}: {m.get('summary') or d.title}",
        }
        nodes.append(Node(id=nid, label="Document", props={k: v for k, v in props.items() if v is not None}))
        for p in _as_list(m.get("product")):
            edges.append(Edge(src=nid, dst=f"PRODUCT_{p}", type="OF_PRODUCT"))
        for t in _as_list(m.get("tier")):
            edges.append(Edge(src=nid, dst=f"TIER_{t}", type="APPLIES_TO"))
        for pt in _as_list(m.get("policy_type")):
            edges.append(Edge(src=nid, dst=f"POLICYTYPE_{pt}", type="OF_POLICY_TYPE"))
        sup = m.get("supersedes")
        if sup and (d.document_id, str(sup)) in known:
            edges.append(Edge(src=nid, dst=document_node_id(d.document_id, str(sup)), type="SUPERSEDES"))
    return nodes, edges
