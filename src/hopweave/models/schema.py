"""The declared graph schema: the one vocabulary of labels, relationship types, properties,
chunk metadata fields and filter clauses.

The schema is data, read by everything else: pattern gates, the Cypher compiler, the entity
ruler, the entity-to-filter mapping and the vector index payload indexes. The built-in base schema
(``metagraph/base_schema.yaml``: the labels the engine writes itself) is extended by a domain
pack's ``schema.yaml`` (``extends: base``); :meth:`GraphSchema.load` and :meth:`GraphSchema.extend`
merge them. :func:`cypher_identifier` is the single function through which any identifier
reaches Cypher.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from hopweave.errors import SchemaError, UnsafeIdentifierError

PropType = Literal["str", "int", "float", "bool", "date", "datetime", "list[str]", "json"]
Subgraph = Literal["semantic", "episodic", "procedural", "meta"]

#: A safe identifier: letters, digits, underscore, not starting with a digit, at most 64 chars.
SAFE_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")

#: Properties every node carries, whatever its label.
COMMON_NODE_PROPERTIES: dict[str, PropType] = {"id": "str", "tenant_id": "str"}

#: When a node or an edge was recorded in the graph (``YYYY-MM-DDTHH:MM:SS``), optional on every
#: node and every edge: a fact recorded after a request's ``as_of`` is not known at that as_of
#: (see :class:`TimeSpec` and ``hopweave.graph.predicates.known_tree``; docs/engine.md, "Time").
RECORDED_AT = "recorded_at"
#: Optional on every node and edge: who recorded it (the ``source`` of a run-time fact write).
RECORDED_BY = "recorded_by"

#: Property of shared nodes naming the domain (pack) they belong to; absent = every domain.
DOMAIN_PROPERTY = "domain"

#: tenant_id value of shared (non-tenant) nodes: the metagraph and vocabulary.
GLOBAL_TENANT = "_global"


def check_identifier(name: str, what: str = "identifier") -> str:
    """Return ``name`` if it is a safe identifier, else raise UnsafeIdentifierError."""
    if not isinstance(name, str) or not SAFE_IDENTIFIER.match(name):
        raise UnsafeIdentifierError(
            f"{what} {name!r} is not a safe identifier: use letters, digits and underscore, "
            "starting with a letter or underscore, at most 64 characters"
        )
    return name


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PropertySpec(_Frozen):
    name: str
    type: PropType = "str"
    pii: bool = False
    required: bool = False
    indexed: bool = False
    description: str = ""

    @field_validator("name")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "property name")


class TimeSpec(_Frozen):
    """How a label's nodes sit in time (``time:`` on a label in a schema file); every name is a
    date or datetime property of the label.

    - ``event``: when the fact happened (a DecisionTrace's ``timestamp``). A node without ``recorded_at``
      counts as recorded at its event time.
    - ``valid_from`` / ``valid_until``: the interval the node is in force (a workflow or rule
      revision): ``valid_from <= as_of < valid_until``, an absent bound is open.

    A pattern sees a node at ``as_of`` only when it is known then (recorded, or else happened, at or
    before as_of) and in force then; one definition for every pattern on every store
    (``hopweave.graph.predicates.time_tree``)."""

    event: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None

    @field_validator("event", "valid_from", "valid_until")
    @classmethod
    def _safe(cls, v: str | None) -> str | None:
        return None if v is None else check_identifier(v, "time property")


class LabelSpec(_Frozen):
    name: str
    subgraph: Subgraph
    description: str = ""
    properties: tuple[PropertySpec, ...] = ()
    #: Names/aliases of nodes with this label are entity vocabulary (EntityRuler patterns).
    vocabulary: bool = False
    #: Nodes of this label are shared across tenants (tenant_id = GLOBAL_TENANT).
    shared: bool = False
    #: The event time and validity interval of the label's nodes (None = timeless: only
    #: ``recorded_at``, when a node has it, says since when it is known).
    time: TimeSpec | None = None

    @field_validator("name")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "label")

    @model_validator(mode="after")
    def _time_props(self) -> "LabelSpec":
        if self.time is not None:
            for role in ("event", "valid_from", "valid_until"):
                name = getattr(self.time, role)
                if name is None:
                    continue
                spec = self.props.get(name)
                if spec is None or spec.type not in ("date", "datetime"):
                    raise ValueError(
                        f"label {self.name}: time.{role} names {name!r}, which must be a date or datetime "
                        f"property of the label (declared: {sorted(self.props)})")
        return self

    @cached_property
    def props(self) -> dict[str, PropertySpec]:
        out = {n: PropertySpec(name=n, type=t, required=True) for n, t in COMMON_NODE_PROPERTIES.items()}
        out[RECORDED_AT] = PropertySpec(name=RECORDED_AT, type="datetime",
                                        description="when the node was recorded in the graph")
        out[RECORDED_BY] = PropertySpec(name=RECORDED_BY, type="str",
                                        description="which system of record wrote the node at run time")
        if self.shared:  # shared nodes belong to one domain (pack) of the store
            out[DOMAIN_PROPERTY] = PropertySpec(name=DOMAIN_PROPERTY, type="str", indexed=True)
        out.update({p.name: p for p in self.properties})
        return out


#: In a relationship's ``from_labels`` / ``to_labels``: any label of the (merged) schema.
ANY_LABEL = "*"


class RelSpec(_Frozen):
    """A relationship type. ``from_labels`` / ``to_labels`` given as ``["*"]`` mean any label of
    the schema: the lists then hold every label (expanded again when a pack extends the schema)
    and ``any_from`` / ``any_to`` are set."""

    name: str
    from_labels: tuple[str, ...]
    to_labels: tuple[str, ...]
    description: str = ""
    properties: tuple[PropertySpec, ...] = ()
    any_from: bool = False
    any_to: bool = False

    @field_validator("name")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "relationship type")

    @cached_property
    def props(self) -> dict[str, PropertySpec]:
        """The declared properties plus ``recorded_at`` (optional on every edge)."""
        out = {RECORDED_AT: PropertySpec(name=RECORDED_AT, type="datetime",
                                         description="when the edge was recorded in the graph"),
               RECORDED_BY: PropertySpec(name=RECORDED_BY, type="str",
                                         description="which system of record wrote the edge at run time")}
        out.update({p.name: p for p in self.properties})
        return out

    @field_validator("from_labels", "to_labels")
    @classmethod
    def _star_alone(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if ANY_LABEL in v and len(v) > 1:
            raise ValueError(f'"{ANY_LABEL}" (any label) must be the only item of the list, got {list(v)}')
        return v


class LabelExtension(_Frozen):
    """``- extends: Document`` in a pack schema: properties the pack adds to a base label."""

    extends: str
    description: str = ""
    properties: tuple[PropertySpec, ...] = ()
    #: Time roles for a base label that declares none (:class:`TimeSpec`).
    time: TimeSpec | None = None

    @field_validator("extends")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "label")


class SchemaExtension(_Frozen):
    """A pack's schema file (``extends: base``): new labels, extensions of base labels, new
    relationship types and chunk fields. Only meaningful merged onto a base: see
    :meth:`GraphSchema.extend`."""

    version: str = ""
    labels: tuple[LabelSpec, ...] = ()
    extensions: tuple[LabelExtension, ...] = ()
    relationships: tuple[RelSpec, ...] = ()
    chunk_fields: tuple[PropertySpec, ...] = ()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SchemaExtension":
        """Parse a pack schema mapping (labels may mix ``name:`` and ``extends:`` entries).
        Raises SchemaError naming what is wrong."""
        if not isinstance(data, dict):
            raise SchemaError(f"a schema file must be a mapping, got {type(data).__name__}")
        body = {k: v for k, v in data.items() if k not in ("extends", "base")}
        raw_labels = body.pop("labels", None) or []
        if not isinstance(raw_labels, list):
            raise SchemaError("schema `labels` must be a list")
        body["labels"] = [x for x in raw_labels if not (isinstance(x, dict) and "extends" in x)]
        body["extensions"] = [x for x in raw_labels if isinstance(x, dict) and "extends" in x]
        try:
            return cls.model_validate(body)
        except Exception as exc:
            raise SchemaError(f"invalid pack schema: {exc}") from exc


class GraphSchema(_Frozen):
    """Labels, relationship types and chunk metadata fields. Load with :meth:`load`."""

    version: str
    labels: tuple[LabelSpec, ...]
    relationships: tuple[RelSpec, ...]
    #: Chunk metadata fields (payload of the vector index); filter clauses name these.
    chunk_fields: tuple[PropertySpec, ...]

    @model_validator(mode="before")
    @classmethod
    def _expand_any(cls, data: Any) -> Any:
        """Expand ``["*"]`` endpoint lists into every label of this schema."""
        if not isinstance(data, dict) or "relationships" not in data:
            return data
        names = [x.name if isinstance(x, LabelSpec) else x.get("name") for x in data.get("labels") or ()
                 if isinstance(x, (LabelSpec, dict))]
        rels = []
        for r in data.get("relationships") or ():
            d = r.model_dump() if isinstance(r, RelSpec) else r
            if isinstance(d, dict):
                d = dict(d)
                for side, flag in (("from_labels", "any_from"), ("to_labels", "any_to")):
                    if d.get(flag) or list(d.get(side) or ()) == [ANY_LABEL]:
                        d[side], d[flag] = list(names), True
            rels.append(d)
        return {**data, "relationships": rels}

    @model_validator(mode="after")
    def _consistent(self) -> "GraphSchema":
        names = [lab.name for lab in self.labels]
        if len(set(names)) != len(names):
            raise ValueError("duplicate label names in schema")
        rnames = [r.name for r in self.relationships]
        if len(set(rnames)) != len(rnames):
            raise ValueError("duplicate relationship types in schema")
        known = set(names)
        for r in self.relationships:
            for lab in (*r.from_labels, *r.to_labels):
                if lab not in known:
                    raise ValueError(f"relationship {r.name} names unknown label {lab!r}")
        return self

    # ---- lookups -------------------------------------------------------------------------
    @cached_property
    def label_map(self) -> dict[str, LabelSpec]:
        return {lab.name: lab for lab in self.labels}

    @cached_property
    def rel_map(self) -> dict[str, RelSpec]:
        return {r.name: r for r in self.relationships}

    @cached_property
    def chunk_field_map(self) -> dict[str, PropertySpec]:
        return {f.name: f for f in self.chunk_fields}

    def label(self, name: str) -> LabelSpec:
        check_identifier(name, "label")
        try:
            return self.label_map[name]
        except KeyError:
            raise SchemaError(
                f"label {name!r} is not in schema {self.version}; known labels: {sorted(self.label_map)}"
            ) from None

    def rel(self, name: str) -> RelSpec:
        check_identifier(name, "relationship type")
        try:
            return self.rel_map[name]
        except KeyError:
            raise SchemaError(
                f"relationship type {name!r} is not in schema {self.version}; "
                f"known types: {sorted(self.rel_map)}"
            ) from None

    def prop(self, label: str, name: str) -> PropertySpec:
        spec = self.label(label)
        check_identifier(name, "property name")
        try:
            return spec.props[name]
        except KeyError:
            raise SchemaError(
                f"property {name!r} is not declared on label {label!r}; "
                f"declared: {sorted(spec.props)}"
            ) from None

    def pii_properties(self, label: str) -> set[str]:
        return {p.name for p in self.label(label).props.values() if p.pii}

    def vocabulary_labels(self) -> list[str]:
        return [lab.name for lab in self.labels if lab.vocabulary]

    def filter_fields(self) -> set[str]:
        """Field names a chunk FilterTree may use (the chunk metadata vocabulary)."""
        return set(self.chunk_field_map)

    # ---- loading -------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GraphSchema":
        """A complete schema from a mapping; a pack schema (``extends: base``) is merged onto the
        built-in base schema. Raises SchemaError."""
        if isinstance(data, dict) and data.get("extends") is not None:
            if data["extends"] != "base":
                raise SchemaError(f"schema `extends: {data['extends']}`: the only schema a pack extends "
                                  "is `base` (the built-in base schema)")
            return cls.base().extend(data)
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k != "base"}
            if any(isinstance(x, dict) and "extends" in x for x in data.get("labels") or ()):
                raise SchemaError("`- extends: <Label>` entries belong in a pack schema: add `extends: base` at "
                                  "the top of the file (a pack schema extends the built-in base schema)")
        try:
            return cls.model_validate(data)
        except Exception as exc:
            raise SchemaError(f"invalid graph schema: {exc}") from exc

    @classmethod
    def load(cls, path: str | Path, *pack_paths: str | Path) -> "GraphSchema":
        """``load(base_path, *pack_paths)``: the schema at ``path`` extended by each pack schema
        in turn. A single pack schema file (``extends: base``) is merged onto the built-in base.
        Raises SchemaError (invalid file or a conflict), ConfigError (unreadable file)."""
        from hopweave.fileio import read_yaml

        schema = cls.from_dict(read_yaml(path, "schema file"))
        for p in pack_paths:
            schema = schema.extend(read_yaml(p, "schema file"), source=str(p))
        return schema

    @classmethod
    def base(cls) -> "GraphSchema":
        """The built-in base schema (``metagraph/base_schema.yaml``). Raises SchemaError/ConfigError."""
        from hopweave.fileio import read_yaml
        from hopweave.paths import base_schema_path

        return cls.from_dict(read_yaml(base_schema_path(), "base schema"))

    def extend(self, other: "SchemaExtension | GraphSchema | dict[str, Any]", source: str = "pack schema"
               ) -> "GraphSchema":
        """This schema with ``other``'s labels, label extensions, relationships and chunk fields
        added (``source`` names it in errors). Returns a new GraphSchema. Raises SchemaError on a
        conflict: a label or relationship type this schema already has, ``extends:`` of an unknown
        label, a property or chunk field re-declared with another type, an endpoint naming an
        unknown label."""
        return _merge(self, other, source)


# ---- merging a pack schema onto a base (GraphSchema.extend) ----------------------------------
def _as_extension(other: Any) -> SchemaExtension:
    if isinstance(other, SchemaExtension):
        return other
    if isinstance(other, GraphSchema):
        return SchemaExtension(version=other.version, labels=other.labels, relationships=other.relationships,
                               chunk_fields=other.chunk_fields)
    return SchemaExtension.from_dict(other)


def _extend_label(lab: LabelSpec, ext: LabelExtension, source: str) -> LabelSpec:
    props = ext.properties
    have = {p.name: p for p in lab.properties}
    added: list[PropertySpec] = []
    for p in props:
        old = have.get(p.name)
        if old is None:
            have[p.name] = p
            added.append(p)
        elif old.type != p.type:
            raise SchemaError(
                f"{source}: `extends: {lab.name}` re-declares property {p.name!r} as {p.type} but the "
                f"base schema declares it as {old.type}; drop it from the pack or give it another name")
    time = lab.time
    if ext.time is not None and ext.time != lab.time:
        if lab.time is not None:
            raise SchemaError(f"{source}: `extends: {lab.name}` declares time roles but the base schema already "
                              f"declares {lab.time.model_dump(exclude_none=True)}; drop `time:` from the pack")
        time = ext.time
    data = lab.model_dump()
    data.update(properties=[p.model_dump() for p in lab.properties + tuple(added)],
                time=time.model_dump() if time is not None else None)
    try:
        return LabelSpec.model_validate(data)
    except Exception as exc:
        raise SchemaError(f"{source}: `extends: {lab.name}`: {exc}") from exc


def _merge_chunk_fields(base: tuple[PropertySpec, ...], extra: tuple[PropertySpec, ...], source: str
                        ) -> tuple[PropertySpec, ...]:
    have = {f.name: f for f in base}
    out = list(base)
    for f in extra:
        old = have.get(f.name)
        if old is None:
            have[f.name] = f
            out.append(f)
        elif old.type != f.type:
            raise SchemaError(
                f"{source}: chunk field {f.name!r} is declared as {f.type} but the base schema declares it "
                f"as {old.type}; use the base type or another field name")
    return tuple(out)


def _label_conflicts(schema: GraphSchema, ext: SchemaExtension, source: str) -> list[str]:
    base = set(schema.label_map)
    seen: set[str] = set()
    out: list[str] = []
    for lab in ext.labels:
        if lab.name in base:
            out.append(f"{source}: label {lab.name!r} is defined by the base schema; a pack never repeats a base "
                       f"label: write `- extends: {lab.name}` with only the properties it adds")
        elif lab.name in seen:
            out.append(f"{source}: label {lab.name!r} is declared twice; keep one declaration")
        seen.add(lab.name)
    for e in ext.extensions:
        if e.extends not in base:
            hint = " (declare it with `- name:` instead)" if e.extends in seen else ""
            out.append(f"{source}: `extends: {e.extends}` names no base label{hint}; base labels: {sorted(base)}")
    return out


def _rel_conflicts(schema: GraphSchema, ext: SchemaExtension, known: set[str], source: str) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for r in ext.relationships:
        if r.name in schema.rel_map:
            out.append(f"{source}: relationship type {r.name!r} is defined by the base schema; "
                       "a pack never repeats it: declare a new relationship type")
        elif r.name in seen:
            out.append(f"{source}: relationship type {r.name!r} is declared twice; keep one")
        seen.add(r.name)
        for lab in (*r.from_labels, *r.to_labels):
            if lab != ANY_LABEL and lab not in known:
                out.append(f"{source}: relationship {r.name} names unknown label {lab!r}; declare the label under "
                           f"`labels:` or fix the spelling (known labels: {sorted(known)})")
    return out


def _raise_all(conflicts: list[str]) -> None:
    """Raise one SchemaError for every conflict (its ``problems`` lists them one by one)."""
    if conflicts:
        err = SchemaError("\n".join(conflicts))
        err.problems = list(conflicts)  # type: ignore[attr-defined]
        raise err


def _rel_dict(r: RelSpec) -> dict[str, Any]:
    d = r.model_dump()
    if r.any_from:
        d["from_labels"] = [ANY_LABEL]
    if r.any_to:
        d["to_labels"] = [ANY_LABEL]
    return d


def _merge(schema: GraphSchema, other: Any, source: str = "pack schema") -> GraphSchema:
    """``schema`` extended by ``other`` (a SchemaExtension, a GraphSchema or a pack schema
    mapping). Returns a new GraphSchema (the pack's labels first, then the base's, in file order:
    the order decides label disjunctions in compiled Cypher;
    ``"*"`` endpoint lists re-expanded over the merged labels). Raises SchemaError on a conflict."""
    ext = _as_extension(other)
    conflicts = _label_conflicts(schema, ext, source)
    by_ext = {e.extends: e for e in ext.extensions}
    if len(by_ext) != len(ext.extensions):
        dup = sorted({e.extends for e in ext.extensions if sum(x.extends == e.extends for x in ext.extensions) > 1})
        conflicts.append(f"{source}: `extends:` given twice for {dup}; merge the property lists into one entry")
    known = {lab.name for lab in (*ext.labels, *schema.labels)}
    _raise_all(conflicts + _rel_conflicts(schema, ext, known, source))
    labels = list(ext.labels) + [
        _extend_label(lab, by_ext[lab.name], source) if lab.name in by_ext else lab
        for lab in schema.labels
    ]
    version = f"{schema.version}+{ext.version}" if ext.version else schema.version
    data = {
        "version": version,
        "labels": [lab.model_dump() for lab in labels],
        "relationships": [_rel_dict(r) for r in (*schema.relationships, *ext.relationships)],
        "chunk_fields": [f.model_dump() for f in _merge_chunk_fields(schema.chunk_fields, ext.chunk_fields, source)],
    }
    try:
        return GraphSchema.model_validate(data)
    except Exception as exc:
        raise SchemaError(f"{source}: the merged schema is invalid: {exc}") from exc


def cypher_identifier(
    schema: GraphSchema, kind: Literal["label", "rel", "property"], name: str, label: str | None = None
) -> str:
    """The single gate for identifiers that reach Cypher.

    Validates ``name`` against the schema (a label, a relationship type, or a property of
    ``label``; for ``property`` without a label, a chunk field or a common node property) and
    returns it backtick-escaped. Raises UnsafeIdentifierError / SchemaError.
    """
    check_identifier(name, kind)
    if kind == "label":
        schema.label(name)
    elif kind == "rel":
        schema.rel(name)
    elif kind == "property":
        if label is not None:
            schema.prop(label, name)
        elif name not in COMMON_NODE_PROPERTIES and not any(
            name in lab.props for lab in schema.labels
        ):
            raise SchemaError(f"property {name!r} is not declared on any label")
    else:  # pragma: no cover - Literal guards this
        raise SchemaError(f"unknown identifier kind {kind!r}")
    return "`" + name.replace("`", "``") + "`"
