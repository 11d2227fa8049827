"""What ``load`` and ``validate`` both read from a pack besides its data files: the store
schema (the base, the store's other packs and this pack's, merged) and the classifier files."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from hopweave.errors import PackError
from hopweave.models.schema import GraphSchema
from hopweave.pack.files import PackFiles
from hopweave.pack.manifest import PackManifest, pack_path


def store_schema(pack_schema: dict[str, Any], others: Iterable[dict[str, Any]] = ()) -> GraphSchema:
    """The base schema extended by the other packs' schemas (already in the store) and then this
    pack's. Labels and relationship types are store-wide: a second pack may declare one the store
    already has from another pack only compatibly: a label identically (its description may
    differ; the first one is kept), a relationship type with the same properties (its endpoint
    labels are then the union of both packs'). Raises SchemaError."""
    base = GraphSchema.base()
    schema = base
    others = list(others)
    _check_shape(pack_schema)
    for i, extension in enumerate([*others, pack_schema]):
        source = "pack schema" if i == len(others) else "stored pack schema"
        ext, widen = _without_shared(extension, schema, base, source)
        schema = _widen(schema.extend(ext, source=source), widen, source)
    return schema


def _check_shape(pack_schema: Any) -> None:
    """A pack schema is a mapping whose ``labels`` and ``relationships`` are lists of mappings.
    Raises SchemaError naming the key."""
    from hopweave.errors import SchemaError

    if not isinstance(pack_schema, dict):
        raise SchemaError(f"the pack schema must be a mapping (extends, labels, relationships, chunk_fields), "
                          f"not {type(pack_schema).__name__}")
    for key in ("labels", "relationships", "chunk_fields"):
        v = pack_schema.get(key)
        if v is not None and not (isinstance(v, list) and all(isinstance(x, dict) for x in v)):
            raise SchemaError(f"schema `{key}:` must be a list of mappings (`- name: ...`), not {v!r:.60}")


def _same(model: Any, raw: dict[str, Any], known: Any, ignore: tuple[str, ...]) -> bool:
    try:
        mine = model.model_validate(raw).model_dump()
    except Exception:  # reported by the merge itself
        return False
    theirs = known.model_dump()
    return all(mine[k] == theirs[k] for k in mine if k not in ignore)


def _without_shared(ext: dict[str, Any], schema: GraphSchema, base: GraphSchema, source: str
                    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``ext`` without the labels / relationship types another pack already declared compatibly,
    and the relationship declarations whose endpoints widen the stored ones."""
    from hopweave.errors import SchemaError
    from hopweave.models.schema import LabelSpec, RelSpec

    widen: list[dict[str, Any]] = []

    def keep(items: Any, known: dict[str, Any], base_names: set[str], model: Any, what: str) -> list[Any]:
        out = []
        for raw in items or ():
            name = raw.get("name") if isinstance(raw, dict) else None
            if name is None or name in base_names or name not in known:
                out.append(raw)
            elif model is RelSpec and _same(model, raw, known[name], ("description", "from_labels", "to_labels",
                                                                     "any_from", "any_to")):
                widen.append(raw)
            elif not _same(model, raw, known[name], ("description",)):
                raise SchemaError(f"{source}: {what} {name!r} is already declared differently by another pack in "
                                  "this store; declare it identically (a relationship type may name other "
                                  "endpoint labels) or use another name")
        return out

    out = dict(ext)
    out["labels"] = keep(ext.get("labels"), schema.label_map, set(base.label_map), LabelSpec, "label")
    out["relationships"] = keep(ext.get("relationships"), schema.rel_map, set(base.rel_map), RelSpec,
                                "relationship type")
    return out, widen


def _widen(schema: GraphSchema, rels: list[dict[str, Any]], source: str) -> GraphSchema:
    """``schema`` whose relationship types in ``rels`` also allow those declarations' endpoint
    labels (a ``"*"`` on either side stays any label). Raises SchemaError (unknown label)."""
    from hopweave.errors import SchemaError
    from hopweave.models.schema import ANY_LABEL

    if not rels:
        return schema
    extra = {r["name"]: r for r in rels}
    data = schema.model_dump()
    for d in data["relationships"]:
        r = extra.get(d["name"])
        if r is None:
            continue
        for side, anyside in (("from_labels", "any_from"), ("to_labels", "any_to")):
            add = list(r.get(side) or ())
            if d[anyside] or ANY_LABEL in add:
                d[side], d[anyside] = [ANY_LABEL], False
            else:
                d[side] = list(dict.fromkeys([*d[side], *add]))
    try:
        return GraphSchema.model_validate(data)
    except Exception as exc:
        raise SchemaError(f"{source}: widening relationship types {sorted(extra)} failed: {exc}") from exc


def has_classifier_file(d: Path, m: PackManifest) -> bool:
    """False when the manifest leaves ``classifier:`` at its default and the pack has no such file
    (the domain then uses the engine's default classifier settings); a path the manifest names
    must exist (the read raises)."""
    return "classifier" in m.model_fields_set or pack_path(d, str(m.classifier), "classifier").is_file()


def classifier_files(d: Path, rel: str, files: PackFiles | None = None
                      ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(classifier settings, calibration or None) as data, read through ``files``. Raises
    PackError (a PackFileError for a file that cannot be read)."""
    pf = files or PackFiles(d)
    path = pf.path(rel, "classifier")
    cfg = pf.read_yaml(path, "classifier", "classifier settings")
    if not isinstance(cfg, dict):
        raise PackError(f"{rel}: classifier settings must be a mapping")
    if "clause_separators" in cfg:
        from hopweave.bounded import compile_data_regex

        compile_data_regex(cfg["clause_separators"], f"{rel}, key clause_separators")  # UnsafeRegexError
    cal = None
    cal_file = cfg.get("calibration_file")
    if cal_file:
        cpath = path.parent / str(cal_file)
        if not cpath.exists() and not cpath.is_symlink():
            raise PackError(f"{rel}: calibration_file {cal_file!r} does not exist; fit it with "
                            "`hopweave understand-calibrate` or remove the key")
        cal = pf.read_json(cpath, "calibration", "classifier calibration")
        if not isinstance(cal, dict):
            raise PackError(f"{pf.rel(cpath)}: the calibration must be a JSON object")
    return cfg, cal
