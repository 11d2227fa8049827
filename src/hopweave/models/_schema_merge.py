"""Merging a pack's schema onto a base schema (:meth:`GraphSchema.extend`)."""

from __future__ import annotations

from typing import Any

from hopweave.errors import SchemaError
from hopweave.models.schema import (
    ANY_LABEL,
    GraphSchema,
    LabelSpec,
    PropertySpec,
    RelSpec,
    SchemaExtension,
)


def _as_extension(other: Any) -> SchemaExtension:
    if isinstance(other, SchemaExtension):
        return other
    if isinstance(other, GraphSchema):
        return SchemaExtension(version=other.version, labels=other.labels, relationships=other.relationships,
                               chunk_fields=other.chunk_fields)
    return SchemaExtension.from_dict(other)


def _extend_label(lab: LabelSpec, props: tuple[PropertySpec, ...], source: str) -> LabelSpec:
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
    return lab.model_copy(update={"properties": lab.properties + tuple(added)})


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


def _check_labels(schema: GraphSchema, ext: SchemaExtension, source: str) -> None:
    base = set(schema.label_map)
    seen: set[str] = set()
    for lab in ext.labels:
        if lab.name in base:
            raise SchemaError(
                f"{source}: label {lab.name!r} is defined by the base schema; a pack never repeats a base "
                f"label: write `- extends: {lab.name}` with only the properties it adds")
        if lab.name in seen:
            raise SchemaError(f"{source}: label {lab.name!r} is declared twice; keep one declaration")
        seen.add(lab.name)
    for e in ext.extensions:
        if e.extends not in base:
            hint = " (declare it with `- name:` instead)" if e.extends in seen else ""
            raise SchemaError(f"{source}: `extends: {e.extends}` names no base label{hint}; "
                              f"base labels: {sorted(base)}")


def _check_rels(schema: GraphSchema, ext: SchemaExtension, known: set[str], source: str) -> None:
    seen: set[str] = set()
    for r in ext.relationships:
        if r.name in schema.rel_map:
            raise SchemaError(f"{source}: relationship type {r.name!r} is defined by the base schema; "
                              "a pack never repeats it: declare a new relationship type")
        if r.name in seen:
            raise SchemaError(f"{source}: relationship type {r.name!r} is declared twice; keep one")
        seen.add(r.name)
        for lab in (*r.from_labels, *r.to_labels):
            if lab != ANY_LABEL and lab not in known:
                raise SchemaError(
                    f"{source}: relationship {r.name} names unknown label {lab!r}; declare the label under "
                    f"`labels:` or fix the spelling (known labels: {sorted(known)})")


def _rel_dict(r: RelSpec) -> dict[str, Any]:
    d = r.model_dump()
    if r.any_from:
        d["from_labels"] = [ANY_LABEL]
    if r.any_to:
        d["to_labels"] = [ANY_LABEL]
    return d


def merge(schema: GraphSchema, other: Any, source: str = "pack schema") -> GraphSchema:
    """``schema`` extended by ``other`` (a SchemaExtension, a GraphSchema or a pack schema
    mapping). Returns a new GraphSchema (the pack's labels first, then the base's, in file order:
    the order decides label disjunctions in compiled Cypher;
    ``"*"`` endpoint lists re-expanded over the merged labels). Raises SchemaError on a conflict."""
    ext = _as_extension(other)
    _check_labels(schema, ext, source)
    by_ext = {e.extends: e for e in ext.extensions}
    if len(by_ext) != len(ext.extensions):
        dup = sorted({e.extends for e in ext.extensions if sum(x.extends == e.extends for x in ext.extensions) > 1})
        raise SchemaError(f"{source}: `extends:` given twice for {dup}; merge the property lists into one entry")
    labels = list(ext.labels) + [
        _extend_label(lab, by_ext[lab.name].properties, source) if lab.name in by_ext else lab
        for lab in schema.labels
    ]
    known = {lab.name for lab in labels}
    _check_rels(schema, ext, known, source)
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
