"""The native walker: runs one TraversalPattern over an in-memory graph view.

Semantics (the Cypher compiler in ``hopweave.graph.cypher`` reproduces exactly these rows, and the
congruence tests compare them; change both together):

1. **Seeds.** The seed value is ``resolve_value(seed.value, bindings, prop_type)`` with the
   schema type of ``seed.key`` on ``seed.type``. UNBOUND -> no rows, no error. Seeds are every
   node labelled ``seed.type``, visible to the tenant, whose ``seed.key`` property (``id`` = the
   node id) equals the value (``filters.matches`` of ``Eq``; a tuple value = ``In``) and that
   satisfies the predicates ``on: 0``. ``seed_id`` = the smallest seed id (None if none).
2. **Walk = homomorphism, hop by hop.** Node ``n_i`` (i = 1..depth) is reached from ``n_{i-1}``
   by an edge of type ``edge_sequence[i-1].type``: ``out`` = n_{i-1}->n_i, ``in`` =
   n_i->n_{i-1}, ``both`` = either. Each hop is matched independently: a walk may revisit a node
   and reuse an edge; a self-loop is a neighbour.
3. **Tenant on every node**: seed, intermediates and target must have ``tenant_id`` == the tenant
   or ``_global``; any other node blocks the walk through it.
4. **Labels on every node**: the target has label ``target_type``; intermediate node i has label
   ``via_types[i-1]`` when given (not None), else any label the schema allows at that end of the
   edge (out -> rel.to_labels, in -> rel.from_labels, both -> union).
5. **Predicates** (``on`` = "target" = depth, or hop index k; 0 = the seed): the value is
   ``resolve_value(pred.value, bindings, prop_type)`` with prop_type from the schema (for an
   intermediate node without via type: the first allowed label, in schema order, declaring the
   property). The meaning is :func:`hopweave.graph.predicates.predicate_tree` evaluated with
   ``filters.matches`` (UNBOUND -> no node matches; ``ne`` = Not(Eq), so a missing property
   satisfies ``ne``; ``exists`` = present and not None; ``id`` is the node id).
6. **Rows** are the distinct target nodes; a row's ``path`` is the lexicographically smallest
   tuple of node ids (seed..target) among the walks reaching that target.
7. **Order**: for each ``order_by`` key in turn, nodes missing the property (None) sort AFTER
   nodes having it, in both directions; present values ascending/descending; finally ``id``
   ascending. (Values of one property have one schema type; int and float compare numerically.)
8. **Limit**: the first ``limit`` rows. If more distinct targets existed: ``truncated=True``,
   ``truncated_reason="limit"``. Budget: the walk checks ``deadline`` (perf_counter instant,
   default now + budget_ms) and ``max_visited`` (candidate nodes examined, seeds included) on
   every node and stops early: rows found so far (ordered, limited), ``truncated=True``,
   ``truncated_reason`` = "budget_ms" / "max_visited" (these win over "limit"). A max_visited
   cut is deterministic (the walk order is); a budget cut is not.
9. **Time** (the same definition on every store, :mod:`hopweave.graph.predicates`): every node
   of the walk (seed, intermediates, target) must be known at ``bindings.as_of`` and in force
   then (:func:`~hopweave.graph.predicates.time_tree` of its label, compiled once per label and
   as_of), and every edge it goes through known then
   (:func:`~hopweave.graph.predicates.edge_time_tree`). A node failing it
   blocks the walk like a node of another tenant; an edge failing it is not there (its far end
   is not a neighbour and is not counted as visited). ``bindings.timeless`` (the store's own
   inspection views, never a request) turns the rule off.
10. **Row.properties** = ``id``, ``tenant_id``, ``summary`` (if present) and the ``returns``
   properties that are present (not None); when ``returns`` is empty, every property of the node
   except PII properties not listed in ``pii_allowed``. PII properties not in ``pii_allowed`` are
   never returned (the write gate rejects such patterns; this is the second wall).
   ``Row.label`` = the node's label.

Walk order (for paths and for max_visited cuts): depth-first from seeds in ascending id order,
neighbours in ascending id order; a node already expanded at the same hop index is not expanded
again (the continuation of a homomorphic walk depends only on the node and the index).

Visit count (``max_visited``, ``PatternResult.visited``): +1 for each seed candidate (a node of
``seed.type`` whose key matches, before the tenant and predicate checks), +1 for each distinct
neighbour of each expanded node at an intermediate hop, and at the last hop +1 per distinct
neighbour of each expanded node except targets already reached. A full walk's count is
therefore: seeds + sum over hops of sum over frontier nodes of their distinct candidates, minus,
at the last hop, the repeats of qualifying targets — the Cypher compiler computes the same total.

Hubs: at the last hop of a pattern with ``order_by``, a node with at least
:data:`ORDER_MIN_DEGREE` neighbours is read from the backend's order index
(``ordered_neighbors``) best first, and the walk stops after ``limit`` + 1 qualifying targets
and their ties (:meth:`_Walk.expand_hub`): the same rows, order and truncation as a full scan,
but ``visited`` counts only what was examined (a precedent hub of 100,000 decided traces is a
few dozen examinations, not 100,000).

Budgets hold on hubs: adjacency is read from the backend lazily in chunks of :data:`CHUNK` ids,
each chunk sorted, the chunks merged lazily, and the deadline checked between chunks and on every
examined node; targets are kept in a bounded heap of the ``limit`` best, so nothing after the
deadline grows with the degree of a node.
"""

