"""A pack's graph data files, read as :class:`~hopweave.graph.base.Node` / ``Edge`` items.

Two formats (docs/packs.md, "Graph data"), optionally gzipped (``.gz``):

* **JSONL**: one record a line, ``{"node": ID, "label": L, "properties": {...}}`` or
  ``{"edge": TYPE, "from": ID, "to": ID, "properties": {...}}``; blank lines and ``#`` lines
  are skipped.
* **CSV with neo4j-admin headers**: a node file has an ``:ID`` column (``id:ID`` and
  ``:ID(space)`` too), property columns ``name``, ``balance:float``, ``aliases:string[]``
  (items separated by ``;``) and an optional ``:LABEL`` column; its label is otherwise the file
  name (``nodes/Member.csv``). An edge file has ``:START_ID``, ``:END_ID``, property columns
  and an optional ``:TYPE`` column; its type is otherwise the file name (``edges/BILLED.csv``).
  Empty cells are absent properties; ``:IGNORE`` columns are skipped.

Reading streams (generators); memory grows only with the ids seen (id -> label, to check edge
endpoints) and with edges whose endpoints are not known yet (held back and checked at the end of
the tenant's files). Every record is checked against the merged schema: label, property names
and types, relationship type and endpoint labels, shared vs tenant labels, duplicate ids, edges
across tenants. Problems are collected as :class:`~hopweave.pack.problems.Problem` records
(file, line, what, fix); invalid records are never yielded.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from hopweave.errors import PackError
from hopweave.graph.base import Edge, Node
from hopweave.graph.write_rules import _HINT, CONVERTERS, _Missing  # the store's own value rules
from hopweave.models.schema import GraphSchema, PropertySpec
from hopweave.pack.files import PackFileError, PackFiles
from hopweave.pack.problems import Problem

Item = Node | Edge
SHARED = "_shared"
#: Stop collecting after this many problems (one more problem says how many were left out).
MAX_PROBLEMS = 500

#: neo4j-admin column types -> schema property types.
NEO4J_TYPES: dict[str, str] = {
    "string": "str", "int": "int", "long": "int", "short": "int", "byte": "int", "float": "float",
    "double": "float", "boolean": "bool", "date": "date", "datetime": "datetime",
    "localdatetime": "datetime", "string[]": "list[str]", "json": "json",
}
_JSONL_NODE_KEYS = {"node", "label", "properties"}
_JSONL_EDGE_KEYS = {"edge", "from", "to", "properties"}
_RESERVED = {"id": "the node id is the record's `node` (CSV: the :ID column)",
             "tenant_id": "the tenant comes from the manifest's graph entry"}


class GraphContext:
    """What one load has seen so far: node id -> (label, tenant), shared by every graph entry of
    the load so edges can end at nodes of earlier files (the shared vocabulary, say).
    ``lookup(node_id)`` may supply ``(label, tenant)`` of nodes already in the store."""

    def __init__(self, lookup: Callable[[str], tuple[str, str] | None] | None = None) -> None:
        self.ids: dict[str, tuple[str, str]] = {}
        self.lookup = lookup

    def get(self, node_id: str) -> tuple[str, str] | None:
        hit = self.ids.get(node_id)
        if hit is None and self.lookup is not None:
            hit = self.lookup(node_id)
        return hit


class _Reader:
    """One tenant's files: yields valid items, appends problems."""

    def __init__(self, schema: GraphSchema, tenant: str, shared: bool, context: GraphContext,
                 problems: list[Problem], root: Path | None) -> None:
        self.schema, self.tenant, self.shared = schema, tenant, shared
        self.ctx, self.problems, self.root = context, problems, root
        self.dropped = 0
        self.pending: list[tuple[str, int, Edge]] = []
        self.file = ""

    # ---- problems ----------------------------------------------------------------------------
    def problem(self, line: int | None, message: str, fix: str, record: str | None = None) -> None:
        if len(self.problems) >= MAX_PROBLEMS:
            self.dropped += 1
            return
        self.problems.append(Problem(file=self.file, line=line, record=record, message=message, fix=fix))

    def rel_name(self, path: Path) -> str:
        if self.root is not None:
            try:
                return str(path.resolve().relative_to(Path(self.root).resolve()))
            except ValueError:
                pass
        return str(path)

    # ---- values ------------------------------------------------------------------------------
    def props(self, line: int, where: str, specs: dict[str, PropertySpec], raw: Any) -> dict[str, Any] | None:
        """Checked properties (values as given), or None after recording the problems."""
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.problem(line, f"{where}: `properties` must be an object, got {type(raw).__name__}",
                         'write "properties": {"name": "value", ...}')
            return None
        ok = True
        for k, v in raw.items():
            if k in _RESERVED:
                self.problem(line, f"{where}: property {k!r} is reserved", f"remove it: {_RESERVED[k]}")
                ok = False
            elif k not in specs:
                self.problem(line, f"{where}: property {k!r} is not declared", f"declare it in schema.yaml or "
                             f"remove it; declared: {sorted(n for n in specs if n not in _RESERVED)}")
                ok = False
            elif v is not None and CONVERTERS[specs[k].type](v) is _Missing:
                t = specs[k].type
                self.problem(line, f"{where}: property {k!r} must be {_HINT.get(t, t)}, got {v!r}",
                             f"write a {t} value or change the property's type in schema.yaml")
                ok = False
        return {k: v for k, v in raw.items() if v is not None} if ok else None

    # ---- nodes and edges ---------------------------------------------------------------------
    def node(self, line: int, nid: Any, label: Any, raw: Any) -> Node | None:
        if not isinstance(nid, str) or not nid or len(nid) > 256 or not nid.isprintable():
            self.problem(line, f"node id {nid!r} is not a non-empty printable string (at most 256 chars)",
                         "give every node a string id such as MEM_1001")
            return None
        spec = self.schema.label_map.get(label) if isinstance(label, str) else None
        if spec is None:
            self.problem(line, f"node {nid}: label {label!r} is not in the schema", "declare the label in "
                         f"schema.yaml or fix its spelling; labels: {sorted(self.schema.label_map)}", nid)
            return None
        if spec.shared != self.shared:
            fix = (f"move it to the `{SHARED}` graph entry (label {label} is `shared: true`)" if spec.shared else
                   f"move it to a tenant's graph entry, or mark {label} `shared: true` in schema.yaml")
            self.problem(line, f"node {nid}: a {label} node in the graph of "
                               f"{'the shared vocabulary' if self.shared else 'tenant ' + repr(self.tenant)}",
                         fix, nid)
            return None
        props = self.props(line, f"node {nid} ({label})", spec.props, raw)
        if props is None:
            return None
        missing = [n for n, p in spec.props.items() if p.required and n not in _RESERVED and n not in props]
        if missing:
            self.problem(line, f"node {nid} ({label}) lacks required properties {missing}", "add them", nid)
            return None
        if self.ctx.get(nid) is not None:
            self.problem(line, f"node id {nid!r} is defined twice in this load",
                         "node ids are unique in a store: rename one of them", nid)
            return None
        self.ctx.ids[nid] = (spec.name, self.tenant)
        return Node(nid, spec.name, props)

    def edge(self, line: int, rtype: Any, src: Any, dst: Any, raw: Any) -> Edge | None:
        rel = self.schema.rel_map.get(rtype) if isinstance(rtype, str) else None
        where = f"edge ({src})-[:{rtype}]->({dst})"
        if rel is None:
            self.problem(line, f"{where}: relationship type {rtype!r} is not in the schema",
                         f"declare it in schema.yaml or fix its spelling; types: {sorted(self.schema.rel_map)}")
            return None
        if not isinstance(src, str) or not src or not isinstance(dst, str) or not dst:
            self.problem(line, f"{where}: `from` and `to` must be node ids (strings)", "give both endpoint ids")
            return None
        props = self.props(line, where, dict(rel.props), raw)
        if props is None:
            return None
        e = Edge(src, dst, rel.name, props)
        if self.ctx.get(src) is None or self.ctx.get(dst) is None:
            self.pending.append((self.file, line, e))  # checked (and yielded) at the end of the tenant
            return None
        return e if self.endpoints_ok(line, e) else None

    def endpoints_ok(self, line: int, e: Edge) -> bool:
        rel = self.schema.rel_map[e.type]
        where = f"edge ({e.src})-[:{e.type}]->({e.dst})"
        ok = True
        for end, nid, allowed in (("from", e.src, rel.from_labels), ("to", e.dst, rel.to_labels)):
            hit = self.ctx.get(nid)
            if hit is None:
                self.problem(line, f"{where}: no node {nid!r} in this load", "define the node (in this tenant's "
                             f"files or the {SHARED} vocabulary) or fix the id")
                ok = False
                continue
            label, owner = hit
            if label not in allowed:
                self.problem(line, f"{where}: {e.type} goes {end} {sorted(allowed)}, not {label}",
                             "fix the endpoint or the relationship's labels in schema.yaml")
                ok = False
            elif owner not in (self.tenant, SHARED):
                self.problem(line, f"{where}: node {nid!r} belongs to tenant {owner!r}",
                             "an edge stays inside one tenant (or ends at the shared vocabulary)")
                ok = False
        return ok

    def flush(self) -> Iterator[Edge]:
        """The held-back edges whose endpoints exist now, after checking them."""
        pending, self.pending = self.pending, []
        for file, line, e in pending:
            self.file = file
            if self.endpoints_ok(line, e):
                yield e


