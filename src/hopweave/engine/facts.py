"""Facts at run time: a system of record (a CRM, a billing system) writes nodes and edges.

:meth:`FactWriter.write` takes one tenant's nodes and edges, as :class:`~hopweave.graph.base.Node`
/ ``Edge`` or as records of the pack's JSONL format (``{"node": ID, "label": L, "properties":
{...}}``, ``{"edge": TYPE, "from": ID, "to": ID, "properties": {...}}``; docs/packs.md, "Graph
data"), and writes them in ONE store write: schema-validated by the store, all or nothing.

- **Upsert by id**: a node is merged by id, an edge by (from, type, to). A node or edge whose
  properties are already stored as given is left out (the same call twice writes nothing the
  second time).
- **Stamped**: a new node or edge gets ``recorded_at`` = the write's instant (now, UTC, to the
  second) and ``recorded_by`` = ``source``; a pattern at an earlier ``as_of`` does not see it
  (docs/engine.md, "Time"). An existing one keeps the ``recorded_at`` it had (a node's properties
  hold their latest values; model a change that must be seen in time as a new event node).
  Stores without an edge lookup treat every edge as new.
- **Refused** (typed errors, nothing written): another tenant's node ids (TenantError), labels and
  properties the schema does not declare and values of the wrong type (SchemaError), engine-owned
  labels (decision traces, pinned texts, the metagraph) and reserved properties (``id``,
  ``tenant_id``, ``recorded_at``, ``recorded_by``) or malformed records (FactError).

Traces recorded before a write replay as recorded: they pinned what they saw
(:mod:`hopweave.engine.pins`). Writes go through the engine's group commit (one store write and one
fsync per round for every caller waiting); another process catches up on its next write or
refresh (``serve --workers`` refreshes every worker's graph each ``graph_refresh_s``).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping

from pydantic import BaseModel, ConfigDict

from hopweave.engine.outcomes import commit
from hopweave.engine.trace_writer import GroupCommitter
from hopweave.errors import FactError
from hopweave.graph.base import Edge, GraphStore, Node
from hopweave.graph.write_rules import METAGRAPH_LABELS
from hopweave.models.common import check_tenant
from hopweave.models.schema import RECORDED_AT, RECORDED_BY

__all__ = ["ENGINE_LABELS", "FactWriteResult", "FactWriter", "MAX_ITEMS", "parse_records"]

#: Labels only the engine writes (a fact write naming one is refused).
ENGINE_LABELS = frozenset({"DecisionTrace", "PinnedText", "TraceStep"}) | METAGRAPH_LABELS
#: Most nodes plus edges in one call.
MAX_ITEMS = 50_000
MAX_SOURCE_CHARS = 200
_RESERVED = frozenset({"id", "tenant_id", RECORDED_AT, RECORDED_BY})


class FactWriteResult(BaseModel):
    """What one :meth:`FactWriter.write` did: the ids written (new or changed) and left out
    (already stored as given), and the instant new items were stamped with."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    source: str
    recorded_at: datetime
    nodes_written: tuple[str, ...] = ()
    edges_written: int = 0
    unchanged: int = 0


def parse_records(records: Iterable[Any], kind: str) -> list[Node] | list[Edge]:
    """Nodes (``kind`` "node") or edges ("edge") from Node/Edge objects or JSONL records.
    Raises FactError naming the record."""
    out: list[Any] = []
    for i, rec in enumerate(records):
        where = f"{kind}s[{i}]"
        if kind == "node" and isinstance(rec, Node):
            out.append(rec)
            continue
        if kind == "edge" and isinstance(rec, Edge):
            out.append(rec)
            continue
        if not isinstance(rec, Mapping):
            raise FactError(f"{where} must be a JSONL record (a mapping), not {type(rec).__name__}")
        props = rec.get("properties") or {}
        if not isinstance(props, Mapping):
            raise FactError(f"{where}.properties must be a mapping")
        if kind == "node":
            extra = set(rec) - {"node", "label", "properties"}
            nid, label = rec.get("node"), rec.get("label")
            if extra or not isinstance(nid, str) or not nid or not isinstance(label, str) or not label:
                raise FactError(f"{where} must be {{\"node\": ID, \"label\": LABEL, \"properties\": {{...}}}}"
                                + (f" (unknown keys {sorted(extra)})" if extra else ""))
            out.append(Node(nid, label, dict(props)))
        else:
            extra = set(rec) - {"edge", "from", "to", "properties"}
            rtype, src, dst = rec.get("edge"), rec.get("from"), rec.get("to")
            if extra or not all(isinstance(x, str) and x for x in (rtype, src, dst)):
                raise FactError(f"{where} must be {{\"edge\": TYPE, \"from\": ID, \"to\": ID, \"properties\": "
                                "{...}}" + (f" (unknown keys {sorted(extra)})" if extra else ""))
            out.append(Edge(str(src), str(dst), str(rtype), dict(props)))
    return out