from __future__ import annotations

import bisect
import heapq
import time
from itertools import islice
from typing import Any, Iterable, Iterator, Protocol

from hopweave.graph.base import visible
from hopweave.graph.predicates import (
    NOTHING,
    Matcher,
    PredicateTree,
    edge_time_matcher,
    predicate_holds,
    predicate_tree,
    time_matcher,
)
from hopweave.graph.values import UNBOUND, resolve_value
from hopweave.models.common import Bindings, PatternResult, Row
from hopweave.models.filters import Eq, In, matches
from hopweave.models.metagraph import Predicate, TraversalPattern
from hopweave.models.schema import GraphSchema

LABEL_KEY = "label"


class GraphView(Protocol):
    """What the walker needs from a backend's in-memory graph (no tenant filtering: the walker
    does that on every node)."""

    def node_attrs(self, node_id: str) -> dict[str, Any] | None:
        """The node's stored properties including ``label``, or None."""

    def seed_candidates(self, label: str, key: str, values: tuple[Any, ...]) -> Iterable[str]:
        """Ids of nodes of ``label`` whose ``key`` may equal one of ``values`` (a superset is fine)."""

    def neighbors(
        self, node_id: str, rel_type: str, direction: str, edge_ok: Matcher | None = None
    ) -> Iterable[str]:
        """Ids of nodes linked to ``node_id`` by ``rel_type`` in ``direction`` (any order, may
        repeat), through an edge whose properties (``{}`` when it has none) satisfy ``edge_ok``
        when one is given."""


def allowed_labels(schema: GraphSchema, pattern: TraversalPattern) -> list[frozenset[str]]:
    """Allowed labels per position 0..depth (0 = seed, depth = target), per rules 1 and 4."""
    out: list[frozenset[str]] = [frozenset({pattern.seed.type})]
    depth = len(pattern.edge_sequence)
    for i, step in enumerate(pattern.edge_sequence, start=1):
        if i == depth:
            out.append(frozenset({pattern.target_type}))
            break
        via = pattern.via_types[i - 1] if i - 1 < len(pattern.via_types) else None
        if via is not None:
            out.append(frozenset({via}))
            continue
        rel = schema.rel(step.type)
        if step.direction == "out":
            out.append(frozenset(rel.to_labels))
        elif step.direction == "in":
            out.append(frozenset(rel.from_labels))
        else:
            out.append(frozenset(rel.to_labels) | frozenset(rel.from_labels))
    return out


