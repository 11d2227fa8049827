"""The two shipped packs can share one store (docs/packs.md, "Several enterprises in one store"):
their schemas merge in either order (a label re-declared with another description, a relationship
type with other endpoint labels), their node ids are disjoint, and a real conflict still fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hopweave.errors import SchemaError
from hopweave.fileio import read_yaml
from hopweave.pack.loader import store_schema

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _schema(pack: str) -> dict:
    return read_yaml(EXAMPLES / pack / "schema.yaml", "pack schema")


@pytest.mark.parametrize("first,second", [("deltabank", "telecom"), ("telecom", "deltabank")])
def test_shipped_schemas_merge_in_either_order(first: str, second: str) -> None:
    merged = store_schema(_schema(second), [_schema(first)])
    located = merged.rel_map["LOCATED_IN"]
    assert {"Customer", "Subscriber"} <= set(located.from_labels)
    assert {"CustomerProfile", "SubscriberProfile"} <= set(merged.rel_map["SIMILAR_TO"].to_labels)
    assert {"Customer", "Subscriber", "PolicyType", "Region"} <= set(merged.label_map)


def test_a_real_conflict_still_fails() -> None:
    other = _schema("telecom")
    for lab in other["labels"]:
        if lab.get("name") == "Region":
            lab["properties"] = [{"name": "name", "type": "int"}]
    with pytest.raises(SchemaError, match="Region"):
        store_schema(other, [_schema("deltabank")])


def test_relationship_with_other_properties_still_fails() -> None:
    other = _schema("telecom")
    for rel in other["relationships"]:
        if rel.get("name") == "LOCATED_IN":
            rel["properties"] = [{"name": "since", "type": "date"}]
    with pytest.raises(SchemaError, match="LOCATED_IN"):
        store_schema(other, [_schema("deltabank")])


def _node_ids(pack: str) -> set[str]:
    ids: set[str] = set()
    for f in (EXAMPLES / pack / "graph").glob("*.jsonl"):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                rec = json.loads(line)
                if "node" in rec:
                    ids.add(rec["node"])
    return ids


def test_shipped_packs_node_ids_are_disjoint() -> None:
    assert _node_ids("deltabank") & _node_ids("telecom") == set()
