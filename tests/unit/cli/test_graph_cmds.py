"""The graph CLI: load, patterns list/show/validate/uses, traverse (real store, real commands)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hopweave.cli import app

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "deltabank"))  # the pack's generator
from generator.build import sized_pack  # noqa: E402

runner = CliRunner()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    d = tmp / "store"
    pack = sized_pack(tmp / "pack", 3000, 4421)  # the DeltaBank pack with a 3,000-node graph
    r = runner.invoke(app, ["load", str(pack), "--store", str(d), "--no-vectors", "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["goals"] == 4 and summary["nodes"] > 2500
    return d


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_traverse_json_one_entry_per_pattern(store):
    r = invoke("traverse", "--goal", "LateFeeDispute", "--seed", "CUST_4421", "--as-of", "2026-05-12",
               "--store", store, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    by = {e["pattern"]: e for e in out}
    assert [e["pattern"] for e in out] == sorted(by)
    for e in out:
        assert {"pattern", "version", "sub_question", "rows", "truncated", "elapsed_ms"} <= set(e)
    assert [row["node_id"] for row in by["comparable_precedent"]["rows"]] == ["TRACE_8514", "TRACE_8702", "TRACE_8108"]
    assert by["customer_tier"]["rows"][0]["path"] == ["CUST_4421", "TIER_Platinum"]
    assert by["waiver_events_this_year"]["rows"] == []


def test_traverse_text_and_errors(store):
    r = invoke("traverse", "--goal", "LateFeeDispute", "--seed", "CUST_4421", "--as-of", "2026-05-12", "--store", store)
    assert r.exit_code == 0 and "TRACE_8514" in r.stdout
    r = invoke("traverse", "--goal", "NoSuchGoal", "--seed", "CUST_4421", "--as-of", "2026-05-12", "--store", store)
    assert r.exit_code == 2 and "NotFoundError" in r.stderr
    r = invoke("traverse", "--goal", "LateFeeDispute", "--seed", "X", "--as-of", "12/05/2026", "--store", store)
    assert r.exit_code == 2 and "as_of" in r.stderr
    r = invoke("traverse", "--goal", "LateFeeDispute", "--seed", "X", "--as-of", "2026-05-12", "--store",
               store.parent / "nowhere")
    assert r.exit_code == 2 and "hopweave load" in r.stderr


def test_patterns_list_show_uses(store):
    r = invoke("patterns", "list", "--goal", "LateFeeDispute", "--store", store, "--json")
    names = [p["name"] for p in json.loads(r.stdout)]
    assert "comparable_precedent" in names and all(p["goal"] == "LateFeeDispute" for p in json.loads(r.stdout))
    r = invoke("patterns", "show", "comparable_precedent", "--store", store)
    assert json.loads(r.stdout)["depth"] == 3
    r = invoke("patterns", "uses", "--rel", "SIMILAR_TO", "--store", store, "--json")
    assert [p["name"] for p in json.loads(r.stdout)] == ["comparable_precedent", "fraud_precedent"]


def test_patterns_validate_against_a_changed_schema(store, tmp_path):
    r = invoke("patterns", "validate", "--store", store)
    assert r.exit_code == 0 and "valid" in r.stdout
    from domains import deltabank_schema

    data = deltabank_schema().model_dump(mode="json")
    data["relationships"] = [x for x in data["relationships"] if x["name"] != "MATCHES"]
    changed = tmp_path / "schema.yaml"
    changed.write_text(yaml.safe_dump(data))
    r = invoke("patterns", "validate", "--store", store, "--schema", changed, "--json")
    assert r.exit_code == 1
    invalid = json.loads(r.stdout)["invalid"]
    assert sorted(invalid) == ["applicable_rules", "credit_rules", "fraud_rules", "name_change_rules"]
