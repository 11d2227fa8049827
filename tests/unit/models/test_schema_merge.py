"""The base schema + a pack schema: merge, `extends:`, "*" endpoints and every conflict."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hopweave.errors import SchemaError
from hopweave.models.schema import GraphSchema
from hopweave.paths import base_schema_path

PACK = Path(__file__).resolve().parents[3] / "examples" / "deltabank" / "schema.yaml"

ENGINE_LABELS = {"GoalType", "TraversalPattern", "FilterMapping", "Document", "DecisionTrace", "TraceStep",
                 "PinnedText", "CaseType", "CaseState", "Workflow", "Step", "Rule", "Heuristic", "PatternProposal"}


def _pack(**parts) -> dict:
    return {"version": "t1", "extends": "base", **parts}


def test_base_schema_is_domain_free_and_complete() -> None:
    base = GraphSchema.load(base_schema_path())
    assert set(base.label_map) == ENGINE_LABELS
    assert base.vocabulary_labels() == []
    assert {"tenant_id", "document_id", "revision", "version", "status", "valid_from"} <= base.filter_fields()
    assert "tier" not in base.filter_fields() and "tier" not in base.label("Document").props
    assert base.rel("SAW_FACT").any_to and set(base.rel("SAW_FACT").to_labels) == ENGINE_LABELS


def test_deltabank_merge_both_ways_and_star_reexpanded() -> None:
    merged = GraphSchema.load(base_schema_path(), PACK)
    assert merged == GraphSchema.load(PACK)  # a lone pack file (extends: base) merges onto the base
    assert merged.version == "1+2026.11.1"
    assert set(merged.label_map) > ENGINE_LABELS and "Customer" in merged.label_map
    assert [lab.name for lab in merged.labels][:2] == ["Customer", "Tier"]  # the pack's labels first
    assert {"tier", "product", "policy_type", "region"} <= set(merged.label("Document").props)
    assert merged.prop("DecisionTrace", "tier").indexed
    assert set(merged.rel("SAW_FACT").to_labels) == set(merged.label_map)
    assert merged.rel("OF_PRODUCT").from_labels == ("Account", "Document")
    assert {"tier", "product", "policy_type", "region"} <= merged.filter_fields()
    # a dump round-trips (the "*" flag survives) and extending again re-expands over new labels
    again = GraphSchema.from_dict(merged.model_dump(mode="json"))
    assert again == merged
    more = merged.extend(_pack(labels=[{"name": "Extra", "subgraph": "semantic"}]))
    assert "Extra" in more.rel("SAW_FACT").to_labels and more.version == "1+2026.11.1+t1"


def test_extends_adds_properties_and_tolerates_an_identical_one() -> None:
    base = GraphSchema.base()
    s = base.extend(_pack(labels=[{"extends": "Document", "properties": [
        {"name": "plan", "type": "str"}, {"name": "title", "type": "str"}]}]))
    assert s.prop("Document", "plan").type == "str"
    assert [p.name for p in s.label("Document").properties].count("title") == 1


@pytest.mark.parametrize(
    ("parts", "needle"),
    [
        ({"labels": [{"name": "Document", "subgraph": "semantic"}]}, "extends: Document"),
        ({"labels": [{"extends": "Policyholder", "properties": []}]}, "names no base label"),
        ({"labels": [{"name": "A", "subgraph": "semantic"}, {"name": "A", "subgraph": "semantic"}]},
         "declared twice"),
        ({"labels": [{"extends": "Document", "properties": [{"name": "title", "type": "int"}]}]},
         "re-declares property 'title'"),
        ({"labels": [{"extends": "Document"}, {"extends": "Document"}]}, "given twice"),
        ({"relationships": [{"name": "HOLDS", "from_labels": ["Subscriber"], "to_labels": ["Document"]}]},
         "unknown label 'Subscriber'"),
        ({"relationships": [{"name": "CITES", "from_labels": ["Document"], "to_labels": ["Document"]}]},
         "defined by the base schema"),
        ({"relationships": [{"name": "X", "from_labels": ["*", "Document"], "to_labels": ["Document"]}]},
         "only item"),
        ({"chunk_fields": [{"name": "valid_from", "type": "str"}]}, "chunk field 'valid_from'"),
        ({"labels": [{"name": "bad-name", "subgraph": "semantic"}]}, "not a safe identifier"),
    ],
)
def test_conflicts_are_schema_errors_that_say_what_to_fix(parts: dict, needle: str) -> None:
    with pytest.raises(SchemaError) as exc:
        GraphSchema.base().extend(_pack(**parts), source="my/schema.yaml")
    assert needle in str(exc.value)


def test_a_lone_pack_file_without_extends_fails_clearly(tmp_path: Path) -> None:
    data = yaml.safe_load(PACK.read_text())
    data.pop("extends")
    p = tmp_path / "schema.yaml"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(SchemaError, match="add `extends: base`"):
        GraphSchema.load(p)
    data["labels"] = [x for x in data["labels"] if "extends" not in x]
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(SchemaError, match="unknown label 'Document'"):
        GraphSchema.load(p)
    data["extends"] = "other"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(SchemaError, match="only schema a pack extends is `base`"):
        GraphSchema.load(p)
    assert GraphSchema.load(base_schema_path(), PACK).extend(GraphSchema.from_dict(
        {"version": "x", "labels": [{"name": "Z", "subgraph": "semantic"}], "relationships": [],
         "chunk_fields": []})).label("Z").name == "Z"
