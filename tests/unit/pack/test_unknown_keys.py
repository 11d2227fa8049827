"""An unknown key in a pack file is an error naming the nearest valid key and the valid keys at
its place: scenario, goal, filter mapping, classifier settings and the manifest (``validate``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from hopweave.errors import ConfigError, InputError, PatternValidationError
from hopweave.graph.metagraph_io import parse_goal_doc
from hopweave.models.keys import valid_keys
from hopweave.models.scenario import Scenario, parse_scenario
from hopweave.pack.validate import validate_pack
from hopweave.understand.filter_map import parse_mapping

ROOT = Path(__file__).resolve().parents[3]
TELECOM = ROOT / "examples" / "telecom"


def test_a_scenario_typo_names_the_key_it_meant() -> None:
    with pytest.raises(InputError, match=r"unknown key 'expect.fact' \(did you mean 'facts'\?"):
        parse_scenario({"name": "x", "utterance": "u", "as_of": "2026-01-01", "expect": {"fact": ["a"]}}, "s.yaml")
    assert "forbidden_metadata" in valid_keys(Scenario, ("expect",))


def test_goal_and_filter_typos() -> None:
    goal = yaml.safe_load((TELECOM / "goals" / "outage_credit.yaml").read_text(encoding="utf-8"))
    goal["goal"]["serach_template"] = "x"
    with pytest.raises(PatternValidationError, match="did you mean 'search_template'"):
        parse_goal_doc(goal, "outage_credit.yaml")
    with pytest.raises(ConfigError, match=r"'always_on.0.sesion' \(did you mean 'session'\?"):
        parse_mapping({"version": 1, "always_on": [{"field": "tenant_id", "sesion": "tenant_id"}]}, "filters.yaml")


def test_validate_names_the_manifest_and_classifier_keys(tmp_path: Path) -> None:
    pack = tmp_path / "telecom"
    shutil.copytree(TELECOM, pack)
    cls = yaml.safe_load((pack / "classifier.yaml").read_text(encoding="utf-8"))
    cls["lexical_wieght"] = 0.5
    (pack / "classifier.yaml").write_text(yaml.safe_dump(cls), encoding="utf-8")
    text = "\n".join(f"{p.file} {p.record} {p.message}" for p in validate_pack(pack))
    assert "unknown key 'lexical_wieght' (did you mean 'lexical_weight'?" in text, text
