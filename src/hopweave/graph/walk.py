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
9. **Row.properties** = ``id``, ``tenant_id``, ``summary`` (if present) and the ``returns``
   properties that are present (not None); when ``returns`` is empty, every property of the node
   except PII properties not listed in ``pii_allowed``. PII properties not in ``pii_allowed`` are
   never returned (the write gate rejects such patterns; this is the second wall).
   ``Row.label`` = the node's label.

Walk order (for paths and for max_visited cuts): depth-first from seeds in ascending id order,
neighbours in ascending id order; a node already expanded at the same hop index is not expanded
again (the continuation of a homomorphic walk depends only on the node and the index).
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Protocol

from hopweave.graph.base import visible
from hopweave.graph.predicates import NOTHING, PredicateTree, predicate_holds, predicate_tree
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

    def neighbors(self, node_id: str, rel_type: str, direction: str) -> Iterable[str]:
        """Ids of nodes linked to ``node_id`` by ``rel_type`` in ``direction`` (any order, may repeat)."""


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
    """Row.properties per rule 9."""
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


def _sort_rows(
    found: dict[str, tuple[str, ...]], attrs_of: dict[str, dict[str, Any]], pattern: TraversalPattern
) -> list[str]:
    ids = sorted(found)
    for ob in reversed(pattern.order_by):
        present = [i for i in ids if _prop(attrs_of[i], i, ob.property) is not None]
        missing = [i for i in ids if _prop(attrs_of[i], i, ob.property) is None]
        present.sort(
            key=lambda i: _sort_key(_prop(attrs_of[i], i, ob.property)), reverse=ob.direction == "desc"
        )
        ids = present + missing
    return ids


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
    if deadline is None:
        deadline = start + pattern.budget_ms / 1000.0
    steps = pattern.edge_sequence
    depth = len(steps)
    allowed = allowed_labels(schema, pattern)
    preds = compile_predicates(schema, pattern, bindings, allowed)
    max_visited = pattern.max_visited
    visited = 0
    found: dict[str, tuple[str, ...]] = {}
    attrs_of: dict[str, dict[str, Any]] = {}
    expanded: set[tuple[str, int]] = set()
    reason: str | None = None
    seed_ids: list[str] = []

    def examine(node_id: str, pos: int) -> dict[str, Any] | None:
        nonlocal visited
        visited += 1
        if visited > max_visited:
            raise _Stop("max_visited")
        if time.perf_counter() > deadline:
            raise _Stop("budget_ms")
        attrs = view.node_attrs(node_id)
        if attrs is None or attrs.get(LABEL_KEY) not in allowed[pos]:
            return None
        if not visible(tenant_id, attrs.get("tenant_id")):
            return None
        if preds[pos] and not _holds(preds[pos], node_id, attrs):
            return None
        return attrs

    def expand(path: tuple[str, ...]) -> None:
        pos = len(path) - 1
        node = path[-1]
        if (node, pos) in expanded:
            return
        expanded.add((node, pos))
        step = steps[pos]
        for nb in sorted(set(view.neighbors(node, step.type, step.direction))):
            if pos + 1 == depth and nb in found:
                continue
            attrs = examine(nb, pos + 1)
            if attrs is None:
                continue
            if pos + 1 == depth:
                found[nb] = path + (nb,)
                attrs_of[nb] = attrs
            else:
                expand(path + (nb,))

    seed_ptype = predicate_prop_type(schema, allowed[0], pattern.seed.key)
    seed_value = resolve_value(pattern.seed.value, bindings, seed_ptype)
    try:
        if seed_value is not UNBOUND and seed_value is not None:
            values = tuple(seed_value) if isinstance(seed_value, (tuple, list)) else (seed_value,)
            tree = (
                In(field=pattern.seed.key, values=values)
                if len(values) != 1
                else Eq(field=pattern.seed.key, value=values[0])
            )
            cands = sorted(set(view.seed_candidates(pattern.seed.type, pattern.seed.key, values)))
            for sid in cands:
                attrs = view.node_attrs(sid)
                if attrs is None:
                    continue
                keyprops = {"id": sid} if pattern.seed.key == "id" else attrs
                if not matches(tree, keyprops):
                    continue
                if examine(sid, 0) is None:
                    continue
                seed_ids.append(sid)
                expand((sid,))
    except _Stop as stop:
        reason = stop.reason

    ordered = _sort_rows(found, attrs_of, pattern)
    truncated = reason is not None
    if len(ordered) > pattern.limit:
        ordered = ordered[: pattern.limit]
        if reason is None:
            reason, truncated = "limit", True
    rows = tuple(
        Row(
            node_id=nid,
            label=attrs_of[nid][LABEL_KEY],
            properties=row_properties(schema, pattern, nid, attrs_of[nid]),
            path=found[nid],
        )
        for nid in ordered
    )
    return PatternResult(
        pattern=pattern.name,
        version=pattern.version,
        sub_question=pattern.sub_question,
        section=pattern.section,
        rows=rows,
        truncated=truncated,
        truncated_reason=reason,
        elapsed_ms=round((time.perf_counter() - start) * 1000.0, 3),
        visited=visited,
        seed_id=seed_ids[0] if seed_ids else None,
    )
