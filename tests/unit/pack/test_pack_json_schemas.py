"""metagraph/pack_schemas/*.json: generated from the models, in sync, and the shipped files pass them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hopweave.pack.json_schemas import pack_json_schemas, render

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "metagraph" / "pack_schemas"
PACK = ROOT / "examples" / "deltabank"


def test_committed_json_schemas_are_in_sync() -> None:
    for name, schema in pack_json_schemas().items():
        assert (SHIPPED / name).read_text(encoding="utf-8") == render(schema), (
            f"{name} is stale: run python -m hopweave.pack.json_schemas")


@pytest.mark.parametrize(("schema", "file"), [
    ("hopweave.schema.json", PACK / "hopweave.yaml"),
    ("schema.schema.json", PACK / "schema.yaml"),
    ("filters.schema.json", PACK / "filters.yaml"),
    ("base_schema.schema.json", ROOT / "metagraph" / "base_schema.yaml"),
])
def test_shipped_files_validate(schema: str, file: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(yaml.safe_load(file.read_text(encoding="utf-8")), pack_json_schemas()[schema])


def test_a_mistake_is_caught() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    bad = yaml.safe_load((PACK / "hopweave.yaml").read_text(encoding="utf-8"))
    bad["graph"] = [{"tenant": "deltabank", "files": "graph/deltabank.jsonl", "extra": 1}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, pack_json_schemas()["hopweave.schema.json"])
