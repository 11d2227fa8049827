"""The one Cypher compiler: TraversalPattern + Bindings -> ``(query, params)``, FilterTree ->
``(where, params)``.

Pure functions, no I/O. Every identifier (label, relationship type, property) goes through
:func:`hopweave.models.schema.cypher_identifier`; every value is a ``$parameter`` handed out by a
:class:`ParamStore` (unique names, deterministic order). Values are resolved with
:func:`hopweave.graph.values.resolve_value`, the same function the networkx walker uses, so
relative times ("last 24 months") mean the same thing on every backend.

Row semantics (the contract shared with ``hopweave.graph.walk``; the congruence suites check it):

* A walk goes hop by hop — one ``MATCH`` per edge step, so a walk may revisit nodes and reuse an
  edge (homomorphism). ``both`` matches an edge in either direction.
* Seeds: nodes of ``seed.type`` whose ``seed.key`` equals the resolved seed value.
* Every node on the walk (seed, intermediates, target) is visible to the tenant
  (``tenant_id`` is the tenant or ``_global``) and carries the label the pattern expects.
* Predicates mean what :func:`hopweave.models.filters.matches` means for the FilterTree that
  :func:`hopweave.graph.predicates.predicate_tree` builds (strict bool equality, like-with-like
  ranges, a missing property fails everything except ``ne``, list properties match when any
  element does). An unbound value (no binding, no default) makes the predicate match nothing.
* Time (:mod:`hopweave.graph.predicates`, the walker's rule 9): every node of the walk must match
  :func:`~hopweave.graph.predicates.time_tree` of its label at ``bindings.as_of`` (known then, in
  force then), compiled like any FilterTree; every edge it goes through must match
  :func:`~hopweave.graph.predicates.edge_time_tree` (tested in the hop's ``MATCH``, so an edge
  recorded after as_of is neither walked nor counted as a visit). ``bindings.timeless`` (inspection
  views only) leaves both out.
* Rows are distinct targets; each row's ``path`` is the lexicographically smallest id sequence
  among the walks reaching it (kept hop by hop with ``min()``, which also keeps the frontier
  distinct). Order: each ``order_by`` key with missing values last in both directions, then
  ``id`` ascending. ``LIMIT`` is ``limit + 1`` so the store can report truncation.
* ``max_visited``: the query counts visits exactly as the walker does (its module docstring:
  seed candidates of any tenant, every distinct neighbour of every frontier node, a qualifying
  target once), hop by hop, and empties the frontier once the count passes ``max_visited``, so
  the hops after the cut do no work. The count of a full walk is the walker's ``visited``, and
  both cut exactly when it exceeds ``max_visited``. Within a hop, a frontier node stops
  expanding after ``max_visited + 1`` distinct neighbours (the cut is then certain), so a hub
  costs at most that many expansions per frontier node. A cut query returns no rows (the walker
  returns the rows its depth-first walk found before the cut): capability
  ``max_visited_rows_on_cut``. ``budget_ms`` is the server time bound.
* Hops are subqueries over a frontier of ``[node, path]`` pairs ending in an aggregation, so the
  counters survive an empty frontier; the subquery's opening differs by engine
  (``Capabilities.subquery_open``: Neo4j 5's variable-scope ``CALL (frontier) {``, FalkorDB's
  importing ``CALL { WITH frontier``).
"""

from __future__ import annotations

from typing import Any, Iterable, cast

from hopweave.graph.capabilities import NEO4J, Capabilities
from hopweave.graph.predicates import EXISTS, NOTHING, predicate_tree, recorded_bound, time_tree
from hopweave.graph.values import UNBOUND, resolve_value
from hopweave.models.common import Bindings
from hopweave.models.filters import And, Eq, FilterTree, In, IsEmpty, Not, Or
from hopweave.models.metagraph import Predicate, TraversalPattern
from hopweave.models.schema import (
    GLOBAL_TENANT,
    RECORDED_AT,
    SAFE_IDENTIFIER,
    GraphSchema,
    PropType,
    check_identifier,
    cypher_identifier,
)

