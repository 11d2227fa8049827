"""`hopweave eval scenarios`: per-goal / per-pattern metrics, single pass against multi-round."""

from __future__ import annotations

import shutil
from pathlib import Path

from engine_store import SCENARIOS

from hopweave.engine.scenario_eval import evaluate


def test_eval_scenarios_modes_goals_and_patterns(engine, tmp_path: Path) -> None:  # noqa: ANN001
    for name in ("01_maria_late_fee.yaml", "35_round2_fraud_on_savings.yaml", "38_two_intents_late_fee_and_due_date.yaml"):
        shutil.copy(SCENARIOS / name, tmp_path / name)
    (tmp_path / "sessions").mkdir()
    shutil.copy(SCENARIOS.parent / "sessions" / "maria.json", tmp_path / "sessions" / "maria.json")
    sub = tmp_path / "scenarios"
    sub.mkdir()
    for f in tmp_path.glob("*.yaml"):
        f.rename(sub / f.name)
    report = evaluate(engine, [sub])
    multi, single = report["multi_round"], report["single_pass"]
    assert multi["overall"]["scenarios"] == 3 and multi["overall"]["fact_recall"] == 1.0
    assert multi["overall"]["forbidden_rate"] == 0.0 and multi["overall"]["goal_accuracy"] == 1.0
    rows = {r["scenario"]: r for r in multi["scenarios"]}
    assert rows["maria_late_fee"]["rounds"] == 1 and rows["round2_fraud_on_savings"]["rounds"] == 2
    assert {r["scenario"]: r["rounds"] for r in single["scenarios"]} == {
        "maria_late_fee": 1, "round2_fraud_on_savings": 1, "two_intents_late_fee_and_due_date": 1}
    assert single["overall"]["fact_recall"] < 1.0  # the multi-round / multi-intent facts need the loop
    assert "LateFeeDispute" in multi["per_goal"] and "applicable_rules" in multi["per_pattern"]
    assert report["one_round_scenarios"]["multi_round"]["scenarios"] == 1
    assert engine.single_pass is False
