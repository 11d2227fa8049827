"""Entities -> the typed chunk FilterTree, driven by the graph's ``:FilterMapping`` node.

The mapping is data (``<pack>/filters.yaml``; see the comments there), written into the graph
with :func:`load_filter_mapping` / :func:`write_filter_mapping` and read back at query time with
:func:`read_filter_mapping`. :func:`compile_filter` turns resolved entities plus the session into
one conjunction: entity clauses in mapping order, then the always-on clauses.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import threading
import weakref
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hopweave.errors import ConfigError, FilterError, InputError, TenantError
from hopweave.fileio import read_yaml
from hopweave.models.common import Session, to_datetime
from hopweave.models.filters import And, Eq, FilterTree, In, IsEmpty, Or, Range, and_, check_fields
from hopweave.models.instants import format_utc
from hopweave.models.keys import with_key_hints
from hopweave.models.schema import GLOBAL_TENANT, GraphSchema
from hopweave.understand.models import Entity

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.base import GraphStore, Node

FILTER_MAPPING_ID = "FILTER_MAPPING"
Scalar = Union[str, int, float, bool]


class EntityRule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    entity: str
    field: str
    #: Take the values from this (list) property of the entity's graph node instead of its value.
    node_property: Optional[str] = None


_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"


class InForce(BaseModel):
    """"In force at as_of": ``from <= as_of < until``, evaluated against the request's as_of.

    An absent ``from`` means in force since ever; an absent ``until`` means open-ended, but only
    while ``status`` (when named) is ``active``: a document retired without a ``until`` date is
    never in force, one retired with a ``until`` date was in force in its interval.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    from_: str = Field(default="valid_from", alias="from", pattern=_NAME)
    until: str = Field(default="valid_until", pattern=_NAME)
    status: Optional[str] = Field(default=None, pattern=_NAME)
    active: Scalar = "active"

    @property
    def fields(self) -> tuple[str, ...]:
        return (self.from_, self.until) + ((self.status,) if self.status else ())

    def clause(self, at: str) -> FilterTree:
        """The clause at ``at`` (an RFC 3339 instant)."""
        open_ended: FilterTree = IsEmpty(field=self.until)
        if self.status:
            open_ended = And(clauses=(open_ended, Eq(field=self.status, value=self.active)))
        return And(clauses=(
            Or(clauses=(IsEmpty(field=self.from_), Range(field=self.from_, lte=at))),
            Or(clauses=(Range(field=self.until, gt=at), open_ended)),
        ))