class FactWriter:
    """Writes run-time facts to ``graph`` through ``committer`` (module docstring)."""

    def __init__(self, graph: GraphStore, committer: GroupCommitter) -> None:
        self.graph = graph
        self.committer = committer

    def write(self, tenant_id: str, nodes: Iterable[Any] = (), edges: Iterable[Any] = (), *,
              source: str) -> FactWriteResult:
        """Upsert a system of record's nodes and edges (``Engine.write_facts``), all or nothing,
        new items stamped ``recorded_at`` (now) and ``recorded_by``.

        Args:
            tenant_id: the tenant written to. nodes, edges: the records (the pack's JSONL shape).
            source: the system of record (``recorded_by``).

        Returns:
            The FactWriteResult (what was written and what was unchanged).

        Raises:
            FactError, SchemaError, TenantError, InputError or the store's errors; nothing is
            written then.
        """
        check_tenant(tenant_id)
        if not isinstance(source, str) or not source.strip() or len(source) > MAX_SOURCE_CHARS:
            raise FactError(f"source must name the system of record writing (1-{MAX_SOURCE_CHARS} characters)")
        ns = parse_records(nodes, "node")
        es = parse_records(edges, "edge")
        if len(ns) + len(es) > MAX_ITEMS:
            raise FactError(f"{len(ns) + len(es):,} items in one call; at most {MAX_ITEMS:,}: split the write")
        now = datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)
        out_nodes: list[Node] = []
        unchanged = 0
        seen: set[str] = set()
        for n in ns:
            assert isinstance(n, Node)
            self._check(n.label, n.props, f"node {n.id!r}")
            if n.id in seen:
                raise FactError(f"node {n.id!r} is given twice in one call; merge its properties into one record")
            seen.add(n.id)
            cur = self.graph.get_node(tenant_id, n.id)
            if cur is not None and cur.label == n.label and _same(cur.props, n.props):
                unchanged += 1
                continue
            stamp = {RECORDED_AT: now, RECORDED_BY: source} if cur is None else {}
            out_nodes.append(Node(n.id, n.label, {**n.props, **stamp}))
        out_edges: list[Edge] = []
        for e in es:
            assert isinstance(e, Edge)
            self._check(None, e.props, f"edge {e.src}-[{e.type}]->{e.dst}")
            cur_e = self.graph.get_edge(tenant_id, e.src, e.type, e.dst)
            if cur_e is not None and _same(cur_e.props, e.props):
                unchanged += 1
                continue
            stamp = {RECORDED_AT: now, RECORDED_BY: source} if cur_e is None else {}
            out_edges.append(Edge(e.src, e.dst, e.type, {**e.props, **stamp}))
        if out_nodes or out_edges:
            commit(self.committer, tenant_id, out_nodes, out_edges)
        return FactWriteResult(tenant_id=tenant_id, source=source, recorded_at=now,
                               nodes_written=tuple(n.id for n in out_nodes), edges_written=len(out_edges),
                               unchanged=unchanged)

    def _check(self, label: str | None, props: Mapping[str, Any], where: str) -> None:
        if label is not None and label in ENGINE_LABELS:
            raise FactError(f"{where}: {label} nodes are written by the engine itself, not by a fact write")
        reserved = sorted(set(props) & _RESERVED)
        if reserved:
            raise FactError(f"{where}: {reserved} are set by the store (the record's id, the call's tenant, the "
                            "write's instant and source); leave them out")


def _same(stored: Mapping[str, Any], given: Mapping[str, Any]) -> bool:
    """Whether every given property is stored with that value (the store normalises dates and
    JSON to strings, so compare their string forms too)."""
    for k, v in given.items():
        cur = stored.get(k)
        if cur == v:
            continue
        if v is None and k not in stored:
            continue
        if isinstance(v, (list, tuple)) and isinstance(cur, (list, tuple)) and list(v) == list(cur):
            continue
        if cur is not None and not isinstance(v, (dict, list, tuple)) and str(cur) == _norm(v):
            continue
        if isinstance(v, (dict, list)) and isinstance(cur, str) and cur == json.dumps(
                v, sort_keys=True, separators=(",", ":"), default=str):
            continue
        return False
    return True


def _norm(v: Any) -> str:
    if isinstance(v, datetime):
        return v.replace(tzinfo=None).isoformat(timespec="seconds")
    return str(v)
