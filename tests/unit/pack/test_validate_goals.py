"""`hopweave validate`'s goal check: a goal with several patterns is gated as a whole, and each
broken pattern is one problem (not one per sibling pattern)."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from hopweave.pack.manifest import read_manifest
from hopweave.pack.validate import check_goals, check_schema

TELECOM = Path(__file__).resolve().parents[3] / "examples" / "telecom"


def _check(pack: Path) -> list:
    m = read_manifest(pack)
    schema, _, problems = check_schema(pack.resolve(), m)
    assert schema is not None and not problems
    return check_goals(pack.resolve(), m, schema)


def _copy(tmp_path: Path) -> Path:
    pack = tmp_path / "telecom"
    shutil.copytree(TELECOM, pack, ignore=shutil.ignore_patterns("corpus", "graph", "scenarios"))
    return pack


def test_shipped_multi_pattern_goals_have_no_problem() -> None:
    assert _check(TELECOM) == []


def test_one_broken_pattern_is_one_problem(tmp_path: Path) -> None:
    pack = _copy(tmp_path)
    f = pack / "goals" / "outage_credit.yaml"
    doc = yaml.safe_load(f.read_text())
    doc["patterns"][4]["edge_sequence"][0]["type"] = "NO_SUCH_EDGE"
    f.write_text(yaml.safe_dump(doc))
    problems = _check(pack)
    assert len(problems) == 1
    assert problems[0].record == "pattern outage_area_events" and "NO_SUCH_EDGE" in problems[0].message


def test_section_naming_a_missing_pattern_is_a_goal_problem(tmp_path: Path) -> None:
    pack = _copy(tmp_path)
    f = pack / "goals" / "plan_change.yaml"
    doc = yaml.safe_load(f.read_text())
    doc["goal"]["sections"][1]["patterns"] = ["planchange_nowhere"]
    f.write_text(yaml.safe_dump(doc))
    problems = _check(pack)
    assert [p.record for p in problems] == ["goal PlanChange"]
    assert "planchange_nowhere" in problems[0].message
