"""JSON Schemas of the pack files, generated from the pydantic models that read them
(``metagraph/pack_schemas/*.json``; editors validate a pack against them, a test keeps them in
sync). ``python -m hopweave.pack.json_schemas [DIR]`` rewrites them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def pack_json_schemas() -> dict[str, dict[str, Any]]:
    """File name -> JSON Schema, for the manifest, a schema file, a filter mapping, the domain
    settings and a goal file's ``goal:`` mapping (its sections, case, escalation, outcomes)."""
    from hopweave.models.domain import DomainSettings
    from hopweave.models.metagraph import GoalType
    from hopweave.models.schema import GraphSchema, LabelExtension, LabelSpec, SchemaExtension
    from hopweave.pack.manifest import PackManifest
    from hopweave.understand.filter_map import FilterMapping

    ext = SchemaExtension.model_json_schema(by_alias=True)
    ext["properties"].pop("extensions", None)  # in the file, `- extends:` entries sit among `labels`
    ext["properties"]["extends"] = {"const": "base", "description": "merged onto the built-in base schema"}
    ext["properties"]["labels"] = {"type": "array", "items": {"anyOf": [
        {"$ref": "#/$defs/LabelSpec"}, {"$ref": "#/$defs/LabelExtension"}]}}
    ext.setdefault("$defs", {})["LabelExtension"] = LabelExtension.model_json_schema()
    ext["$defs"].setdefault("LabelSpec", LabelSpec.model_json_schema())
    base = GraphSchema.model_json_schema()
    base["properties"]["base"] = {"const": True}
    out = {
        "hopweave.schema.json": PackManifest.model_json_schema(by_alias=True),
        "schema.schema.json": ext,
        "base_schema.schema.json": base,
        "filters.schema.json": FilterMapping.model_json_schema(),
        "domain.schema.json": DomainSettings.model_json_schema(),
        "goal.schema.json": GoalType.model_json_schema(),
    }
    for name, sch in out.items():
        sch["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        sch["$id"] = f"https://hopweave.dev/pack/{name}"
    return out


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write_pack_json_schemas(directory: str | Path) -> list[Path]:
    """Write every pack JSON Schema into ``directory``. Returns the paths written."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, sch in pack_json_schemas().items():
        (d / name).write_text(render(sch), encoding="utf-8")
        paths.append(d / name)
    return paths


if __name__ == "__main__":  # pragma: no cover
    from hopweave.paths import metagraph_dir

    for p in write_pack_json_schemas(sys.argv[1] if len(sys.argv) > 1 else metagraph_dir() / "pack_schemas"):
        print(p)