__all__ = [
    "ParamStore",
    "compile_filter",
    "compile_pattern",
    "compile_seed_query",
    "seed_is_unique",
    "hop_labels",
    "row_properties",
]

_CMP = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


class ParamStore:
    """Hands out unique, deterministic parameter names and collects their values."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        self.params: dict[str, Any] = dict(params or {})
        #: ``as_of`` bounds: one parameter per (field, value), shared by every node of the walk
        self._as_of: dict[tuple[str, str], str] = {}
        self.as_of_mode = False

    def add(self, value: Any, hint: str = "p") -> str:
        """Store ``value`` under a fresh name derived from ``hint``; return ``$name``. In
        ``as_of_mode`` (the time conditions) a value is stored once per field, named ``asof_<hint>``."""
        if self.as_of_mode:
            key = (hint, repr(value))
            if key not in self._as_of:
                self.as_of_mode = False
                try:
                    self._as_of[key] = self.add(value, f"asof_{hint}")
                finally:
                    self.as_of_mode = True
            return self._as_of[key]
        base = hint if SAFE_IDENTIFIER.match(hint) else "p"
        name, i = base, 0
        while name in self.params:
            i += 1
            name = f"{base}_{i}"
        self.params[name] = list(value) if isinstance(value, tuple) else value
        return "$" + name


# ---- labels and properties ------------------------------------------------------------------
def hop_labels(pattern: TraversalPattern, schema: GraphSchema) -> list[tuple[str, ...]]:
    """Allowed labels of each node of the walk: index 0 is the seed, the last is the target.

    Intermediate node i uses ``via_types[i-1]`` when given, else every label the schema allows
    at that end of edge i. Raises SchemaError for unknown labels or relationship types.
    """
    n = len(pattern.edge_sequence)
    out: list[tuple[str, ...]] = [(schema.label(pattern.seed.type).name,)]
    for i, step in enumerate(pattern.edge_sequence, start=1):
        rel = schema.rel(step.type)
        if i == n:
            out.append((schema.label(pattern.target_type).name,))
            break
        via = pattern.via_types[i - 1] if i - 1 < len(pattern.via_types) else None
        if via is not None:
            out.append((schema.label(via).name,))
            continue
        ends = {"out": rel.to_labels, "in": rel.from_labels, "both": rel.from_labels + rel.to_labels}
        allowed = set(ends[step.direction])
        out.append(tuple(lab.name for lab in schema.labels if lab.name in allowed))  # schema order
    return out


def _prop_spec(schema: GraphSchema, labels: Iterable[str], prop: str) -> tuple[str, PropType, set[PropType]]:
    """(escaped identifier, type on the first label declaring it, all declared types) of
    ``prop`` over the candidate labels (in schema order). Raises SchemaError if none declares it."""
    labels = tuple(labels)
    owners = [lab for lab in labels if prop in schema.label(lab).props]
    ident = cypher_identifier(schema, "property", prop, owners[0] if owners else labels[0])
    types = {schema.label(lab).props[prop].type for lab in owners}
    return ident, schema.label(owners[0]).props[prop].type, types


def row_properties(pattern: TraversalPattern, schema: GraphSchema) -> tuple[str, ...]:
    """Target properties a row carries: ``id``, ``tenant_id``, ``summary`` (when the label
    declares it) and ``returns``, or (when ``returns`` is empty) every declared property; PII
    properties not in ``pii_allowed`` never. The store drops the ones that are null."""
    spec = schema.label(pattern.target_type)
    names = (
        (["summary"] if "summary" in spec.props else []) + list(pattern.returns)
        if pattern.returns
        else list(spec.props)
    )
    pii = schema.pii_properties(spec.name) - set(pattern.pii_allowed)
    return tuple(dict.fromkeys(["id", "tenant_id", *(p for p in names if p not in pii)]))


# ---- FilterTree -> Cypher ---------------------------------------------------------------------
def compile_filter(
    tree: FilterTree,
    var: str,
    schema: GraphSchema,
    labels: Iterable[str],
    params: ParamStore,
    caps: Capabilities = NEO4J,
) -> str:
    """Compile ``tree`` into a boolean Cypher expression over node variable ``var``.

    The expression evaluates exactly like :func:`hopweave.models.filters.matches` on the node's
    properties: leaves under a NOT are made strict with ``coalesce(..., false)``; outside a NOT a
    null already filters the row (so indexes stay usable). ``labels`` are the node's possible
    labels (for property validation and list-vs-scalar). Raises SchemaError /
    UnsafeIdentifierError for fields not declared on those labels.
    """
    check_identifier(var, "Cypher variable")
    return _filter(tree, var, schema, tuple(labels), params, caps, negated=False)


def _filter(
    tree: FilterTree,
    var: str,
    schema: GraphSchema,
    labels: tuple[str, ...],
    params: ParamStore,
    caps: Capabilities,
    negated: bool,
) -> str:
    if isinstance(tree, Not):
        return f"NOT ({_filter(tree.clause, var, schema, labels, params, caps, negated=not negated)})"
    if isinstance(tree, (And, Or)):
        joiner = " AND " if isinstance(tree, And) else " OR "
        return (
            "("
            + joiner.join(_filter(c, var, schema, labels, params, caps, negated) for c in tree.clauses)
            + ")"
        )
    ident, _, types = _prop_spec(schema, labels, tree.field)
    prop = f"{var}.{ident}"
    guard = "{x}"
    if isinstance(tree, IsEmpty):  # absent, null or an empty list (filters.is_empty_value); never null
        if "list[str]" in types:
            return f"({prop} IS NULL OR size([] + {prop}) = 0)"
        return f"{prop} IS NULL"
    if isinstance(tree, Eq):
        cond = "{g} = " + params.add(tree.value, tree.field)
        if not isinstance(tree.value, str):
            guard = caps.index_guard
    elif isinstance(tree, In):
        cond = "{g} IN " + params.add(tree.values, tree.field)
        if not all(isinstance(v, str) for v in tree.values):
            guard = caps.index_guard
    else:  # Range: like-with-like only; a bool bound never matches (filters._cmp_ok)
        bounds = [
            (op, getattr(tree, op)) for op in ("gt", "gte", "lt", "lte") if getattr(tree, op) is not None
        ]
        if any(isinstance(b, bool) for _, b in bounds):
            return "false"
        cond = " AND ".join(f"{{g}} {_CMP[op]} {params.add(b, tree.field)}" for op, b in bounds)
        guard = caps.index_guard
    if types == {"list[str]"}:
        expr = f"any(x IN {prop} WHERE {cond.format(g='x')})"
    elif "list[str]" in types:  # a property that is a list on some candidate labels only
        expr = f"any(x IN ([] + {prop}) WHERE {cond.format(g='x')})"
    else:
        expr = cond.format(g=guard.format(x=prop))
        if " AND " in expr:
            expr = f"({expr})"
    return f"coalesce({expr}, false)" if negated else expr


# ---- TraversalPattern -> Cypher ------------------------------------------------------------
def _node_where(
    k: int,
    labels: tuple[str, ...],
    preds: list[Predicate],
    bindings: Bindings,
    schema: GraphSchema,
    params: ParamStore,
    tenants: str,
    caps: Capabilities,
) -> list[str]:
    var = f"n{k}"
    conds = [f"{var}.`tenant_id` IN {tenants}"]
    if len(labels) > 1:
        conds.append(
            "(" + " OR ".join(f"{var}:{cypher_identifier(schema, 'label', lab)}" for lab in labels) + ")"
        )
    if not bindings.timeless:
        conds.append(_time_where(var, labels, bindings, schema, params, caps))
    for pred in preds:
        ident, ptype, _ = _prop_spec(schema, labels, pred.property)
        if pred.op == "exists":
            conds.append(f"{var}.{ident} IS NOT NULL")
            continue
        value = resolve_value(pred.value, bindings, ptype)  # type: ignore[arg-type]
        tree = predicate_tree(pred, value)
        if tree is NOTHING or tree is EXISTS:  # EXISTS only comes from op 'exists', handled above
            conds.append("false")
            continue
        # the sentinels (NOTHING, EXISTS) are handled above: what is left is a FilterTree
        conds.append(_filter(cast(FilterTree, tree), var, schema, labels, params, caps, negated=False))
    return conds


def _time_where(
    var: str, labels: tuple[str, ...], bindings: Bindings, schema: GraphSchema, params: ParamStore,
    caps: Capabilities,
) -> str:
    """The time condition (:func:`time_tree` at as_of) on node ``var`` of one of ``labels``: one
    expression when every label has the same condition, else one per group of labels, each
    guarded by its labels."""
    groups: dict[FilterTree, list[str]] = {}
    for lab in labels:
        groups.setdefault(time_tree(schema.label(lab), bindings.as_of), []).append(lab)
    params.as_of_mode = True
    try:
        if len(groups) == 1:
            return _filter(next(iter(groups)), var, schema, labels, params, caps, negated=False)
        parts = []
        for tree, labs in groups.items():
            guard = " OR ".join(f"{var}:{cypher_identifier(schema, 'label', lab)}" for lab in labs)
            parts.append(f"(({guard}) AND {_filter(tree, var, schema, tuple(labs), params, caps, negated=False)})")
        return "(" + " OR ".join(parts) + ")"
    finally:
        params.as_of_mode = False


def _seed_match(
    pattern: TraversalPattern, bindings: Bindings, schema: GraphSchema, params: ParamStore, caps: Capabilities
) -> tuple[str, list[str]]:
    """``(MATCH clause, key conditions)`` of the seed candidates: nodes of ``seed.type`` whose
    ``seed.key`` matches the resolved value, of any tenant (the walker's seed candidates). A
    string value is matched in the node pattern (index-anchored); an unbound value matches
    nothing (``false``)."""
    label = schema.label(pattern.seed.type).name
    ident, ptype, types = _prop_spec(schema, (label,), pattern.seed.key)
    value = resolve_value(pattern.seed.value, bindings, ptype)
    node = f"n0:{cypher_identifier(schema, 'label', label)}"
    if value is UNBOUND or value is None:
        return f"MATCH ({node})", ["false"]
    if isinstance(value, (list, tuple)) or "list[str]" in types or not isinstance(value, str):
        vals = tuple(value) if isinstance(value, (list, tuple)) else (value,)
        tree = (
            In(field=pattern.seed.key, values=vals)
            if len(vals) != 1
            else Eq(field=pattern.seed.key, value=vals[0])
        )
        return f"MATCH ({node})", [_filter(tree, "n0", schema, (label,), params, caps, negated=False)]
    return f"MATCH ({node} {{{ident}: {params.add(value, 'seed')}}})", []


def _seed_lines(
    pattern: TraversalPattern,
    bindings: Bindings,
    schema: GraphSchema,
    params: ParamStore,
    by_node: dict[int, list[Predicate]],
    tenants: str,
    caps: Capabilities,
) -> list[str]:
    """``MATCH (n0:Label {key: $seed}) WHERE ...`` — the qualifying seeds (tenant, predicates)."""
    head, key_conds = _seed_match(pattern, bindings, schema, params, caps)
    label = schema.label(pattern.seed.type).name
    where = _node_where(0, (label,), by_node.get(0, []), bindings, schema, params, tenants, caps)
    if -1 in by_node:
        where.append("false")
    return [head, "WHERE " + " AND ".join(key_conds + where)]


def _split_predicates(pattern: TraversalPattern) -> dict[int, list[Predicate]]:
    """Predicates per walk position (0 = seed .. depth = target). A predicate on a hop beyond
    the target (the gate rejects it) makes the seed match nothing, as in the walker."""
    n = len(pattern.edge_sequence)
    by_node: dict[int, list[Predicate]] = {}
    for pred in pattern.predicates:
        k = n if pred.on == "target" else int(pred.on)
        by_node.setdefault(k if k <= n else -1, []).append(pred)
    return by_node


def compile_seed_query(
    pattern: TraversalPattern, bindings: Bindings, schema: GraphSchema, caps: Capabilities = NEO4J
) -> tuple[str, dict[str, Any]]:
    """``(query, params)`` returning the smallest seed id (column ``id``) of the pattern for
    this request, or no record when no node qualifies as a seed."""
    params = ParamStore()
    by_node = _split_predicates(pattern)
    tenants = params.add([bindings.session.tenant_id, GLOBAL_TENANT], "tenants")
    lines = _seed_lines(pattern, bindings, schema, params, by_node, tenants, caps)
    lines.append("RETURN n0.`id` AS id ORDER BY id ASC LIMIT 1")
    return "\n".join(lines), params.params


def seed_is_unique(pattern: TraversalPattern, bindings: Bindings) -> bool:
    """True when at most one node can be the seed (key ``id`` and a single value)."""
    if pattern.seed.key != "id":
        return False
    value = resolve_value(pattern.seed.value, bindings, "str")
    return not isinstance(value, (list, tuple))


def _hop_lines(
    k: int,
    last: bool,
    pattern: TraversalPattern,
    labels: tuple[str, ...],
    conds: list[str],
    schema: GraphSchema,
    caps: Capabilities,
    cap: str,
    edge_known: str,
) -> list[str]:
    """One hop as a subquery over the frontier (``[node, path]`` pairs; a subquery ending in an
    aggregation always returns one row, so the counters survive an empty frontier). Returns
    ``expanded`` (what the hop adds to the visit count) and ``reached`` (the qualifying nodes
    with their smallest path). Every distinct neighbour of every frontier node counts; at the
    last hop a qualifying target counts once however many frontier nodes reach it (the
    walker skips targets it already found). A frontier node stops expanding after ``cap``
    (= max_visited + 1) distinct neighbours: past that the cut is certain, so a hub costs at most
    ``cap`` expansions. Paths at one hop have one length, so the smallest ``path + [id]`` is the
    smallest ``path`` plus ``[id]`` (one list built per node, not per edge: FalkorDB copies every
    list it projects)."""
    step = pattern.edge_sequence[k - 1]
    rel = cypher_identifier(schema, "rel", step.type)
    left, right = {"out": ("-", "->"), "in": ("<-", "-"), "both": ("-", "-")}[step.direction]
    prev, cur, edge = f"n{k - 1}", f"n{k}", f"e{k}"
    if len(labels) == 1:  # several labels: _node_where already tests them
        conds = [f"{cur}:{cypher_identifier(schema, 'label', labels[0])}", *conds]
    ok = f"({' AND '.join(conds)})"
    count = f"CASE WHEN {ok} THEN 1 ELSE seen END" if last else "seen"
    return [
        caps.subquery_open.format(vars="frontier"),
        "  UNWIND frontier AS f",
        f"  WITH f[0] AS {prev}, f[1] AS path",
        "  " + caps.subquery_open.format(vars=prev),
        f"    MATCH ({prev}){left}[{edge}:{rel}]{right}({cur})",
        *([f"    WHERE {edge_known.format(e=edge)}"] if edge_known else []),
        f"    RETURN DISTINCT {cur} LIMIT {cap}",
        "  }",
        f"  WITH {cur}, count(*) AS seen, min(path) AS path",
        f"  RETURN sum({count}) AS expanded, "
        f"collect(CASE WHEN {ok} THEN [{cur}, path + [{cur}.`id`]] END) AS reached",
        "}",
    ]


def _edge_where(bindings: Bindings, params: ParamStore) -> str:
    """:func:`edge_time_tree` at as_of (no ``recorded_at``, or one at or before as_of) as a
    template over ``{e}``, the edge variable. Edges are never indexed: no index guard needed."""
    params.as_of_mode = True
    try:
        at = params.add(recorded_bound(bindings.as_of), RECORDED_AT)
    finally:
        params.as_of_mode = False
    return f"({{e}}.`{RECORDED_AT}` IS NULL OR {{e}}.`{RECORDED_AT}` <= {at})"


def compile_pattern(
    pattern: TraversalPattern,
    bindings: Bindings,
    schema: GraphSchema,
    caps: Capabilities = NEO4J,
) -> tuple[str, dict[str, Any]]:
    """Compile one pattern for one request into ``(query, params)``.

    The walk goes hop by hop over a frontier of ``[node, path]`` pairs, counting visits exactly
    like the walker (``hopweave.graph.walk``: seed candidates of any tenant, then every distinct
    neighbour of every frontier node, a qualifying target once). When the count passes
    ``max_visited`` after a hop, the frontier is emptied: the later hops do no work.

    The query returns the targets, ordered and limited to ``pattern.limit + 1`` records, each
    with ``id``, ``label``, ``props`` (a map of :func:`row_properties`, nulls included) and
    ``path`` (ids seed..target); every record also has ``visited`` (the visit count, past
    ``max_visited`` on a cut) and ``seed_id`` (the smallest qualifying seed id, or null). When
    there is no target, or the walk was cut, the only record is one whose ``id`` is null. The
    tenant is ``bindings.session.tenant_id``. Raises SchemaError / UnsafeIdentifierError for
    identifiers outside the schema; never touches a store.
    """
    params = ParamStore()
    labels = hop_labels(pattern, schema)
    n = len(pattern.edge_sequence)
    by_node = _split_predicates(pattern)
    tenants = params.add([bindings.session.tenant_id, GLOBAL_TENANT], "tenants")
    head, key_conds = _seed_match(pattern, bindings, schema, params, caps)
    seed_ok = _node_where(0, labels[0], by_node.get(0, []), bindings, schema, params, tenants, caps)
    if -1 in by_node:
        seed_ok.append("false")
    max_visited = params.add(pattern.max_visited, "max_visited")
    cap = params.add(pattern.max_visited + 1, "expand_cap")
    lines = [head] + (["WHERE " + " AND ".join(key_conds)] if key_conds else [])
    lines += [
        f"WITH n0, ({' AND '.join(seed_ok)}) AS ok",
        "WITH count(n0) AS visited, min(CASE WHEN ok THEN n0.`id` END) AS seed_id, "
        "collect(CASE WHEN ok THEN [n0, [n0.`id`]] END) AS reached",
        f"WITH visited, seed_id, CASE WHEN visited > {max_visited} THEN [] ELSE reached END AS frontier",
    ]
    total = "visited + expanded"  # the count after a hop
    edge_known = "" if bindings.timeless else _edge_where(bindings, params)
    for k in range(1, n + 1):
        conds = _node_where(k, labels[k], by_node.get(k, []), bindings, schema, params, tenants, caps)
        lines += _hop_lines(k, k == n, pattern, labels[k], conds, schema, caps, cap, edge_known)
        if k < n:  # one projection per hop (the frontier list is copied by every projection)
            lines.append(
                f"WITH {total} AS visited, seed_id, "
                f"CASE WHEN {total} > {max_visited} THEN [] ELSE reached END AS frontier"
            )

    t = f"n{n}"
    target = labels[n][0]
    lines += [
        f"UNWIND CASE WHEN {total} > {max_visited} OR size(reached) = 0 THEN [null] ELSE reached END AS t",
        f"WITH {total} AS visited, seed_id, t[0] AS {t}, t[1] AS path",
    ]
    order = []
    for ob in pattern.order_by:
        ident = cypher_identifier(schema, "property", ob.property, target)
        order += [f"{t}.{ident} IS NULL", f"{t}.{ident} {ob.direction.upper()}"]
    order.append(f"{t}.`id` ASC")
    lines.append("ORDER BY " + ", ".join(order))
    lines.append("LIMIT " + params.add(pattern.limit + 1, "limit"))
    idents = [cypher_identifier(schema, "property", p, target) for p in row_properties(pattern, schema)]
    props = ", ".join(f"{i}: {t}.{i}" for i in idents)
    lines.append(
        f"RETURN {t}.`id` AS id, labels({t})[0] AS label, {{{props}}} AS props, path, visited, seed_id"
    )
    return "\n".join(lines), params.params
