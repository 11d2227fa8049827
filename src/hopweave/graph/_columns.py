"""Snapshot formats 3 and 4 of the networkx store: columns read without building a dict per node.

Opening a million-node store in format 2 (one JSON object) costs seconds of CPU to build a
dict per node and per edge before the first answer (docs/BENCHMARKS.md, "Graph snapshot formats"). Format 3
stores the same graph as columns, so opening reads a few arrays and checks them per column;
a node's property dict is decoded (and checked) the first time it is read.

The payload (after the header line, see ``_persist``) is a sequence of sections, each at an
8-byte aligned offset the header lists as ``sections: {name: [offset, nbytes]}``:

=============  ==========  =====================================================================
section        type        content
=============  ==========  =====================================================================
``meta``       JSON        {"labels": [...], "rels": [...], "tenants": [...], "exact": [node
                           indexes whose JSON holds integers beyond 64 bits], "eprops_exact": bool}
``ids``        JSON        the node ids, in the store's node order (n strings)
``label``      ``<u2``     label code per node (into ``labels``)
``tenant``     ``<u4``     tenant code per node (into ``tenants``): the node's ``tenant_id``
``props_off``  ``<i8``     n + 1 offsets into ``props``
``props``      bytes       per node, its attribute object as JSON (``label`` included, key order kept)
``out_ptr``    ``<i8``     n + 1 offsets into the edge arrays (CSR: a node's outgoing edges)
``out_dst``    ``<i4``     target node per edge, grouped by target within a row (insertion order)
``out_rel``    ``<u2``     relationship type code per edge (into ``rels``)
``out_eprop``  ``<i4``     index into ``eprops`` per edge, -1 for an edge without properties
``eprops``     JSON        the list of the non-empty edge property objects
``by_id``      ``<i4``     format 4 only: the node indexes in ascending order of their ids
=============  ==========  =====================================================================

Format 4 adds ``by_id``: a node is found by its id with a binary search in that order, and
checking the order at open (ascending, so no id twice) takes less than half the time a dict of a
million ids takes to build (docs/BENCHMARKS.md, "Graph snapshot formats"). Format 3 still opens (the dict is
built), and is rewritten as format 4 by the next compaction.

The dtypes are fixed here, never read from the file, and arrays are views of the payload
(``numpy.frombuffer``): nothing in the file is executed or unpickled. At open every array is
checked for length and bounds and the graph against the schema per column: labels, relationship
types and (source label, type, target label) triples for all edges at once, tenant ids per
distinct value and against the label's sharing. A node's own properties are checked when it is
decoded (as format 2 checks them at open); a file that passed the sha256 but fails then (only a
forged one can) raises StoreCorruptError naming the node.
"""

from __future__ import annotations

import hashlib
import json
import operator
import re
import threading
from bisect import bisect_left
from collections.abc import Mapping
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from hopweave.errors import StoreCorruptError, StoreError
from hopweave.models.common import _TENANT_RE
from hopweave.models.schema import GLOBAL_TENANT, GraphSchema

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only without orjson
    _orjson = None  # type: ignore[assignment]

_LABEL = "label"
#: What to do about a corrupt store file (the end of every StoreCorruptError of the store).
RELOAD = "restore a backup of the store directory or rebuild it with `hopweave load`"
#: The Python type a stored property value has for each schema type (see graph.write_rules).
STORED_TYPE: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool, "date": str,
                                "datetime": str, "list[str]": list, "json": str}
#: name -> numpy dtype of each array section (None: a JSON or bytes section), in payload order.
SECTIONS: dict[str, str | None] = {
    "meta": None, "ids": None, "label": "<u2", "tenant": "<u4", "props_off": "<i8", "props": None,
    "out_ptr": "<i8", "out_dst": "<i4", "out_rel": "<u2", "out_eprop": "<i4", "eprops": None,
    "by_id": "<i4",
}
#: The sections only format 4 has.
_FORMAT4_ONLY = frozenset({"by_id"})
_ALIGN = 8
_EMPTY: dict[str, Any] = {}