def predicate_prop_type(schema: GraphSchema, labels: frozenset[str], prop: str) -> str:
    """The schema type of ``prop`` on the first label (schema order) in ``labels`` declaring it."""
    for lab in schema.labels:
        if lab.name in labels and prop in lab.props:
            return lab.props[prop].type
    return "str"


def _index(pred: Predicate, depth: int) -> int:
    return depth if pred.on == "target" else int(pred.on)


def compile_predicates(
    schema: GraphSchema, pattern: TraversalPattern, bindings: Bindings, allowed: list[frozenset[str]]
) -> list[list[tuple[Predicate, PredicateTree]]]:
    """Per position 0..depth, the (predicate, tree) pairs with values resolved for this request."""
    depth = len(pattern.edge_sequence)
    per: list[list[tuple[Predicate, PredicateTree]]] = [[] for _ in range(depth + 1)]
    for pred in pattern.predicates:
        k = _index(pred, depth)
        if k > depth:
            per[0].append((pred, NOTHING))  # malformed (the gate rejects this): match nothing
            continue
        ptype = predicate_prop_type(schema, allowed[k], pred.property)
        value = resolve_value(pred.value, bindings, ptype) if pred.value is not None else None
        per[k].append((pred, predicate_tree(pred, value)))
    return per


def _holds(preds: list[tuple[Predicate, PredicateTree]], node_id: str, attrs: dict[str, Any]) -> bool:
    for pred, tree in preds:
        props = {"id": node_id} if pred.property == "id" else attrs
        if not predicate_holds(pred, tree, props):
            return False
    return True


def row_properties(
    schema: GraphSchema, pattern: TraversalPattern, node_id: str, attrs: dict[str, Any]
) -> dict[str, Any]:
    """Row.properties per rule 10."""
    label = attrs.get(LABEL_KEY, "")
    pii = schema.pii_properties(label) - set(pattern.pii_allowed) if label in schema.label_map else set()
    out: dict[str, Any] = {"id": node_id, "tenant_id": attrs.get("tenant_id")}
    if pattern.returns:
        names: Iterable[str] = ("summary", *pattern.returns)
    else:
        names = (k for k in attrs if k != LABEL_KEY)
    for name in names:
        if name in pii or name in ("id", "tenant_id"):
            continue
        v = attrs.get(name)
        if v is not None:
            out[name] = list(v) if isinstance(v, (list, tuple)) else v
    return out


