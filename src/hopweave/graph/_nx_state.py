"""The in-memory state of the networkx store: the graph dicts plus label and property indexes."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Sequence

import networkx as nx

from hopweave.graph._persist import Snapshot
from hopweave.graph.walk import LABEL_KEY


class State:
    """The in-memory graph plus its indexes."""

    def __init__(self, snap: Snapshot | None = None) -> None:
        g = nx.MultiDiGraph()
        if snap is not None:
            g._node = snap.node
            g._adj = g._succ = snap.succ
            g._pred = snap.pred
            self.by_label: dict[str, set[str]] = snap.by_label
        else:
            self.by_label = {}
        self.g = g
        self.node: dict[str, dict[str, Any]] = g._node
        self.succ: dict[str, dict[str, dict[str, dict[str, Any]]]] = g._succ
        self.pred: dict[str, dict[str, dict[str, dict[str, Any]]]] = g._pred
        #: (label, property) -> value -> ids; built on first use, maintained by writes.
        self.prop_index: dict[tuple[str, str], dict[Any, set[str]]] = {}
        self.edge_count = snap.edge_count if snap is not None else 0

    # ---- GraphView for the walker ----------------------------------------------------------
    def node_attrs(self, node_id: str) -> dict[str, Any] | None:
        return self.node.get(node_id)

    def seed_candidates(self, label: str, key: str, values: tuple[Any, ...]) -> Iterable[str]:
        if key == "id":
            return [v for v in values if isinstance(v, str) and v in self.node]
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
        if edge_ok is None:  # every edge of the type
            if direction in ("out", "both"):
                yield from (v for v, kd in (self.succ.get(node_id) or {}).items() if kd.get(rel_type) is not None)
            if direction in ("in", "both"):
                yield from (u for u, kd in (self.pred.get(node_id) or {}).items() if kd.get(rel_type) is not None)
            return
        ok, bare = edge_ok, edge_ok({})
        # (inline, no call per edge: a hub's adjacency is thousands of edges, most without properties)
        if direction in ("out", "both"):
            yield from (v for v, kd in (self.succ.get(node_id) or {}).items()
                        if (p := kd.get(rel_type)) is not None and (ok(p) if p else bare))
        if direction in ("in", "both"):
            yield from (u for u, kd in (self.pred.get(node_id) or {}).items()
                        if (p := kd.get(rel_type)) is not None and (ok(p) if p else bare))

    # ---- indexes -------------------------------------------------------------------------
    def index(self, label: str, key: str) -> dict[Any, set[str]]:
        idx = self.prop_index.get((label, key))
        if idx is None:
            idx = {}
            for nid in self.by_label.get(label, ()):
                _index_add(idx, self.node[nid].get(key), nid)
            self.prop_index[(label, key)] = idx
        return idx

    # ---- mutations (validated before) ------------------------------------------------------
    def upsert_node(self, nid: str, label: str, props: dict[str, Any], removed: Sequence[str]) -> None:
        attrs = self.node.get(nid)
        if attrs is None:
            attrs = {LABEL_KEY: label}
            attrs.update(props)
            self.node[nid] = attrs
            self.succ[nid] = {}
            self.pred[nid] = {}
            self.by_label.setdefault(label, set()).add(nid)
            for (lab, key), idx in self.prop_index.items():
                if lab == label:
                    _index_add(idx, attrs.get(key), nid)
            return
        for (lab, key), idx in self.prop_index.items():
            if lab == label and (key in props or key in removed):
                _index_remove(idx, attrs.get(key), nid)
                _index_add(idx, props.get(key), nid)
        attrs.update(props)
        for k in removed:
            attrs.pop(k, None)

    def upsert_edge(self, src: str, rel: str, dst: str, props: dict[str, Any]) -> None:
        nbrs = self.succ[src]
        kd = nbrs.get(dst)
        if kd is None:
            kd = {}
            nbrs[dst] = kd
            self.pred[dst][src] = kd
        cur = kd.get(rel)
        if cur is None:
            kd[rel] = dict(props)
            self.edge_count += 1
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