def _loads(raw: Any, exact: bool) -> Any:
    if exact or _orjson is None:
        return json.loads(bytes(raw))
    try:
        return _orjson.loads(raw)
    except _orjson.JSONDecodeError:  # NaN or a lone surrogate: what the json module accepts
        return json.loads(bytes(raw))


def dumps_json(obj: Any) -> tuple[bytes, bool]:
    """(JSON bytes, whether the json module wrote them): orjson when it can; it does not write
    integers beyond 64 bits, the json module does (its output is then read by the json module)."""
    if _orjson is not None:
        try:
            return _orjson.dumps(obj), False
        except TypeError:
            pass
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode(), True


# ---- writing ------------------------------------------------------------------------------------
#: Where a node object starts in orjson's output of a list of node dicts whose first key is
#: "label": a ``{`` directly before an unescaped quote cannot lie inside a JSON string (a quote
#: inside a string is written ``\"``), and node properties hold no nested objects.
_NODE_START = re.compile(rb'\{"label":')


def _node_blobs(objs: list[dict[str, Any]]) -> tuple[bytes, np.ndarray, list[int]]:
    """(blob, start and end offset of each object's JSON in the blob, indexes written by the
    json module). One orjson call for all the objects when it can (a call per object costs
    ~10x more: seconds at a million nodes); else one call per object."""
    if _orjson is not None and objs:
        try:
            blob = _orjson.dumps(objs)
        except TypeError:  # integers beyond 64 bits somewhere: per object below
            blob = b""
        if blob:
            starts = np.fromiter((m.start() for m in _NODE_START.finditer(blob)), dtype=np.int64)
            if len(starts) == len(objs) and (not len(starts) or starts[0] == 1):
                ends = np.empty(len(objs), dtype=np.int64)
                ends[:-1] = starts[1:] - 1  # the comma between two objects
                ends[-1] = len(blob) - 1  # the closing bracket
                return blob, np.stack([starts, ends]), []
    raws, exact = [], []
    for i, o in enumerate(objs):
        raw, slow = dumps_json(o)
        raws.append(raw)
        if slow:
            exact.append(i)
    lens = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    ends = np.cumsum(lens)
    return b"".join(raws), np.stack([ends - lens, ends]), exact


def _edges_of(succ: dict[str, dict[str, dict[str, dict[str, Any]]]], index: Callable[[str], int],
              rcode: dict[str, int], eprops: list[dict[str, Any]]) -> tuple[np.ndarray, ...]:
    """(source, target, type code, property index) arrays of the edges in ``succ``, in its order
    (new types get codes in ``rcode``, non-empty properties are appended to ``eprops``)."""
    src: list[int] = []
    dst: list[int] = []
    rel: list[int] = []
    ep: list[int] = []
    for u, nbrs in succ.items():
        if not nbrs:
            continue
        ui = index(u)
        for v, kd in nbrs.items():
            vi = index(v)
            for r, props in kd.items():
                src.append(ui)
                dst.append(vi)
                rel.append(rcode.setdefault(r, len(rcode)))
                if props:
                    ep.append(len(eprops))
                    eprops.append(props)
                else:
                    ep.append(-1)
    return (np.asarray(src, dtype=np.int64), np.asarray(dst, dtype="<i4"), np.asarray(rel, dtype="<u2"),
            np.asarray(ep, dtype="<i4"))