# ---- file formats ----------------------------------------------------------------------------
def _base_name(path: Path) -> str:
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return name.rsplit(".", 1)[0]


def _kind(path: Path) -> str:
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return name.rsplit(".", 1)[-1].lower()


def _jsonl(r: _Reader, fh: Iterable[str]) -> Iterator[Item]:
    for no, line in enumerate(fh, start=1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        try:
            rec = json.loads(s)
        except json.JSONDecodeError as exc:
            r.problem(no, f"not valid JSON ({exc.msg})", "one JSON object per line; `#` starts a comment")
            continue
        item = _jsonl_record(r, no, rec)
        if item is not None:
            yield item


def _jsonl_record(r: _Reader, no: int, rec: Any) -> Item | None:
    if isinstance(rec, dict) and "node" in rec:
        extra = set(rec) - _JSONL_NODE_KEYS
        if extra:
            r.problem(no, f"node record has unknown keys {sorted(extra)}", "keys are node, label, properties")
            return None
        return r.node(no, rec.get("node"), rec.get("label"), rec.get("properties"))
    if isinstance(rec, dict) and "edge" in rec:
        extra = set(rec) - _JSONL_EDGE_KEYS
        if extra:
            r.problem(no, f"edge record has unknown keys {sorted(extra)}", "keys are edge, from, to, properties")
            return None
        return r.edge(no, rec.get("edge"), rec.get("from"), rec.get("to"), rec.get("properties"))
    r.problem(no, "a record is neither a node nor an edge",
              'write {"node": ID, "label": L, "properties": {...}} or {"edge": TYPE, "from": ID, "to": ID}')
    return None


def _csv_cell(value: str, ptype: str) -> Any:
    """A CSV cell as the schema type's value (raises ValueError when it is not one)."""
    if ptype == "int":
        return int(value)
    if ptype == "float":
        return float(value)
    if ptype == "bool":
        low = value.strip().lower()
        if low not in ("true", "false"):
            raise ValueError(value)
        return low == "true"
    if ptype == "list[str]":
        return list(value.split(";"))
    return value


def _csv_header(r: _Reader, header: list[str], path: Path) -> tuple[str, dict[str, Any]] | None:
    """(kind "node"|"edge", column plan) of a neo4j-admin header, or None after a problem."""
    cols: dict[str, Any] = {"props": []}
    for i, raw in enumerate(header):
        name, _, typ = raw.strip().partition(":")
        typ_l = typ.lower()
        if typ_l.startswith("id"):
            cols["id"] = i
        elif typ_l in ("start_id", "end_id", "label", "type", "ignore") or typ_l.startswith(("start_id(", "end_id(")):
            cols[typ_l.split("(")[0]] = i
        elif not name:
            r.problem(1, f"column {raw!r}: unknown neo4j-admin field", "use :ID, :START_ID, :END_ID, :LABEL, :TYPE "
                      "or name:type")
            return None
        else:
            if typ_l and typ_l not in NEO4J_TYPES:
                r.problem(1, f"column {raw!r}: unknown type {typ!r}", f"use one of {sorted(NEO4J_TYPES)}")
                return None
            cols["props"].append((i, name, NEO4J_TYPES.get(typ_l)))
    if "id" in cols:
        return "node", cols
    if "start_id" in cols and "end_id" in cols:
        return "edge", cols
    r.problem(1, "header has neither :ID (a node file) nor :START_ID and :END_ID (an edge file)",
              "use neo4j-admin import headers (docs/packs.md)")
    return None


def _csv(r: _Reader, fh: Iterable[str], path: Path) -> Iterator[Item]:
    rows = csv.reader(fh)
    header = next(rows, None)
    if header is None:
        return
    plan = _csv_header(r, header, path)
    if plan is None:
        return
    kind, cols = plan
    default = _base_name(path)
    for row in rows:
        no = rows.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != len(header):
            r.problem(no, f"{len(row)} cells for {len(header)} columns", "one cell per header column")
            continue
        item = _csv_row(r, no, kind, cols, row, default)
        if item is not None:
            yield item


def _csv_row(r: _Reader, no: int, kind: str, cols: dict[str, Any], row: list[str], default: str) -> Item | None:
    name_col = cols.get("label" if kind == "node" else "type")
    name = row[name_col] if name_col is not None else default
    if kind == "node":
        spec = r.schema.label_map.get(name)
        specs = spec.props if spec is not None else {}
    else:
        rel = r.schema.rel_map.get(name)
        specs = dict(rel.props) if rel is not None else {}
    props: dict[str, Any] = {}
    for i, pname, ptype in cols["props"]:
        cell = row[i]
        if cell == "":
            continue
        declared = specs.get(pname)
        want = declared.type if declared is not None else (ptype or "str")
        if ptype is not None and declared is not None and ptype != want and not (ptype == "str" and want in
                                                                                  ("date", "datetime", "json")):
            r.problem(no, f"column {pname}: typed {ptype} in the header, {want} in the schema",
                      f"write {pname}:{_neo4j_type(want)} in the header")
            return None
        try:
            props[pname] = _csv_cell(cell, want)
        except ValueError:
            r.problem(no, f"column {pname}: {cell!r} is not a {want}", f"write a {want} value")
            return None
    if kind == "node":
        return r.node(no, row[cols["id"]], name, props)
    return r.edge(no, name, row[cols["start_id"]], row[cols["end_id"]], props)


def _neo4j_type(t: str) -> str:
    return {"str": "string", "int": "long", "float": "double", "bool": "boolean", "list[str]": "string[]"}.get(t, t)


# ---- entry points ----------------------------------------------------------------------------
def iter_graph_files(files: Iterable[str | Path], schema: GraphSchema, problems: list[Problem], *,
                     tenant: str = "", shared: bool = False, context: GraphContext | None = None,
                     root: str | Path | None = None, pack_files: PackFiles | None = None) -> Iterator[Item]:
    """The valid items of one tenant's graph files, in file order (edges whose endpoints were not
    known when read come last). Files are read through ``pack_files`` (default: confined to
    ``root``, else to each file's own folder): a file outside the pack, over the size limit, not
    UTF-8 or a corrupt ``.gz`` is one problem and the rest of that file is skipped. Problems are
    appended to ``problems``; never raises for a record or a file."""
    r = _Reader(schema, SHARED if shared else (tenant or "<tenant>"), shared, context or GraphContext(),
                problems, Path(root) if root is not None else None)
    if pack_files is None and root is not None:
        pack_files = PackFiles(root)
    for f in files:
        path = Path(f)
        pf = pack_files or PackFiles(path.parent)
        r.file = pf.rel(path)
        kind = _kind(path)
        if kind not in ("jsonl", "ndjson", "csv"):
            r.problem(None, f"unknown graph file type {path.name!r}", "use .jsonl or .csv (optionally .gz)")
            continue
        try:
            with pf.open_text(path, "graph", "graph file") as fh:
                yield from (_csv(r, fh, path) if kind == "csv" else _jsonl(r, fh))
        except PackFileError as exc:
            r.problem(None, exc.problem, exc.fix)
        except csv.Error as exc:
            r.problem(None, f"not a readable CSV file ({exc})", "write one record a line, cells quoted as CSV; "
                      "a cell holds at most 128 KB")
    yield from r.flush()
    if r.dropped:
        problems.append(Problem(file=r.file, message=f"{r.dropped} more problems not listed",
                                fix="fix the ones above and validate again"))


def read_graph_files(files: Iterable[str | Path], schema: GraphSchema, *, tenant: str = "",
                     shared: bool = False, context: GraphContext | None = None,
                     root: str | Path | None = None, pack_files: PackFiles | None = None) -> Iterator[Item]:
    """The load path: like :func:`iter_graph_files`, then raises PackError listing every problem
    once the files are read (invalid records are never yielded, so a bulk load aborts whole)."""
    problems: list[Problem] = []
    yield from iter_graph_files(files, schema, problems, tenant=tenant, shared=shared, context=context, root=root,
                                pack_files=pack_files)
    if problems:
        raise PackError(f"{len(problems)} problem(s) in the graph files:\n" + "\n".join(f"  {p}" for p in problems))


def check_graph_files(files: Iterable[str | Path], schema: GraphSchema, *, tenant: str = "",
                      shared: bool = False, context: GraphContext | None = None,
                      root: str | Path | None = None, pack_files: PackFiles | None = None) -> list[Problem]:
    """The dry run: every problem of one tenant's graph files (``validate``)."""
    problems: list[Problem] = []
    for _ in iter_graph_files(files, schema, problems, tenant=tenant, shared=shared, context=context, root=root,
                              pack_files=pack_files):
        pass
    return problems
