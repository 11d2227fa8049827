"""Entities -> the typed chunk FilterTree, driven by the graph's ``:FilterMapping`` node.

The mapping is data (``<pack>/filters.yaml``; see the comments there), written into the graph
with :func:`load_filter_mapping` / :func:`write_filter_mapping` and read back at query time with
:func:`read_filter_mapping`. :func:`compile_filter` turns resolved entities plus the session into
one conjunction: entity clauses in mapping order, then the always-on clauses.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hopweave.errors import ConfigError, FilterError, TenantError
from hopweave.fileio import read_yaml
from hopweave.models.common import Session
from hopweave.models.filters import Eq, FilterTree, In, IsEmpty, and_, check_fields
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


class AlwaysOn(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    field: str
    value: Optional[Scalar] = None
    #: A session attribute: built in (tenant_id, customer_id, region, channel, agent_id, locale)
    #: or declared by the domain pack (``session_attributes``, e.g. ``state``).
    session: Optional[str] = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    required: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> "AlwaysOn":
        if (self.value is None) == (self.session is None):
            raise ValueError(f"always-on clause on {self.field!r} needs exactly one of value / session")
        return self


class FilterMapping(BaseModel):
    """Which entity type becomes which chunk field, and the always-on clauses."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(ge=1)
    entities: tuple[EntityRule, ...] = ()
    always_on: tuple[AlwaysOn, ...] = ()

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
        used = [r.field for r in self.entities] + [a.field for a in self.always_on]
        bad = sorted(set(used) - fields)
        if bad:
            raise FilterError(f"filter mapping names non-chunk field(s) {bad}; chunk fields: {sorted(fields)}")
        return self

    @property
    def revision(self) -> str:
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:12]

    def canonical_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))


def read_mapping_file(path: str | Path | None = None) -> FilterMapping:
    """Parse a mapping file (default: the example pack's ``filters.yaml``).

    Raises:
        InputError: missing or unparsable file. ConfigError: invalid mapping.
    """
    if path is None:
        from hopweave.paths import example_pack_dir

        path = example_pack_dir() / "filters.yaml"
    p = Path(path)
    data = read_yaml(p, "filter mapping file")
    try:
        return FilterMapping.model_validate(data)
    except Exception as exc:
        raise ConfigError(f"filter mapping {p} is invalid: {exc}") from exc


def filter_mapping_id(domain: str | None = None) -> str:
    """The FilterMapping node id of a domain (``FILTER_MAPPING_<domain>``; the legacy single
    mapping without a domain is ``FILTER_MAPPING``)."""
    return f"{FILTER_MAPPING_ID}_{domain}" if domain else FILTER_MAPPING_ID


def filter_mapping_node(
    schema: GraphSchema, mapping: FilterMapping | None = None, domain: str | None = None
) -> "Node":
    """The FilterMapping node (write it as tenant ``_global``; e.g. in a bulk load) for
    ``mapping`` (default: the example pack's ``filters.yaml``), validated against ``schema``.

    Raises:
        InputError / ConfigError: unreadable or invalid mapping file.
        SchemaError / FilterError: the mapping names something outside the schema.
    """
    from hopweave.graph.write_rules import GatedNode  # stores refuse an ungated FilterMapping node

    m = (mapping or read_mapping_file()).check(schema)
    props: dict[str, Any] = {"version": m.version, "definition": m.canonical_json()}
    if domain:
        props["domain"] = domain
    return GatedNode(id=filter_mapping_id(domain), label="FilterMapping", props=props)


def write_filter_mapping(store: "GraphStore", mapping: FilterMapping) -> str:
    """Validate ``mapping`` against the store's schema and write it as the FilterMapping node
    (tenant ``_global``). Returns the mapping's revision."""
    store.write(GLOBAL_TENANT, nodes=[filter_mapping_node(store.schema, mapping)])
    return mapping.revision


def load_filter_mapping(store: "GraphStore", path: str | Path | None = None) -> str:
    """Read the mapping file (default: shipped) and :func:`write_filter_mapping` it."""
    return write_filter_mapping(store, read_mapping_file(path))


def read_filter_mapping(store: "GraphStore", tenant_id: str) -> FilterMapping:
    """The FilterMapping node's mapping, as visible to ``tenant_id``.

    Raises:
        ConfigError: the graph has no (valid) FilterMapping node.
    """
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
) -> tuple[FilterTree, list[str]]:
    """Entities + session -> ``(filter tree, notes)``.

    Clause order: entity fields in the order of the mapping's rules, then ``is_empty`` clauses
    for the ``unscoped`` entity types (authoritative attributes with no value on record: no
    segment-specific document), then the always-on clauses in declared order. One value ->
    ``eq``; several -> ``in``. Always-on ``session`` clauses read built-in or pack-declared
    session attributes.

    Raises:
        TenantError: a required session attribute (the tenant) is missing.
        FilterError: the tree names a field outside the schema's chunk fields.
    """
    notes: list[str] = []
    owned = {a.field for a in mapping.always_on}
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
            clauses.append(Eq(field=f, value=vals[0]))
        elif vals:
            clauses.append(In(field=f, values=tuple(vals)))
    empty = set(unscoped)
    for f in dict.fromkeys(r.field for r in mapping.entities if r.entity in empty):
        if f not in values and f not in owned:
            clauses.append(IsEmpty(field=f))
    for a in mapping.always_on:
        v = a.value if a.value is not None else session.attribute(a.session or "")
        if v is None or v == "":
            if a.required:
                raise TenantError(f"the session has no {a.session}; the {a.field} filter clause is required")
            continue
        clauses.append(Eq(field=a.field, value=v))
    tree = and_(*clauses)
    if tree is None:  # pragma: no cover - tenant_id is always on in any sane mapping
        raise FilterError("the filter mapping produced no clauses; add always-on clauses (tenant_id)")
    if schema is not None:
        check_fields(tree, schema.filter_fields())
    return tree, notes