def encode(node: dict[str, dict[str, Any]], succ: dict[str, dict[str, dict[str, dict[str, Any]]]],
           base: "Columns | None" = None, edited: dict[int, dict[str, Any]] | None = None,
           by_id: bool = True) -> tuple[list[Any], dict[str, list[int]], str]:
    """The format-4 payload (format 3 without ``by_id``) as a list of byte strings to write in
    order, the ``sections`` header entry and the payload's sha256.

    Without ``base``: of the eager dicts ``node``/``succ``. With ``base``: of a columnar state
    (``State``): the snapshot ``base`` plus ``node`` (the decoded and the newly written nodes),
    ``succ`` (edges written since) and ``edited`` (updated snapshot edge properties by
    position); nodes never decoded keep their bytes. Raises StoreError when the graph exceeds
    the format's limits (2**31 nodes, 65,536 labels or relationship types)."""
    node = dict(node)  # readers may decode nodes meanwhile (they add unchanged ones)
    n0 = base.n if base is not None else 0
    if base is not None:
        where: Mapping[str, int] = base.pos
        if not isinstance(where, dict) and len(node) >= n0 // 8:  # many decoded: a dict beats a search each
            where = dict(zip(base.ids, range(n0)))
        new = [nid for nid in node if nid not in where]
        touched = sorted(where[nid] for nid in node if nid in where)
        ids = base.ids + new
        lcode = {lab: i for i, lab in enumerate(base.labels)}
        tcode = {t: i for i, t in enumerate(base.tenants)}
        rcode = {r: i for i, r in enumerate(base.rels)}
    else:
        new, touched, ids = list(node), [], list(node)
        lcode, tcode, rcode = {}, {}, {}
        where = {}
    if len(ids) >= 2 ** 31:
        raise StoreError("snapshot formats 3 and 4 hold at most 2**31 - 1 nodes")  # pragma: no cover
    pos = {nid: n0 + k for k, nid in enumerate(new)}
    objs = [node[ids[i]] for i in touched] + [node[nid] for nid in new]
    for attrs in objs:
        if type(attrs.get("tenant_id")) is not str:  # pragma: no cover - every stored node has one
            raise StoreError(f"node with attributes {attrs!r} has no tenant_id")
    codes = [(lcode.setdefault(a[_LABEL], len(lcode)), tcode.setdefault(a["tenant_id"], len(tcode))) for a in objs]
    blob, spans, slow = _node_blobs(objs)
    label = np.empty(len(ids), dtype="<u2")
    tenant = np.empty(len(ids), dtype="<u4")
    lens = np.empty(len(ids), dtype=np.int64)
    k_new = len(touched)
    if base is not None:
        label[:n0], tenant[:n0] = base.label, base.tenant
        lens[:n0] = np.diff(base.props_off)
    at_obj = np.asarray(touched + list(range(n0, len(ids))), dtype=np.int64)
    if len(at_obj):
        label[at_obj] = [c[0] for c in codes]
        tenant[at_obj] = [c[1] for c in codes]
        lens[at_obj] = spans[1] - spans[0]
    exact = sorted(({int(i) for i in base.exact} - set(touched) if base is not None else set())
                   | {int(at_obj[k]) for k in slow})
    # props: the snapshot's bytes between the re-encoded nodes, then the new nodes
    view = memoryview(blob)
    pieces: list[Any] = []
    prev = 0
    for k, i in enumerate(touched):
        assert base is not None
        pieces.append(base.props[int(base.props_off[prev]):int(base.props_off[i])])
        pieces.append(view[int(spans[0][k]):int(spans[1][k])])
        prev = i + 1
    if base is not None:
        pieces.append(base.props[int(base.props_off[prev]):int(base.props_off[n0])])
    pieces.extend(view[int(a):int(b)] for a, b in zip(spans[0][k_new:], spans[1][k_new:]))
    props_off = np.zeros(len(ids) + 1, dtype="<i8")
    np.cumsum(lens, out=props_off[1:])
    # edges: the snapshot's, then those written since (stable by source: each row keeps its order)
    eprops: list[dict[str, Any]] = list(base.eprops) if base is not None else []

    def index(nid: str) -> int:
        i = where.get(nid)
        return pos[nid] if i is None else i

    src, dst, rel, ep = _edges_of(succ, index, rcode, eprops)
    if base is not None:
        base_ep = base.out_eprop.copy()
        for p, props in sorted((edited or {}).items()):
            base_ep[p] = len(eprops) if props else -1
            if props:
                eprops.append(props)
        src = np.concatenate([np.repeat(np.arange(n0, dtype=np.int64), np.diff(base.out_ptr)), src])
        dst = np.concatenate([base.out_dst, dst])
        rel = np.concatenate([base.out_rel, rel])
        ep = np.concatenate([base_ep, ep])
    order = np.argsort(src, kind="stable")
    src, dst, rel, ep = src[order], dst[order], rel[order], ep[order]
    out_ptr = np.zeros(len(ids) + 1, dtype="<i8")
    np.cumsum(np.bincount(src, minlength=len(ids)), out=out_ptr[1:])
    if len(lcode) > 65536 or len(rcode) > 65536:
        raise StoreError("snapshot formats 3 and 4 hold at most 65,536 labels and relationship types")  # pragma: no cover
    ep_raw, ep_exact = dumps_json(eprops)
    meta = {"labels": list(lcode), "rels": list(rcode), "tenants": list(tcode), "exact": exact,
            "eprops_exact": ep_exact}
    parts: dict[str, Any] = {
        "meta": dumps_json(meta)[0],
        "ids": dumps_json(ids)[0],
        "label": label.tobytes(),
        "tenant": tenant.tobytes(),
        "props_off": props_off.tobytes(),
        "props": b"".join(pieces),
        "out_ptr": out_ptr.tobytes(),
        "out_dst": dst.astype("<i4").tobytes(),
        "out_rel": rel.astype("<u2").tobytes(),
        "out_eprop": ep.astype("<i4").tobytes(),
        "eprops": ep_raw,
    }
    if by_id:
        parts["by_id"] = np.asarray(sorted(range(len(ids)), key=ids.__getitem__), dtype="<i4").tobytes()
    del pieces, view, blob
    chunks: list[Any] = []
    sections: dict[str, list[int]] = {}
    digest = hashlib.sha256()
    at = 0
    for name in SECTIONS:
        if name not in parts:
            continue
        pad = -at % _ALIGN
        if pad:
            chunks.append(b"\0" * pad)
            digest.update(b"\0" * pad)
            at += pad
        raw = parts.pop(name)
        sections[name] = [at, len(raw)]
        chunks.append(raw)
        digest.update(raw)
        at += len(raw)
    return chunks, sections, digest.hexdigest()


