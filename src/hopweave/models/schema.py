"""The declared graph schema: the one vocabulary of labels, relationship types, properties,
chunk metadata fields and filter clauses.

The schema is data (``metagraph/schema.yaml``), read by everything else: pattern gates, the Cypher
compiler, the entity ruler, the entity-to-filter mapping and the vector index payload indexes.
:func:`cypher_identifier` is the single function through which any identifier reaches Cypher.
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


class LabelSpec(_Frozen):
    name: str
    subgraph: Subgraph
    description: str = ""
    properties: tuple[PropertySpec, ...] = ()
    #: Names/aliases of nodes with this label are entity vocabulary (EntityRuler patterns).
    vocabulary: bool = False
    #: Nodes of this label are shared across tenants (tenant_id = GLOBAL_TENANT).
    shared: bool = False

    @field_validator("name")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "label")

    @cached_property
    def props(self) -> dict[str, PropertySpec]:
        out = {n: PropertySpec(name=n, type=t, required=True) for n, t in COMMON_NODE_PROPERTIES.items()}
        out.update({p.name: p for p in self.properties})
        return out


class RelSpec(_Frozen):
    name: str
    from_labels: tuple[str, ...]
    to_labels: tuple[str, ...]
    description: str = ""
    properties: tuple[PropertySpec, ...] = ()

    @field_validator("name")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "relationship type")


class GraphSchema(_Frozen):
    """Labels, relationship types and chunk metadata fields. Load with :meth:`load`."""

    version: str
    labels: tuple[LabelSpec, ...]
    relationships: tuple[RelSpec, ...]
    #: Chunk metadata fields (payload of the vector index); filter clauses name these.
    chunk_fields: tuple[PropertySpec, ...]

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
        try:
            return cls.model_validate(data)
        except Exception as exc:
            raise SchemaError(f"invalid graph schema: {exc}") from exc

    @classmethod
    def load(cls, path: str | Path) -> "GraphSchema":
        from hopweave.fileio import read_yaml

        return cls.from_dict(read_yaml(path, "schema file"))


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
