"""The in-memory state of the networkx store: the graph plus label and property indexes.

Two forms. *Eager*: the networkx dicts (``node``, ``succ``, ``pred``) hold the whole graph, as
after a format-2 snapshot, a bulk load or :meth:`State.thaw`. *Columnar*: opened from a format-3
snapshot (``_columns.Columns``), the snapshot's nodes and edges stay in arrays; ``node`` caches
the dicts decoded so far plus nodes written since, ``succ``/``pred`` hold only edges written
since (an update of a snapshot edge's properties goes to ``edited``). Reads go through
:meth:`get`, :meth:`ids_of`, :meth:`neighbors`, which answer from both; :meth:`thaw` turns a
columnar state into the eager one (for the networkx :attr:`g` and for a new snapshot).
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter
from itertools import islice
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from hopweave.graph._columns import Columns
from hopweave.graph._persist import Snapshot
from hopweave.graph.walk import LABEL_KEY, ORDER_MIN_DEGREE, order_key

if TYPE_CHECKING:
    import networkx as nx


def _multidigraph() -> "nx.MultiDiGraph":
    """A new, empty networkx graph. networkx is imported on first use (about 0.25 s: its
    package imports every algorithm): a store opened from a format-3 snapshot answers
    without it until something asks for :attr:`State.g`."""
    import networkx as nx

    return nx.MultiDiGraph()


class State:
    """The in-memory graph plus its indexes."""

    def __init__(self, snap: Snapshot | Columns | None = None) -> None:
        self.cols: Columns | None = None
        self._g: nx.MultiDiGraph | None = None
        self.node: dict[str, dict[str, Any]] = {}
        self.succ: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        self.pred: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        #: label -> ids; in the columnar form only the labels asked for so far (see :meth:`ids_of`).
        self.by_label: dict[str, set[str]] = {}
        self.edge_count = 0
        if isinstance(snap, Columns):
            self.cols, self.edge_count = snap, snap.m
        elif snap is not None:
            self.node, self.succ, self.pred = snap.node, snap.succ, snap.pred
            self.by_label, self.edge_count = snap.by_label, snap.edge_count
        #: (label, property) -> value -> ids; built on first use, maintained by writes.
        self.prop_index: dict[tuple[str, str], dict[Any, set[str]]] = {}
        # columnar form only: nodes written since the snapshot (count, per label, and per label
        # not yet in by_label), updated snapshot edge properties by edge position
        self._added = 0
        self._added_by_label: Counter[str] = Counter()
        self._pending: dict[str, set[str]] = {}
        self.edited: dict[int, dict[str, Any]] = {}
        self._lazy = threading.Lock()
        #: (node, rel, direction, property) -> the node's neighbours ordered by that property of
        #: theirs: ([(key, id)] sorted ascending, [ids without it]); hubs only, built on first
        #: use (:meth:`ordered_neighbors`), kept current by writes
        self._order: dict[tuple[str, str, str, str], tuple[list[tuple[Any, str]], list[str]]] = {}
        self._order_ends: dict[tuple[str, str, str], list[str]] = {}
        self._order_lock = threading.Lock()

    @property
    def g(self) -> nx.MultiDiGraph:
        """The networkx graph of this state, a view of its dicts made on first use; a
        columnar state is thawed first (the caller holds the store's write lock)."""
        self.thaw()
        g = self._g
        if g is None:
            g = _multidigraph()
            g._node = self.node
            g._adj = g._succ = self.succ
            g._pred = self.pred
            self._g = g
        return g

    @property
    def node_count(self) -> int:
        return len(self.node) if self.cols is None else self.cols.n + self._added

    # ---- reads -------------------------------------------------------------------------------
    def get(self, node_id: str) -> dict[str, Any] | None:
        """The node's attribute dict (decoded on first use in the columnar form), None if absent."""
        attrs = self.node.get(node_id)
        if attrs is None and self.cols is not None:
            i = self.cols.pos.get(node_id)
            if i is not None:
                attrs = self.node.setdefault(node_id, self.cols.attrs(i))
        return attrs

    def has(self, node_id: str) -> bool:
        return node_id in self.node or (self.cols is not None and node_id in self.cols.pos)

    def ids_of(self, label: str) -> set[str]:
        """The ids of the nodes with ``label`` (treat as read-only)."""
        ids = self.by_label.get(label)
        if ids is None and self.cols is not None:
            with self._lazy:
                ids = self.by_label.get(label)
                if ids is None:
                    ids = self.cols.ids_with_label(label) | self._pending.pop(label, set())
                    if ids:
                        self.by_label[label] = ids
        return ids or set()

    def label_counts(self) -> dict[str, int]:
        if self.cols is None:
            return {k: len(v) for k, v in self.by_label.items() if v}
        counts = Counter(self.cols.label_counts())
        counts.update(self._added_by_label)
        return dict(counts)

    def all_nodes(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every node as (id, attribute dict), snapshot nodes first (decoded and checked as
        they are read; nothing is cached)."""
        cols = self.cols
        if cols is None:
            yield from self.node.items()
            return
        for i in range(cols.n):
            nid = cols.ids[i]
            yield nid, self.node.get(nid) or cols.attrs(i)
        for nid, attrs in self.node.items():
            if nid not in cols.pos:
                yield nid, attrs

    def all_edges(self) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
        """Every edge as (source id, type, target id, properties)."""
        cols = self.cols
        if cols is not None:
            ids, rels, ptr = cols.ids, cols.rels, cols.out_ptr
            for i in range(cols.n):
                for p in range(int(ptr[i]), int(ptr[i + 1])):
                    yield ids[i], rels[int(cols.out_rel[p])], ids[int(cols.out_dst[p])], self._eprop(p)
        for src, nbrs in self.succ.items():
            for dst, kd in nbrs.items():
                for rel, props in kd.items():
                    yield src, rel, dst, props

    # ---- GraphView for the walker ----------------------------------------------------------
    def node_attrs(self, node_id: str) -> dict[str, Any] | None:
        return self.get(node_id)

    def seed_candidates(self, label: str, key: str, values: tuple[Any, ...]) -> Iterable[str]:
        if key == "id":
            return [v for v in values if isinstance(v, str) and self.has(v)]
        idx = self.index(label, key)
        out: set[str] = set()
        for v in values:
            try:
                out |= idx.get(v, set())
            except TypeError:  # unhashable value
                continue
        return out

    def neighbors(
        self, node_id: str, rel_type: str, direction: str, edge_ok: Callable[[dict[str, Any]], bool] | None = None
    ) -> Iterator[str]:
        # Lazy: the walker reads a hub's adjacency in chunks and checks its deadline between them.
        # Most edges carry no properties: the test is made once for them.
        cols = self.cols
        i = cols.pos.get(node_id) if cols is not None else None
        ids = cols.ids if cols is not None else ()
        if edge_ok is None:  # every edge of the type
            if direction in ("out", "both"):
                if i is not None:
                    assert cols is not None
                    yield from (ids[d] for _p, d in cols.out_edges(i, rel_type))
                yield from (v for v, kd in (self.succ.get(node_id) or {}).items() if kd.get(rel_type) is not None)
            if direction in ("in", "both"):
                if i is not None:
                    assert cols is not None
                    yield from (ids[s] for _p, s in cols.in_edges(i, rel_type))
                yield from (u for u, kd in (self.pred.get(node_id) or {}).items() if kd.get(rel_type) is not None)
            return
        ok, bare = edge_ok, edge_ok({})
        eprop = self._eprop
        # (inline, no call per edge: a hub's adjacency is thousands of edges, most without properties)
        if direction in ("out", "both"):
            if i is not None:
                assert cols is not None
                yield from (ids[d] for p, d in cols.out_edges(i, rel_type) if (ok(e) if (e := eprop(p)) else bare))
            yield from (v for v, kd in (self.succ.get(node_id) or {}).items()
                        if (q := kd.get(rel_type)) is not None and (ok(q) if q else bare))
        if direction in ("in", "both"):
            if i is not None:
                assert cols is not None
                yield from (ids[s] for p, s in cols.in_edges(i, rel_type) if (ok(e) if (e := eprop(p)) else bare))
            yield from (u for u, kd in (self.pred.get(node_id) or {}).items()
                        if (q := kd.get(rel_type)) is not None and (ok(q) if q else bare))

    def _eprop(self, p: int) -> dict[str, Any]:
        x = self.edited.get(p)
        if x is not None:
            return x
        assert self.cols is not None
        return self.cols.eprop(p)

    def thaw(self) -> None:
        """Turn a columnar state into the eager form (every node decoded and checked, every
        edge a dict): what the networkx graph and a new snapshot need. The caller holds the
        store's write lock. Indexes, counts and nodes already handed out stay valid."""
        cols = self.cols
        if cols is None:
            return
        node, succ = cols.thaw(self.node.get, self.edited)
        for nid, attrs in self.node.items():  # written since the snapshot, in write order
            node.setdefault(nid, attrs)
        for nid in node:
            if nid not in succ:
                succ[nid] = {}
        for src, nbrs in self.succ.items():
            row = succ[src]
            for dst, kd in nbrs.items():
                cur = row.get(dst)
                if cur is None:
                    row[dst] = kd
                else:
                    cur.update(kd)
        pred: dict[str, dict[str, dict[str, dict[str, Any]]]] = {nid: {} for nid in node}
        for src, nbrs in succ.items():
            for dst, kd in nbrs.items():
                pred[dst][src] = kd
        by_label = {lab: self.ids_of(lab) for lab in cols.labels}
        for lab in self._added_by_label:
            by_label[lab] = self.ids_of(lab)
        self.node, self.succ, self.pred = node, succ, pred
        self.by_label = {k: v for k, v in by_label.items() if v}
        self._g = None
        self.cols = None
        self.edited = {}
        self._pending = {}

    # ---- indexes -------------------------------------------------------------------------
    def index(self, label: str, key: str) -> dict[Any, set[str]]:
        idx = self.prop_index.get((label, key))
        if idx is None:
            idx = {}
            for nid in self.ids_of(label):
                attrs = self.get(nid)
                assert attrs is not None
                _index_add(idx, attrs.get(key), nid)
            self.prop_index[(label, key)] = idx
        return idx

    # ---- mutations (validated before) ------------------------------------------------------
    def upsert_node(self, nid: str, label: str, props: dict[str, Any], removed: Sequence[str]) -> None:
        attrs = self.get(nid)
        if attrs is None:
            attrs = {LABEL_KEY: label}
            attrs.update(props)
            self.node[nid] = attrs
            if self.cols is None:
                self.succ[nid] = {}
                self.pred[nid] = {}
                self.by_label.setdefault(label, set()).add(nid)
            else:
                self._added += 1
                self._added_by_label[label] += 1
                ids = self.by_label.get(label)
                (ids if ids is not None else self._pending.setdefault(label, set())).add(nid)
            for (lab, key), idx in self.prop_index.items():
                if lab == label:
                    _index_add(idx, attrs.get(key), nid)
            return
        for (lab, key), idx in self.prop_index.items():
            if lab == label and (key in props or key in removed):
                _index_remove(idx, attrs.get(key), nid)
                _index_add(idx, props.get(key), nid)
        if self._order and any((k in props and props[k] != attrs.get(k)) or k in removed
                               for k in {k[3] for k in self._order}):
            self._order.clear()  # an ordering property changed: rebuilt on the next walk
            self._order_ends.clear()
        attrs.update(props)
        for k in removed:
            attrs.pop(k, None)

    def ordered_neighbors(self, node_id: str, rel_type: str, direction: str, prop: str,
                          min_degree: int = ORDER_MIN_DEGREE) -> tuple[list[tuple[Any, str]], list[str]] | None:
        """The distinct neighbours of a hub along ``rel_type`` (``out`` or ``in``) ordered by their
        ``prop``: ``([(order key, id)] ascending by key then id, [ids without the property])``.
        None when the node has fewer than ``min_degree`` such neighbours (walk those as usual) or
        for ``both``. Built on first use under a lock; writes keep it current (a new edge is
        inserted in order; a changed ``prop`` on a node drops every index of that property)."""
        if direction not in ("out", "in"):
            return None
        key = (node_id, rel_type, direction, prop)
        got = self._order.get(key)
        if got is not None:
            return got
        it = self.neighbors(node_id, rel_type, direction)
        ids = set(islice(it, min_degree))
        if len(ids) < min_degree:
            return None
        ids.update(it)
        with self._order_lock:
            got = self._order.get(key)
            if got is None:
                present: list[tuple[Any, str]] = []
                missing: list[str] = []
                for nid in ids:
                    v = (self.get(nid) or {}).get(prop)
                    if v is None:
                        missing.append(nid)
                    else:
                        present.append((order_key(v), nid))
                present.sort()
                missing.sort()
                got = self._order[key] = (present, missing)
                self._order_ends.setdefault((node_id, rel_type, direction), []).append(prop)
        return got

    def _order_insert(self, node_id: str, rel: str, direction: str, other: str) -> None:
        """Insert a new neighbour into the node's order indexes (a new edge)."""
        for prop in self._order_ends.get((node_id, rel, direction), ()):
            present, missing = self._order[(node_id, rel, direction, prop)]
            v = (self.get(other) or {}).get(prop)
            if v is None:
                bisect.insort(missing, other)
            else:
                bisect.insort(present, (order_key(v), other))

    def edge_props(self, src: str, rel: str, dst: str) -> dict[str, Any] | None:
        """The properties of the edge (src, rel, dst) (``{}`` when it has none), or None when
        there is no such edge."""
        cols = self.cols
        if cols is not None:
            si, di = cols.pos.get(src), cols.pos.get(dst)
            if si is not None and di is not None:
                p = cols.find_edge(si, rel, di)
                if p >= 0:
                    return dict(self._eprop(p))
        q = (self.succ.get(src) or {}).get(dst, {}).get(rel)
        return None if q is None else dict(q)

    def upsert_edge(self, src: str, rel: str, dst: str, props: dict[str, Any]) -> None:
        cols = self.cols
        if cols is not None:
            si, di = cols.pos.get(src), cols.pos.get(dst)
            if si is not None and di is not None:
                p = cols.find_edge(si, rel, di)
                if p >= 0:  # a snapshot edge: only its properties can change
                    if props:
                        cur = self.edited.get(p)
                        if cur is None:
                            cur = self.edited[p] = dict(cols.eprop(p))
                        cur.update(props)
                    return
        nbrs = self.succ.setdefault(src, {})
        kd = nbrs.get(dst)
        if kd is None:
            kd = {}
            nbrs[dst] = kd
            self.pred.setdefault(dst, {})[src] = kd
        cur = kd.get(rel)
        if cur is None:
            kd[rel] = dict(props)
            self.edge_count += 1
            if self._order_ends:
                self._order_insert(src, rel, "out", dst)
                self._order_insert(dst, rel, "in", src)
        elif props:
            cur.update(props)


def _index_add(idx: dict[Any, set[str]], value: Any, nid: str) -> None:
    if value is None:
        return
    for v in value if isinstance(value, list) else (value,):
        idx.setdefault(v, set()).add(nid)


def _index_remove(idx: dict[Any, set[str]], value: Any, nid: str) -> None:
    if value is None:
        return
    for v in value if isinstance(value, list) else (value,):
        s = idx.get(v)
        if s is not None:
            s.discard(nid)
            if not s:
                del idx[v]