# ---- reading ------------------------------------------------------------------------------------
class IdOrder(Mapping[str, int]):
    """Node id -> index, by binary search in the ids in ascending order (section ``by_id``).

    Checked at open: the order holds every index once, its ids ascend strictly (so no id occurs
    twice). A lookup costs about 1-4 us against a dict's 0.05, at tens per retrieval."""

    __slots__ = ("_ids", "_at")

    def __init__(self, ids: list[str], by_id: np.ndarray, fail: Callable[[str], StoreCorruptError]) -> None:
        n = len(ids)
        if n and (int(by_id.min()) < 0 or int(by_id.max()) >= n):
            raise fail("section 'by_id' holds a node index out of range")
        at = by_id.tolist()
        ordered = list(map(ids.__getitem__, at))
        if not all(map(operator.lt, ordered, islice(ordered, 1, None))):
            raise fail("section 'by_id' is not the node ids in ascending order, or a node id occurs twice")
        self._ids: list[str] = ordered
        self._at = by_id

    def get(self, key: object, default: Any = None) -> Any:
        if type(key) is str:
            k = bisect_left(self._ids, key)
            if k < len(self._ids) and self._ids[k] == key:
                return int(self._at[k])
        return default

    def __getitem__(self, key: str) -> int:
        i: int | None = self.get(key)
        if i is None:
            raise KeyError(key)
        return i

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


