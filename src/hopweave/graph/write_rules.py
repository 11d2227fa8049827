"""Write validation shared by every GraphStore backend.

:class:`WriteValidator` checks one node or edge write against the declared schema and the tenant
rules of :meth:`hopweave.graph.base.GraphStore.write`, and returns the normalised properties to
store. Backends call it before touching storage, so a rejected write changes nothing.

Property values are stored as JSON scalars: ``str``, ``int``, ``float``, ``bool``, ``list[str]``;
``date`` as ``YYYY-MM-DD``, ``datetime`` as ``YYYY-MM-DDTHH:MM:SS`` (naive UTC; ``date`` /
``datetime`` objects are converted), ``json`` as a canonical JSON string (dicts/lists are
serialised). Strings in one format compare lexicographically in time order, which is what
relative-time predicates rely on. A ``None`` value removes the property (Cypher ``SET p = null``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Callable, Sequence, cast

from hopweave.errors import InputError, MetagraphWriteError, PatternValidationError, SchemaError, TenantError
from hopweave.graph._persist import loads_json
from hopweave.graph.base import Edge, Node
from hopweave.models.instants import (
    format_date,
    format_datetime,
    is_date_text,
    is_datetime_text,
    parse_instant,
)
from hopweave.models.limits import MAX_ID_CHARS, MAX_LIST_ITEMS, MAX_PROPERTY_CHARS
from hopweave.models.schema import GLOBAL_TENANT, SAFE_IDENTIFIER, GraphSchema, PropertySpec

_ID_MAX = MAX_ID_CHARS

#: Node attribute key holding the label in the networkx store (never a schema property).
LABEL_KEY = "label"

_Missing = object()

#: Labels of the metagraph: only :class:`GatedNode` instances (made by the gated path) may write them.
METAGRAPH_LABELS = frozenset({"GoalType", "TraversalPattern", "FilterMapping"})
#: Gate rules that need the pattern's GoalType (run by gate_write, which has it), not re-run here.
_GOAL_RULES = frozenset({"rule_goal", "rule_section", "rule_pii_grants", "rule_pii_predicates", "rule_pii_order_by"})


@dataclass(frozen=True)
class GatedNode(Node):
    """A metagraph node that went through its gate. Made only by
    :func:`hopweave.graph.metagraph_io.gated_items` (GoalType, TraversalPattern) and
    :func:`hopweave.understand.filter_map.filter_mapping_node` (FilterMapping, checked against the
    schema there); ``dataclasses.replace`` keeps the class (e.g. to add a domain tag)."""


def check_metagraph_node(schema: GraphSchema, node: Node) -> None:
    """Refuse a metagraph node written outside the gated path, and re-run the schema, bounds and
    identifier gates on a TraversalPattern's definition (a second wall: a forged GatedNode still
    cannot store a pattern past the bounds). Raises MetagraphWriteError."""
    if not isinstance(node, GatedNode):
        raise MetagraphWriteError(
            str(node.id), "label",
            f"{node.label} nodes cannot be written directly (they would skip the pattern gates)",
            "write goals and patterns with hopweave.graph.metagraph_io.write_metagraph (or bulk-load "
            "the items of metagraph_io.gated_items); a FilterMapping with understand.filter_map",
        )
    if node.label != "TraversalPattern":
        return
    from hopweave.graph.gates import _pattern_errors, parse_pattern  # the gates sit above this module

    problems: list[Exception]
    try:
        problems = list(_pattern_errors(parse_pattern(json.loads(str(node.props.get("definition")))),
                                        schema, None, _GOAL_RULES))
    except (ValueError, PatternValidationError) as exc:
        problems = [exc]
    if problems:
        raise MetagraphWriteError(str(node.id), "definition", f"the stored definition fails a gate: {problems[0]}",
                                  "write the pattern through metagraph_io.write_metagraph")


def goal_from_props(props: dict[str, Any] | None) -> Any:
    """The GoalType a stored node's properties define (``label`` GoalType, a ``definition`` that
    parses), else None: what the stores hand :func:`check_metagraph_batch` as a stored goal."""
    if not props or props.get(LABEL_KEY) != "GoalType" or not props.get("definition"):
        return None
    from hopweave.models.metagraph import GoalType

    try:
        return GoalType.model_validate_json(str(props["definition"]))
    except ValueError:
        return None


def check_metagraph_batch(schema: GraphSchema, nodes: Sequence[Node],
                          stored_goal: Callable[[str], Any]) -> None:
    """Every gate, the goal-level ones included, for the TraversalPattern nodes of one write
    (a node that is not a :class:`GatedNode` is refused by :func:`check_metagraph_node`):
    each is checked against its GoalType from the same write, else the stored one
    (``stored_goal(name)``: a GoalType or None), so a pattern cannot grant itself PII or name a
    section its goal lacks however its node was made; a pattern whose goal is neither written nor
    stored is refused. Raises MetagraphWriteError (nothing is written then)."""
    metas = [n for n in nodes if isinstance(n, GatedNode) and n.label in ("GoalType", "TraversalPattern")]
    if not any(n.label == "TraversalPattern" for n in metas):
        return
    from hopweave.graph.gates import _pattern_errors, parse_pattern  # the gates sit above this module
    from hopweave.models.metagraph import GoalType

    written: dict[str, Any] = {}
    for n in metas:
        if n.label == "GoalType":
            try:
                g = GoalType.model_validate_json(str(n.props.get("definition")))
            except ValueError as exc:
                raise MetagraphWriteError(str(n.id), "definition", f"the GoalType definition does not parse: {exc}",
                                          "write goals with metagraph_io.write_metagraph") from None
            written[g.name] = g
    for n in metas:
        if n.label != "TraversalPattern":
            continue
        try:
            p = parse_pattern(json.loads(str(n.props.get("definition"))))
        except (ValueError, PatternValidationError) as exc:
            raise MetagraphWriteError(str(n.id), "definition", f"the stored definition fails a gate: {exc}",
                                      "write the pattern through metagraph_io.write_metagraph") from None
        goal = written.get(p.goal) or stored_goal(p.goal)
        if goal is None:
            raise MetagraphWriteError(str(n.id), "goal", f"goal {p.goal!r} is neither written with the pattern "
                                      "nor stored", "write its GoalType together with its patterns")
        problems = list(_pattern_errors(p, schema, goal))
        if problems:
            raise MetagraphWriteError(str(n.id), "definition", f"the pattern fails a gate of goal {goal.name}: "
                                      f"{problems[0]}", "fix the pattern (or the goal's grants) and write them "
                                      "through metagraph_io.write_metagraph")


def _conv_str(v: Any) -> Any:
    return v if isinstance(v, str) and len(v) <= MAX_PROPERTY_CHARS else _Missing


def _conv_int(v: Any) -> Any:
    return v if isinstance(v, int) and not isinstance(v, bool) else _Missing


def _conv_float(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return _Missing
    f = float(v)
    return f if math.isfinite(f) else _Missing


def _conv_bool(v: Any) -> Any:
    return v if isinstance(v, bool) else _Missing


def _conv_date(v: Any) -> Any:
    if isinstance(v, str):
        return v if is_date_text(v) else _Missing
    if isinstance(v, date):
        return format_date(v)
    return _Missing


def _conv_datetime(v: Any) -> Any:
    if isinstance(v, str):
        return v if is_datetime_text(v) else _Missing
    if isinstance(v, (date, datetime)):
        try:
            return format_datetime(parse_instant(v, "value"))
        except InputError:
            return _Missing
    return _Missing


def _conv_list(v: Any) -> Any:
    if (isinstance(v, (list, tuple)) and len(v) <= MAX_LIST_ITEMS
            and all(isinstance(x, str) and len(x) <= MAX_PROPERTY_CHARS for x in v)):
        return list(v)
    return _Missing


def _conv_json(v: Any) -> Any:
    if isinstance(v, str):
        if len(v) > MAX_PROPERTY_CHARS:
            return _Missing
        try:
            loads_json(v)  # what json.loads accepts, parsed by orjson when it can (journal replay)
        except ValueError:
            return _Missing
        return v
    try:
        text = json.dumps(v, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return _Missing
    return text if len(text) <= MAX_PROPERTY_CHARS else _Missing


CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "str": _conv_str,
    "int": _conv_int,
    "float": _conv_float,
    "bool": _conv_bool,
    "date": _conv_date,
    "datetime": _conv_datetime,
    "list[str]": _conv_list,
    "json": _conv_json,
}

_HINT = {
    "str": f"a string of at most {MAX_PROPERTY_CHARS:,} characters",
    "float": "a finite number (no NaN or infinity)",
    "date": "an ISO date string YYYY-MM-DD (a real day, years 0001-9999)",
    "datetime": "an ISO datetime string YYYY-MM-DDTHH:MM:SS (naive UTC, a real instant, years 0001-9999)",
    "list[str]": f"a list of at most {MAX_LIST_ITEMS:,} strings of at most {MAX_PROPERTY_CHARS:,} characters",
    "json": f"a JSON string or a JSON-serialisable dict/list (no NaN), at most {MAX_PROPERTY_CHARS:,} characters",
}


def check_node_id(node_id: Any) -> str:
    """Node ids are non-empty strings of printable characters, at most 256 long."""
    if not isinstance(node_id, str) or not node_id or len(node_id) > _ID_MAX or not node_id.isprintable():
        raise InputError(
            f"node id {node_id!r:.80} must be a non-empty printable string of at most {_ID_MAX} chars"
        )
    return node_id


#: Python types stored as-is for a schema type (the fast path; anything else goes through the converter).
_FAST_TYPES: dict[str, type | None] = {"str": str, "int": int, "bool": bool}  # float: finiteness check


class WriteValidator:
    """Validates node and edge writes against a schema (precomputed per label, fast for bulk)."""

    def __init__(self, schema: GraphSchema) -> None:
        self.schema = schema
        # label -> property -> (spec, converter, fast python type or None)
        self._label_props: dict[str, dict[str, tuple[PropertySpec, Callable[[Any], Any], type | None]]] = {}
        self._required: dict[str, tuple[str, ...]] = {}
        for lab in schema.labels:
            self._label_props[lab.name] = {
                n: (p, CONVERTERS[p.type], _FAST_TYPES.get(p.type))
                for n, p in lab.props.items()
                if n not in ("id", "tenant_id")
            }
            self._required[lab.name] = tuple(
                n for n, p in lab.props.items() if p.required and n not in ("id", "tenant_id")
            )
        self._shared = {lab.name for lab in schema.labels if lab.shared}
        self._rels: dict[str, tuple[frozenset[str], frozenset[str], dict[str, Any]]] = {
            r.name: (
                frozenset(r.from_labels),
                frozenset(r.to_labels),
                {p.name: (p, CONVERTERS[p.type], _FAST_TYPES.get(p.type)) for p in r.props.values()},
            )
            for r in schema.relationships
        }

    # ---- properties ---------------------------------------------------------------------
    @staticmethod
    def _props(
        where: Callable[[], str], specs: dict[str, Any], props: dict[str, Any]
    ) -> tuple[dict[str, Any], list[str]]:
        out: dict[str, Any] = {}
        removed: list[str] = []
        for k, v in props.items():
            ent = specs.get(k)
            if ent is not None and type(v) is ent[2] and (type(v) is not str or len(v) <= MAX_PROPERTY_CHARS):
                # fast path: already the stored type
                out[k] = v
                continue
            if k == "id" or k == "tenant_id":
                continue
            if ent is None:
                if not isinstance(k, str) or not SAFE_IDENTIFIER.match(k):
                    raise SchemaError(f"{where()}: property name {k!r} is not a safe identifier")
                raise SchemaError(
                    f"{where()}: property {k!r} is not declared in the schema; declared: {sorted(specs)}"
                )
            if v is None:
                removed.append(k)
                continue
            conv = ent[1](v)
            if conv is _Missing:
                spec = ent[0]
                raise SchemaError(
                    f"{where()}: property {k!r} must be {_HINT.get(spec.type, spec.type)}, got {v!r:.120}"
                )
            out[k] = conv
        return out, removed

    # ---- stored values (doctor --deep) -----------------------------------------------------
    def stored_node_problem(self, nid: str, attrs: dict[str, Any]) -> str | None:
        """What is wrong with a stored node (its attribute dict, with ``label`` and
        ``tenant_id``) by the rules a write of it would pass: the label, the tenant rule for it,
        each property declared and already in its stored form (a date a real ``YYYY-MM-DD``
        ...). None when nothing is. The metagraph gates are checked separately (doctor)."""
        label = attrs.get(LABEL_KEY)
        specs = self._label_props.get(label)  # type: ignore[arg-type]
        if specs is None:
            return f"node {nid!r}: label {label!r} is not in the schema"
        tenant = attrs.get("tenant_id")
        if (label in self._shared) != (tenant == GLOBAL_TENANT):
            return f"node {nid!r} ({label}): tenant_id {tenant!r} is not valid for its label"
        for k, v in attrs.items():
            if k in (LABEL_KEY, "tenant_id"):
                continue
            problem = self._value_problem(specs.get(k), k, v)
            if problem:
                return f"node {nid!r} ({label}): {problem}"
        return None

    def stored_edge_problem(self, src: str, rel: str, dst: str, props: dict[str, Any]) -> str | None:
        """What is wrong with a stored edge's properties by the write rules (None: nothing)."""
        spec = self._rels.get(rel)
        if spec is None:
            return f"edge ({src!r})-[:{rel}]->({dst!r}): relationship type not in the schema"
        for k, v in props.items():
            problem = self._value_problem(spec[2].get(k), k, v)
            if problem:
                return f"edge ({src!r})-[:{rel}]->({dst!r}): {problem}"
        return None

    @staticmethod
    def _value_problem(ent: Any, k: str, v: Any) -> str | None:
        if ent is None:
            return f"property {k!r} is not declared in the schema"
        conv = ent[1](v)
        if conv is _Missing or conv != v or type(conv) is not type(v):
            return f"property {k!r} must be {_HINT.get(ent[0].type, ent[0].type)}, holds {v!r:.80}"
        return None

    # ---- nodes --------------------------------------------------------------------------
    def node(
        self, tenant_id: str, node: Node, existing: dict[str, Any] | None
    ) -> tuple[dict[str, Any], list[str]]:
        """Validate a node upsert by ``tenant_id``; ``existing`` is the stored node's
        properties (with ``label``) or None. Returns (properties to set incl. tenant_id,
        property names to remove). Raises SchemaError, InputError or TenantError."""
        nid, label, props = node.id, node.label, node.props
        if type(nid) is not str or not nid or len(nid) > _ID_MAX or not nid.isprintable():
            check_node_id(nid)
        specs = self._label_props.get(label)
        if specs is None:
            self.schema.label(label)  # raises the helpful SchemaError / UnsafeIdentifierError
            raise SchemaError(f"unknown label {label!r}")  # pragma: no cover
        if label in METAGRAPH_LABELS:
            check_metagraph_node(self.schema, node)
        if (label in self._shared) != (tenant_id == GLOBAL_TENANT):
            if tenant_id != GLOBAL_TENANT:
                raise TenantError(
                    f"node {nid!r}: label {label} is shared across tenants; only tenant "
                    f"{GLOBAL_TENANT!r} may write it (write vocabulary/metagraph as {GLOBAL_TENANT!r})"
                )
            raise TenantError(
                f"node {nid!r}: label {label} is tenant data; write it as its tenant, not {GLOBAL_TENANT!r}"
            )
        if "tenant_id" in props and props["tenant_id"] != tenant_id:
            raise TenantError(
                f"node {nid!r} carries tenant_id {props['tenant_id']!r} but is written by tenant {tenant_id!r}"
            )
        if LABEL_KEY in props and LABEL_KEY not in specs:
            raise SchemaError(f"node {nid!r}: {LABEL_KEY!r} is reserved; pass the label as Node.label")
        if existing is not None:
            if existing.get("tenant_id") != tenant_id:
                raise TenantError(f"node id {nid!r} already exists and belongs to another tenant")
            if existing.get(LABEL_KEY) != label:
                raise InputError(
                    f"node {nid!r} exists with label {existing.get(LABEL_KEY)!r}; it cannot become "
                    f"{label!r} (node ids are unique in the store; use another id)"
                )
        out, removed = self._props(lambda: f"node {nid!r} ({label})", specs, props)
        if existing is None:
            for req in self._required[label]:
                if req not in out:
                    raise SchemaError(f"node {nid!r} ({label}) lacks required property {req!r}")
        out["tenant_id"] = tenant_id
        return out, removed

    # ---- edges --------------------------------------------------------------------------
    def edge(
        self,
        tenant_id: str,
        edge: Edge,
        src: dict[str, Any] | None,
        dst: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Validate an edge upsert; ``src``/``dst`` are the endpoint nodes' stored properties
        (with ``label``), None when missing. Returns the properties to set."""
        rel = self._rels.get(edge.type)
        if rel is None:
            self.schema.rel(edge.type)
            raise SchemaError(f"unknown relationship type {edge.type!r}")  # pragma: no cover

        def where() -> str:
            return f"edge ({edge.src!r})-[:{edge.type}]->({edge.dst!r})"

        for end, node in (("source", src), ("target", dst)):
            if node is None:
                raise InputError(f"{where()}: {end} node does not exist (write nodes before their edges)")
            nt = node["tenant_id"]
            if nt != tenant_id and nt != GLOBAL_TENANT:
                raise TenantError(f"{where()}: {end} node is not visible to tenant {tenant_id!r}")
        src, dst = cast(dict[str, Any], src), cast(dict[str, Any], dst)
        if src[LABEL_KEY] not in rel[0]:
            raise SchemaError(f"{where()}: {edge.type} goes from {sorted(rel[0])}, not from {src[LABEL_KEY]}")
        if dst[LABEL_KEY] not in rel[1]:
            raise SchemaError(f"{where()}: {edge.type} goes to {sorted(rel[1])}, not to {dst[LABEL_KEY]}")
        if not edge.props:
            return {}
        props, _removed = self._props(where, rel[2], edge.props)
        return props