class AlwaysOn(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    field: Optional[str] = None
    value: Optional[Scalar] = None
    #: A session attribute: built in (tenant_id, customer_id, region, channel, agent_id, locale)
    #: or declared by the domain pack (``session_attributes``, e.g. ``state``).
    session: Optional[str] = Field(default=None, pattern=_NAME)
    #: Documents in force at the request's as_of (the clause owns its date and status fields).
    in_force: Optional[InForce] = None
    required: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> "AlwaysOn":
        if self.in_force is not None:
            if self.field is not None or self.value is not None or self.session is not None:
                raise ValueError("an in_force clause takes no field / value / session")
            return self
        if self.field is None:
            raise ValueError("an always-on clause needs a field (or is an in_force clause)")
        if (self.value is None) == (self.session is None):
            raise ValueError(f"always-on clause on {self.field!r} needs exactly one of value / session")
        return self

    @property
    def fields(self) -> tuple[str, ...]:
        """The chunk fields this clause owns."""
        return self.in_force.fields if self.in_force is not None else (str(self.field),)


class FilterMapping(BaseModel):
    """Which entity type becomes which chunk field, and the always-on clauses."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(ge=1)
    entities: tuple[EntityRule, ...] = ()
    always_on: tuple[AlwaysOn, ...] = ()
    #: Chunk fields where a document without the field applies to every value ("absent means
    #: any"): a clause ``field = v`` / ``field in [...]`` becomes ``field is empty or field = v``,
    #: so one general document serves every group beside the group-specific ones.
    absent_means_any: tuple[str, ...] = ()

    def check(self, schema: GraphSchema) -> "FilterMapping":
        """Validate names against the schema. Returns self.

        Raises:
            SchemaError: an entity type is not a label, or a node_property is not declared on it.
            FilterError: a field is not a chunk field.
        """
        fields = schema.filter_fields()
        for r in self.entities:
            schema.label(r.entity)
            if r.node_property is not None:
                schema.prop(r.entity, r.node_property)
        used = [r.field for r in self.entities] + [f for a in self.always_on for f in a.fields]
        bad = sorted(set(used) - fields)
        if bad:
            raise FilterError(f"filter mapping names non-chunk field(s) {bad}; chunk fields: {sorted(fields)}")
        unknown = [f for f in self.absent_means_any if f not in fields]
        if unknown:
            near = {f: difflib.get_close_matches(f, sorted(fields), n=1) for f in unknown}
            hints = "; ".join(f"{f!r}" + (f" (did you mean {n[0]!r}?)" if n else "") for f, n in near.items())
            raise FilterError(f"absent_means_any names non-chunk field(s) {hints}; chunk fields: {sorted(fields)}")
        reserved = sorted(set(self.absent_means_any) & ({"tenant_id"} | {
            f for a in self.always_on if a.in_force is not None for f in a.fields}))
        if reserved:
            raise FilterError(f"absent_means_any cannot name {reserved}: every chunk has its tenant and "
                              "the in_force clause already treats an absent date as open")
        types = schema.chunk_field_map
        for a in self.always_on:
            if a.in_force is None:
                continue
            for f in (a.in_force.from_, a.in_force.until):
                if types[f].type not in ("date", "datetime"):
                    raise FilterError(f"in_force names {f!r}, a {types[f].type} chunk field: "
                                      "use date/datetime fields (valid_from, valid_until)")
        return self

    @property
    def in_force(self) -> Optional[InForce]:
        """The in-force clause, if the mapping has one (documents as of the request's as_of)."""
        return next((a.in_force for a in self.always_on if a.in_force is not None), None)

    @property
    def revision(self) -> str:
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:12]

    def canonical_json(self) -> str:
        """The mapping as sorted compact JSON (``absent_means_any`` only when set, so a mapping
        without it keeps its revision)."""
        data = self.model_dump(mode="json", by_alias=True)
        if not self.absent_means_any:
            data.pop("absent_means_any")
        return json.dumps(data, sort_keys=True, separators=(",", ":"))


def read_mapping_file(path: str | Path) -> FilterMapping:
    """Parse a mapping file (a pack's ``filters.yaml``).

    Raises:
        InputError: missing or unparsable file. ConfigError: invalid mapping.
    """
    p = Path(path)
    return parse_mapping(read_yaml(p, "filter mapping file"), p)


def parse_mapping(data: Any, source: str | Path) -> FilterMapping:
    """A parsed mapping file (``data``, read from ``source``) as a FilterMapping. Raises
    ConfigError naming ``source`` when it is invalid."""
    try:
        return FilterMapping.model_validate(data)
    except Exception as exc:
        raise ConfigError(f"filter mapping {source} is invalid: {with_key_hints(exc, FilterMapping)}") from exc


def filter_mapping_id(domain: str | None = None) -> str:
    """The FilterMapping node id of a domain (``FILTER_MAPPING_<domain>``; the legacy single
    mapping without a domain is ``FILTER_MAPPING``)."""
    return f"{FILTER_MAPPING_ID}_{domain}" if domain else FILTER_MAPPING_ID


def filter_mapping_node(
    schema: GraphSchema, mapping: FilterMapping, domain: str | None = None
) -> "Node":
    """The FilterMapping node (write it as tenant ``_global``; e.g. in a bulk load) for
    ``mapping`` (read a pack's ``filters.yaml`` with :func:`read_mapping_file`), validated
    against ``schema``.

    Raises:
        SchemaError / FilterError: the mapping names something outside the schema.
    """
    from hopweave.graph.write_rules import GatedNode  # stores refuse an ungated FilterMapping node

    m = mapping.check(schema)
    props: dict[str, Any] = {"version": m.version, "definition": m.canonical_json()}
    if domain:
        props["domain"] = domain
    return GatedNode(id=filter_mapping_id(domain), label="FilterMapping", props=props)


def write_filter_mapping(store: "GraphStore", mapping: FilterMapping) -> str:
    """Validate ``mapping`` against the store's schema and write it as the FilterMapping node
    (tenant ``_global``). Returns the mapping's revision."""
    store.write(GLOBAL_TENANT, nodes=[filter_mapping_node(store.schema, mapping)])
    return mapping.revision


def load_filter_mapping(store: "GraphStore", path: str | Path) -> str:
    """Read the mapping file (a pack's ``filters.yaml``) and :func:`write_filter_mapping` it."""
    return write_filter_mapping(store, read_mapping_file(path))


def always_on_clauses(mapping: FilterMapping, session: Session,
                      as_of: datetime | date | str | None = None) -> list[FilterTree]:
    """The mapping's always-on clauses for ``session``, in declared order: the one place they are
    computed, for the engine's filter and for every other entry point (agent tool, agentic
    rounds). A ``session`` clause whose attribute is empty is skipped unless required; a
    list-valued attribute is a set (``field in [...]``, sorted). The
    ``in_force`` clause is evaluated at ``as_of``; without one it keeps today's documents:
    ``status = active`` (and the index adds ``version = current``).

    Raises TenantError when a required session attribute (the tenant) is missing."""
    clauses: list[FilterTree] = []
    for a in mapping.always_on:
        if a.in_force is not None:
            if as_of is not None:
                clauses.append(a.in_force.clause(instant(as_of)))
            elif a.in_force.status:
                clauses.append(Eq(field=a.in_force.status, value=a.in_force.active))
            continue
        given = (a.value,) if a.value is not None else session.attribute_values(a.session or "")
        if not given:
            if a.required:
                raise TenantError(f"the session has no {a.session}; the {a.field} filter clause is required")
            continue
        leaf: Eq | In = (Eq(field=str(a.field), value=given[0]) if len(given) == 1
                         else In(field=str(a.field), values=given))
        clauses.append(any_if_absent(mapping, leaf))
    return clauses


def any_if_absent(mapping: FilterMapping, clause: Eq | In) -> FilterTree:
    """``clause``, or ``is_empty(field) or clause`` when the mapping declares its field
    ``absent_means_any`` (a document without the field applies to every value)."""
    if clause.field not in mapping.absent_means_any:
        return clause
    return Or(clauses=(IsEmpty(field=clause.field), clause))


#: store object -> tenant -> ((metagraph revision, FilterMapping writes), mapping)
_MAPPINGS: "weakref.WeakKeyDictionary[GraphStore, dict[str, tuple[tuple[str, int], FilterMapping]]]" = \
    weakref.WeakKeyDictionary()
_MAPPINGS_LOCK = threading.Lock()


def read_filter_mapping(store: "GraphStore", tenant_id: str) -> FilterMapping:
    """The FilterMapping node's mapping, as visible to ``tenant_id``: parsed once per (store
    object, tenant, metagraph revision, FilterMapping writes through that object), so every
    caller (understanding, agentic rounds, the agent tool) shares one parse; the returned
    mapping is shared, never to be modified.

    Raises:
        ConfigError: the graph has no (valid) FilterMapping node.
    """
    key = (store.metagraph_revision(), store.data_generation(("FilterMapping",)))
    with _MAPPINGS_LOCK:
        per_store = _MAPPINGS.setdefault(store, {})
        hit = per_store.get(tenant_id)
    if hit is not None and hit[0] == key:
        return hit[1]
    mapping = _parse_filter_mapping(store, tenant_id)
    with _MAPPINGS_LOCK:
        per_store[tenant_id] = (key, mapping)
    return mapping


def _parse_filter_mapping(store: "GraphStore", tenant_id: str) -> FilterMapping:
    domain = store.tenant_domains.get(tenant_id)
    node = store.get_node(tenant_id, filter_mapping_id(domain))
    if node is None and domain is not None:
        node = store.get_node(tenant_id, FILTER_MAPPING_ID)
    if node is None or node.label != "FilterMapping":
        raise ConfigError(
            f"the graph has no FilterMapping node for tenant {tenant_id!r}: give the tenant's pack a "
            "filters.yaml and load it with `hopweave load PACK --store DIR`"
        )
    raw = node.props.get("definition")
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
        return FilterMapping.model_validate(data)
    except Exception as exc:
        raise ConfigError(f"the FilterMapping node's definition is invalid: {exc}") from exc


def _entity_values(
    rule: EntityRule, e: Entity, store: "GraphStore | None", tenant_id: str, notes: list[str]
) -> list[Scalar]:
    if rule.node_property is None:
        return [e.value]
    if store is None or e.node_id is None:
        notes.append(f"{e.type} {e.value!r}: no graph node, so no {rule.field} clause")
        return []
    node = store.get_node(tenant_id, e.node_id)
    raw: Any = node.props.get(rule.node_property) if node is not None else None
    vals = [raw] if isinstance(raw, (str, int, float, bool)) else list(raw or ())
    if not vals:
        notes.append(f"{e.type} {e.value!r} has no {rule.node_property}, so no {rule.field} clause")
    return [v for v in vals if isinstance(v, (str, int, float, bool))]


def compile_filter(
    mapping: FilterMapping,
    entities: Iterable[Entity],
    session: Session,
    store: "GraphStore | None" = None,
    schema: GraphSchema | None = None,
    unscoped: Iterable[str] = (),
    as_of: datetime | str | None = None,
) -> tuple[FilterTree, list[str]]:
    """Entities + session -> ``(filter tree, notes)``.

    Clause order: entity fields in the order of the mapping's rules, then ``is_empty`` clauses
    for the ``unscoped`` entity types (authoritative attributes with no value on record: no
    segment-specific document), then the always-on clauses in declared order. One value ->
    ``eq``; several -> ``in``; on an ``absent_means_any`` field either is ``is_empty or ...``
    (:func:`any_if_absent`). Always-on ``session`` clauses read built-in or pack-declared
    session attributes; an ``in_force`` clause is evaluated at ``as_of`` (:func:`instant`).

    Raises:
        TenantError: a required session attribute (the tenant) is missing.
        FilterError: the tree names a field outside the schema's chunk fields, or the mapping
            has an in_force clause and no ``as_of`` was given.
    """
    notes: list[str] = []
    owned = {f for a in mapping.always_on for f in a.fields}
    values: dict[str, list[Scalar]] = {}
    ents = list(entities)
    for rule in mapping.entities:
        for e in ents:
            if e.type != rule.entity:
                continue
            if rule.field in owned:
                if e.source == "utterance":
                    notes.append(f"{e.type} {e.value!r} from the utterance is not a filter: "
                                 f"{rule.field} is always set from the session")
                continue
            bucket = values.setdefault(rule.field, [])
            for v in _entity_values(rule, e, store, session.tenant_id, notes):
                if v not in bucket:
                    bucket.append(v)
    clauses: list[FilterTree] = []
    for f, vals in values.items():
        if len(vals) == 1:
            clauses.append(any_if_absent(mapping, Eq(field=f, value=vals[0])))
        elif vals:
            clauses.append(any_if_absent(mapping, In(field=f, values=tuple(vals))))
    empty = set(unscoped)
    for f in dict.fromkeys(r.field for r in mapping.entities if r.entity in empty):
        if f not in values and f not in owned:
            clauses.append(IsEmpty(field=f))
    if mapping.in_force is not None and as_of is None:
        raise FilterError("the filter mapping's in_force clause needs the request's as_of")
    clauses.extend(always_on_clauses(mapping, session, as_of))
    tree = and_(*clauses)
    if tree is None:  # pragma: no cover - tenant_id is always on in any sane mapping
        raise FilterError("the filter mapping produced no clauses; add always-on clauses (tenant_id)")
    if schema is not None:
        check_fields(tree, schema.filter_fields())
    return tree, notes



def instant(as_of: datetime | date | str) -> str:
    """``as_of`` as the RFC 3339 UTC instant the in-force clause compares with, by the engine's
    one as_of rule (:func:`~hopweave.models.common.to_datetime`: a bare date is the end of that
    day, ``2026-05-12`` -> ``2026-05-12T23:59:59Z``; a naive datetime is UTC).

    Raises:
        InputError: not an ISO date/datetime.
    """
    dt = to_datetime(as_of)
    if dt is None:
        raise InputError("as_of is required for the in-force clause")
    return format_utc(dt)