class Columns:
    """A checked format-3 or format-4 payload: the node ids and arrays, decoding a node on demand."""

    def __init__(self, path: Path, header: dict[str, Any], payload: bytes, schema: GraphSchema) -> None:
        self.path = path
        self.header = header

        def fail(what: str) -> StoreCorruptError:
            return StoreCorruptError(f"{path}: {what}; {RELOAD}")

        self._fail = fail
        n, m, secs = header.get("nodes"), header.get("edges"), header.get("sections")
        names = set(SECTIONS) - (_FORMAT4_ONLY if header.get("format") == 3 else set())
        if (type(n) is not int or type(m) is not int or n < 0 or m < 0 or not isinstance(secs, dict)
                or set(secs) != names):
            raise fail("snapshot header lacks nodes/edges/sections")
        self.n, self.m = n, m
        view = memoryview(payload)

        def part(name: str) -> memoryview:
            at = secs[name]
            if (not isinstance(at, list) or len(at) != 2 or any(type(x) is not int for x in at)
                    or at[0] < 0 or at[1] < 0 or at[0] + at[1] > len(payload)):
                raise fail(f"section {name!r} lies outside the payload")
            return view[at[0]:at[0] + at[1]]

        def arr(name: str, count: int) -> np.ndarray:
            raw = part(name)
            dtype = np.dtype(SECTIONS[name])
            if len(raw) != count * dtype.itemsize:
                raise fail(f"array {name!r} holds {len(raw)} bytes, {count} values of {dtype.str} expected")
            return np.frombuffer(raw, dtype=dtype, count=count)

        def js(name: str, exact: bool = False) -> Any:
            try:
                return _loads(part(name), exact)
            except ValueError as exc:
                raise fail(f"section {name!r} is not valid JSON ({exc})") from exc

        meta = js("meta")
        if not isinstance(meta, dict) or not all(
                isinstance(meta.get(k), list) and all(type(x) is str for x in meta[k])
                for k in ("labels", "rels", "tenants")):
            raise fail("section 'meta' lacks the labels/rels/tenants lists")
        exact = meta.get("exact")
        if not isinstance(exact, list) or any(type(x) is not int or not 0 <= x < n for x in exact):
            raise fail("section 'meta' has a malformed 'exact' list")
        self.exact = frozenset(exact)
        self.labels: list[str] = meta["labels"]
        self.rels: list[str] = meta["rels"]
        self.tenants: list[str] = meta["tenants"]
        by_name = {lab.name: lab for lab in schema.labels}
        rel_names = {r.name for r in schema.relationships}
        for lab in self.labels:
            if lab not in by_name:
                raise fail(f"label {lab!r} is not in the schema")
        for rel in self.rels:
            if rel not in rel_names:
                raise fail(f"relationship type {rel!r} is not in the schema")
        for t in self.tenants:
            if t != GLOBAL_TENANT and not _TENANT_RE.match(t):
                raise fail(f"tenant_id {t!r} is malformed")
        ids = js("ids")
        if not isinstance(ids, list) or len(ids) != n or (n and set(map(type, ids)) != {str}):
            raise fail(f"section 'ids' is not a list of {n} node ids")
        self.ids: list[str] = ids
        self.pos: Mapping[str, int]
        if "by_id" in secs:
            self.pos = IdOrder(ids, arr("by_id", n), fail)
        else:
            self.pos = dict(zip(ids, range(n)))  # (a third faster than a comprehension)
            if len(self.pos) != n:
                raise fail("a node id occurs twice")
        self.label = arr("label", n)
        self.tenant = arr("tenant", n)
        if n and (int(self.label.max()) >= len(self.labels) or int(self.tenant.max()) >= len(self.tenants)):
            raise fail("a node's label or tenant code is out of range")
        # a shared label's nodes belong to _global, every other node to a tenant
        shared = np.array([by_name[lab].shared for lab in self.labels] or [False], dtype=bool)
        global_t = np.array([t == GLOBAL_TENANT for t in self.tenants] or [False], dtype=bool)
        wrong = np.flatnonzero(shared[self.label] != global_t[self.tenant])
        if len(wrong):
            i = int(wrong[0])
            raise fail(f"node {ids[i]!r} ({self.labels[self.label[i]]}) has tenant_id "
                       f"{self.tenants[self.tenant[i]]!r}, not valid for its label")
        self.props = part("props")
        self.props_off = self._offsets("props_off", arr("props_off", n + 1), len(self.props))
        self.out_ptr = self._offsets("out_ptr", arr("out_ptr", n + 1), m)
        self.out_dst = arr("out_dst", m)
        self.out_rel = arr("out_rel", m)
        self.out_eprop = arr("out_eprop", m)
        eprops = js("eprops", meta.get("eprops_exact") is True)
        if not isinstance(eprops, list) or any(type(p) is not dict or not p for p in eprops):
            raise fail("section 'eprops' is not a list of property objects")
        self.eprops: list[dict[str, Any]] = eprops
        if m and (int(self.out_dst.min()) < 0 or int(self.out_dst.max()) >= n
                  or int(self.out_rel.max()) >= len(self.rels)
                  or int(self.out_eprop.min()) < -1 or int(self.out_eprop.max()) >= len(eprops)):
            raise fail("an edge's target, type or property index is out of range")
        self._check_edges(schema)
        self.stored = {lab.name: {**{k: STORED_TYPE[p.type] for k, p in lab.props.items() if k != "id"},
                                  _LABEL: str, "tenant_id": str} for lab in schema.labels}
        self._in: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._in_lock = threading.Lock()
        self._rel_code = {r: i for i, r in enumerate(self.rels)}

    def _offsets(self, name: str, off: np.ndarray, end: int) -> np.ndarray:
        if int(off[0]) != 0 or int(off[-1]) != end or (len(off) > 1 and int(np.diff(off).min()) < 0):
            raise self._fail(f"array {name!r} is not a list of ascending offsets from 0 to {end}")
        return off

    def _check_edges(self, schema: GraphSchema) -> None:
        """Every edge's (source label, type, target label) is one the schema allows: one table
        lookup for all edges at once."""
        if not self.m:
            return
        code = {lab: i for i, lab in enumerate(self.labels)}
        rcode = {r: i for i, r in enumerate(self.rels)}
        ok = np.zeros((len(self.labels), len(self.rels), len(self.labels)), dtype=bool)
        for r in schema.relationships:
            if r.name not in rcode:
                continue
            for f in r.from_labels:
                for t in r.to_labels:
                    if f in code and t in code:
                        ok[code[f], rcode[r.name], code[t]] = True
        src_label = np.repeat(self.label, np.diff(self.out_ptr))
        bad = np.flatnonzero(~ok[src_label, self.out_rel, self.label[self.out_dst]])
        if len(bad):
            p = int(bad[0])
            src = int(np.searchsorted(self.out_ptr, p, side="right")) - 1
            raise self._fail(f"relationship {self.rels[self.out_rel[p]]!r} cannot go from "
                             f"{self.labels[self.label[src]]} to {self.labels[self.label[self.out_dst[p]]]} "
                             f"(edge {self.ids[src]!r} -> {self.ids[self.out_dst[p]]!r})")

    # ---- nodes -----------------------------------------------------------------------------
    def attrs(self, i: int) -> dict[str, Any]:
        """Node ``i``'s attribute dict (a new dict), decoded and checked like format 2 at open."""
        a, b = int(self.props_off[i]), int(self.props_off[i + 1])
        nid = self.ids[i]
        try:
            attrs = _loads(self.props[a:b], i in self.exact)
        except ValueError as exc:
            raise self._fail(f"node {nid!r}: properties are not valid JSON ({exc})") from exc
        label = self.labels[self.label[i]]
        if type(attrs) is not dict or attrs.get(_LABEL) != label:
            raise self._fail(f"node {nid!r}: properties are not an object with label {label!r}")
        types = self.stored[label]
        for k, v in attrs.items():
            t = type(v)
            if t is not types.get(k) or (t is list and any(type(x) is not str for x in v)):
                raise self._fail(f"node {nid!r} ({label}): property {k!r} is undeclared or not of its declared type")
        if attrs.get("tenant_id") != self.tenants[self.tenant[i]]:
            raise self._fail(f"node {nid!r} ({label}): tenant_id differs from the tenant column")
        return attrs

    def ids_with_label(self, label: str) -> set[str]:
        try:
            code = self.labels.index(label)
        except ValueError:
            return set()
        ids = self.ids
        return {ids[i] for i in np.flatnonzero(self.label == code).tolist()}

    def label_counts(self) -> dict[str, int]:
        counts = np.bincount(self.label, minlength=len(self.labels)).tolist() if self.n else []
        return {lab: c for lab, c in zip(self.labels, counts) if c}

    # ---- edges -----------------------------------------------------------------------------
    def eprop(self, p: int) -> dict[str, Any]:
        e = int(self.out_eprop[p])
        return _EMPTY if e < 0 else self.eprops[e]

    def find_edge(self, src: int, rel: str, dst: int) -> int:
        """The position of edge (src, rel, dst), -1 when the snapshot does not hold it."""
        code = self._rel_code.get(rel)
        if code is None:
            return -1
        a, b = int(self.out_ptr[src]), int(self.out_ptr[src + 1])
        hit = np.flatnonzero((self.out_dst[a:b] == dst) & (self.out_rel[a:b] == code))
        return int(hit[0]) + a if len(hit) else -1

    def out_edges(self, src: int, rel: str) -> Iterator[tuple[int, int]]:
        """(edge position, target node) of ``src``'s outgoing edges of type ``rel``."""
        code = self._rel_code.get(rel)
        if code is None:
            return iter(())
        a, b = int(self.out_ptr[src]), int(self.out_ptr[src + 1])
        hit = np.flatnonzero(self.out_rel[a:b] == code) + a
        return zip(hit.tolist(), self.out_dst[hit].tolist())

    def in_edges(self, dst: int, rel: str) -> Iterator[tuple[int, int]]:
        """(edge position, source node) of ``dst``'s incoming edges of type ``rel``, sources in
        node order (as format 2's predecessor dicts are built)."""
        code = self._rel_code.get(rel)
        if code is None:
            return iter(())
        ptr, src, at = self.incoming()
        a, b = int(ptr[dst]), int(ptr[dst + 1])
        sel = at[a:b]
        hit = np.flatnonzero(self.out_rel[sel] == code)
        return zip(sel[hit].tolist(), src[a:b][hit].tolist())

    def incoming(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The transposed CSR (in_ptr, source per edge, edge position), built on first use."""
        got = self._in
        if got is None:
            with self._in_lock:
                got = self._in
                if got is None:
                    order = np.argsort(self.out_dst, kind="stable")
                    src = np.repeat(np.arange(self.n, dtype=np.int32), np.diff(self.out_ptr))[order]
                    ptr = np.zeros(self.n + 1, dtype=np.int64)
                    np.cumsum(np.bincount(self.out_dst, minlength=self.n), out=ptr[1:])
                    got = self._in = (ptr, src, order)
        return got

    def thaw(self, cached: Callable[[str], dict[str, Any] | None], edited: dict[int, dict[str, Any]]
             ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, dict[str, dict[str, Any]]]]]:
        """The eager node and successor dicts of the whole snapshot (``cached`` gives a node's
        already decoded, possibly updated, dict; ``edited`` the updated property dicts by edge
        position; every other edge gets a new dict)."""
        node: dict[str, dict[str, Any]] = {}
        for i, nid in enumerate(self.ids):
            a = cached(nid)
            node[nid] = a if a is not None else self.attrs(i)
        succ: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        ptr, dst, rel, ep = self.out_ptr.tolist(), self.out_dst.tolist(), self.out_rel.tolist(), self.out_eprop.tolist()
        ids, rels, eprops = self.ids, self.rels, self.eprops
        for i, nid in enumerate(ids):
            row: dict[str, dict[str, dict[str, Any]]] = {}
            for p in range(ptr[i], ptr[i + 1]):
                d = ids[dst[p]]
                kd = row.get(d)
                if kd is None:
                    kd = row[d] = {}
                x = edited.get(p)
                if x is not None:
                    kd[rels[rel[p]]] = x
                else:
                    e = ep[p]
                    kd[rels[rel[p]]] = dict(eprops[e]) if e >= 0 else {}
            succ[nid] = row
        return node, succ