class _Desc:
    """Wraps a sort key so that it orders descending inside an ascending tuple comparison."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __lt__(self, other: "_Desc") -> bool:
        return bool(other.v < self.v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and bool(self.v == other.v)

    __hash__ = None  # type: ignore[assignment]


def row_sort_key(pattern: TraversalPattern, node_id: str, attrs: dict[str, Any]) -> tuple[Any, ...]:
    """The total order of rule 7 as one ascending tuple: per ``order_by`` key (missing last,
    present ascending or descending), then the id."""
    key: list[Any] = []
    for ob in pattern.order_by:
        v = _prop(attrs, node_id, ob.property)
        if v is None:
            key.append((1,))
        else:
            sk = _sort_key(v)
            key.append((0, _Desc(sk) if ob.direction == "desc" else sk))
    key.append(node_id)
    return tuple(key)


def order_key(v: Any) -> tuple[int, Any]:
    """The sort key of one present property value (rule 7; the hub order index uses it too)."""
    return _sort_key(v)


#: A node with at least this many neighbours along the last hop is a hub: when the pattern has
#: an ``order_by``, the walk reads its neighbours from the backend's order index (best first)
#: and stops after ``limit`` + 1 qualifying targets (and their ties), instead of examining all.
ORDER_MIN_DEGREE = 4096


def _sort_key(v: Any) -> tuple[int, Any]:
    # One schema type per property; the rank only keeps a (malformed) mixed column sortable.
    if isinstance(v, bool):
        return (2, v)
    if isinstance(v, (int, float)):
        return (0, v)
    if isinstance(v, str):
        return (1, v)
    return (3, str(v))


def _prop(attrs: dict[str, Any], node_id: str, name: str) -> Any:
    return node_id if name == "id" else attrs.get(name)


class _Stop(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason


#: Neighbours are read from the backend this many at a time; the deadline is checked between
#: chunks (and while merging them), so a hub of a million edges never stalls a walk.
CHUNK = 1024


def _checked(it: Iterator[str], deadline: float) -> Iterator[str]:
    """Yield from ``it`` checking the deadline every :data:`CHUNK` items (raises _Stop)."""
    for n, x in enumerate(it, 1):
        if n % CHUNK == 0 and time.perf_counter() > deadline:
            raise _Stop("budget_ms")
        yield x


def sorted_neighbours(raw: Iterable[str], deadline: float) -> Iterator[str]:
    """Distinct ids of ``raw`` in ascending order, read and sorted chunk by chunk with a
    deadline check between chunks; chunks are merged lazily. Raises _Stop("budget_ms")."""
    it = iter(raw)
    first = sorted(set(islice(it, CHUNK)))
    if len(first) < CHUNK:  # the common case: a small adjacency, one chunk
        nxt = list(islice(it, 1))
        if not nxt:
            yield from first
            return
        first = sorted(set(first) | set(nxt))
    chunks = [first]
    while True:
        if time.perf_counter() > deadline:
            raise _Stop("budget_ms")
        chunk = sorted(set(islice(it, CHUNK)))
        if not chunk:
            break
        chunks.append(chunk)
    prev = None
    for x in _checked(heapq.merge(*chunks), deadline):
        if x != prev:
            yield x
            prev = x


class _Walk:
    """The state of one walk (rules in the module docstring); :meth:`run` does the walk."""

    def __init__(
        self,
        view: GraphView,
        schema: GraphSchema,
        tenant_id: str,
        pattern: TraversalPattern,
        bindings: Bindings,
        deadline: float,
    ) -> None:
        self.view, self.schema, self.tenant_id, self.pattern = view, schema, tenant_id, pattern
        self.bindings, self.deadline = bindings, deadline
        self.steps = pattern.edge_sequence
        self.depth = len(self.steps)
        self.allowed = allowed_labels(schema, pattern)
        self.preds = compile_predicates(schema, pattern, bindings, self.allowed)
        #: rule 9: per label, the time condition at as_of (built on first use); the edges' one
        self.time_ok: dict[str, Matcher] = {}
        self.edge_ok: Matcher | None = None if bindings.timeless else edge_time_matcher(bindings.as_of)
        self.visited = 0
        #: every distinct target reached, with its (smallest) path
        self.found: dict[str, tuple[str, ...]] = {}
        #: the best ``limit`` targets so far, as a max-heap of (_Desc(key), id, attrs)
        self.best: list[tuple[_Desc, str, dict[str, Any]]] = []
        self.expanded: set[tuple[str, int]] = set()
        self.seed_ids: list[str] = []

    # ---- per node ------------------------------------------------------------------------
    def examine(self, node_id: str, pos: int) -> dict[str, Any] | None:
        """Count one candidate (raises _Stop past max_visited or the deadline); return its
        attributes when it qualifies at walk position ``pos``, else None."""
        self.visited += 1
        if self.visited > self.pattern.max_visited:
            raise _Stop("max_visited")
        if time.perf_counter() > self.deadline:
            raise _Stop("budget_ms")
        attrs = self.view.node_attrs(node_id)
        if attrs is None or attrs.get(LABEL_KEY) not in self.allowed[pos]:
            return None
        if not visible(self.tenant_id, attrs.get("tenant_id")):
            return None
        if not self.bindings.timeless and not self.time_matcher(attrs[LABEL_KEY])(attrs):
            return None
        if self.preds[pos] and not _holds(self.preds[pos], node_id, attrs):
            return None
        return attrs

    def time_matcher(self, label: str) -> Matcher:
        m = self.time_ok.get(label)
        if m is None:
            m = self.time_ok[label] = time_matcher(self.schema.label(label), self.bindings.as_of)
        return m

    def keep(self, node_id: str, path: tuple[str, ...], attrs: dict[str, Any]) -> None:
        """Record a reached target; keep only the ``limit`` best in memory for the rows (so the
        final ordering costs O(limit), whatever the number of targets)."""
        self.found[node_id] = path
        item = (_Desc(row_sort_key(self.pattern, node_id, attrs)), node_id, attrs)
        if len(self.best) < self.pattern.limit:
            heapq.heappush(self.best, item)
        elif self.best[0][0] < item[0]:  # item sorts before the worst kept one
            heapq.heapreplace(self.best, item)

    # ---- the walk --------------------------------------------------------------------------
    def expand(self, path: tuple[str, ...]) -> None:
        pos, node = len(path) - 1, path[-1]
        if (node, pos) in self.expanded:
            return
        self.expanded.add((node, pos))
        step = self.steps[pos]
        last = pos + 1 == self.depth
        if last and self.pattern.order_by and step.direction != "both":
            ordered = getattr(self.view, "ordered_neighbors", None)
            hub = ordered(node, step.type, step.direction, self.pattern.order_by[0].property) if ordered else None
            if hub is not None:
                self.expand_hub(path, step.type, step.direction, hub)
                return
        raw = self.view.neighbors(node, step.type, step.direction, self.edge_ok)
        for nb in sorted_neighbours(raw, self.deadline):
            if last and nb in self.found:
                continue
            attrs = self.examine(nb, pos + 1)
            if attrs is None:
                continue
            if last:
                self.keep(nb, path + (nb,), attrs)
            else:
                self.expand(path + (nb,))

    def expand_hub(self, path: tuple[str, ...], rel: str, direction: str,
                   hub: tuple[list[tuple[Any, str]], list[str]]) -> None:
        """The last hop from a hub, best first by the first ``order_by`` key (then the targets
        without it): the first ``limit`` + 1 qualifying targets and their ties on that key are
        all that can be kept (every target of this node after them sorts after them), so the
        walk stops there. Same rows, order and truncation as the full scan; ``visited`` counts
        only the candidates examined."""
        node, pos = path[-1], len(path) - 1
        present, missing = hub
        prop = self.pattern.order_by[0].property
        lo, hi, bounded = self.key_bounds(prop)
        a = 0 if lo is None else bisect.bisect_left(present, (lo,))
        z = len(present) if hi is None else bisect.bisect_right(present, (hi, "\U0010ffff"))
        window = present[a:z]  # a range predicate on the order property: only keys inside it can qualify
        desc = self.pattern.order_by[0].direction == "desc"
        seq: Iterable[tuple[Any, str]] = (
            *(reversed(window) if desc else window), *(() if bounded else ((None, m) for m in missing)))
        edge_props = getattr(self.view, "edge_props", None)
        need, got, cut = self.pattern.limit + 1, 0, None
        for n, (k, nb) in enumerate(seq):
            if got >= need and k != cut:
                break
            if n % CHUNK == 0 and time.perf_counter() > self.deadline:
                raise _Stop("budget_ms")
            if nb in self.found:
                continue
            if self.edge_ok is not None and edge_props is not None:
                e = edge_props(node, rel, nb) if direction == "out" else edge_props(nb, rel, node)
                if e is None or not self.edge_ok(e):
                    continue  # not there at as_of
            attrs = self.examine(nb, pos + 1)
            if attrs is None:
                continue
            self.keep(nb, path + (nb,), attrs)
            got += 1
            if got == need:
                cut = k

    def key_bounds(self, prop: str) -> tuple[Any, Any, bool]:
        """(lowest, highest) order key a target's ``prop`` may have under the pattern's range
        predicates on it (``gt``/``gte``/``lt``/``lte`` on the target; None = open), and whether
        any applies (then a target without the property cannot qualify)."""
        lo = hi = None
        bounded = False
        for pred in self.pattern.predicates:
            if _index(pred, self.depth) != self.depth or pred.property != prop or pred.value is None:
                continue
            if pred.op not in ("gt", "gte", "lt", "lte"):
                continue
            ptype = predicate_prop_type(self.schema, self.allowed[self.depth], prop)
            v = resolve_value(pred.value, self.bindings, ptype)
            if v is UNBOUND or v is None or isinstance(v, (list, tuple)):
                continue
            k = order_key(v)
            bounded = True
            if pred.op in ("gt", "gte"):
                lo = k if lo is None or lo < k else lo
            else:
                hi = k if hi is None or k < hi else hi
        return lo, hi, bounded

    def seeds(self) -> Iterator[str]:
        """Seed candidates (rule 1) in ascending id order, before the examine() gate."""
        p = self.pattern
        ptype = predicate_prop_type(self.schema, self.allowed[0], p.seed.key)
        value = resolve_value(p.seed.value, self.bindings, ptype)
        if value is UNBOUND or value is None:
            return
        values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        tree = In(field=p.seed.key, values=values) if len(values) != 1 else Eq(field=p.seed.key, value=values[0])
        for sid in sorted(set(self.view.seed_candidates(p.seed.type, p.seed.key, values))):
            attrs = self.view.node_attrs(sid)
            if attrs is None or attrs.get(LABEL_KEY) != p.seed.type:
                continue
            if matches(tree, {"id": sid} if p.seed.key == "id" else attrs):
                yield sid

    def run(self) -> str | None:
        """Walk from every seed; return the truncation reason of a cut, or None."""
        try:
            for sid in self.seeds():
                if self.examine(sid, 0) is None:
                    continue
                self.seed_ids.append(sid)
                self.expand((sid,))
        except _Stop as stop:
            return stop.reason
        return None

    def rows(self) -> tuple[list[Row], bool]:
        """The first ``limit`` rows in rule-7 order, and whether more targets were found."""
        kept = sorted(self.best, key=lambda item: item[0].v)  # type: ignore[no-any-return]
        rows = [
            Row(
                node_id=nid,
                label=attrs[LABEL_KEY],
                properties=row_properties(self.schema, self.pattern, nid, attrs),
                path=self.found[nid],
            )
            for _, nid, attrs in kept
        ]
        return rows, len(self.found) > self.pattern.limit


def walk(
    view: GraphView,
    schema: GraphSchema,
    tenant_id: str,
    pattern: TraversalPattern,
    bindings: Bindings,
    deadline: float | None = None,
) -> PatternResult:
    """Run ``pattern`` for ``tenant_id`` over ``view`` (rules in the module docstring).

    Returns a PatternResult; never raises for budget or missing seeds."""
    start = time.perf_counter()
    w = _Walk(view, schema, tenant_id, pattern, bindings,
              start + pattern.budget_ms / 1000.0 if deadline is None else deadline)
    reason = w.run()
    rows, more = w.rows()
    if more and reason is None:
        reason = "limit"
    return PatternResult(
        pattern=pattern.name,
        version=pattern.version,
        sub_question=pattern.sub_question,
        section=pattern.section,
        rows=tuple(rows),
        truncated=reason is not None,
        truncated_reason=reason,
        elapsed_ms=round((time.perf_counter() - start) * 1000.0, 3),
        visited=w.visited,
        seed_id=w.seed_ids[0] if w.seed_ids else None,
    )
