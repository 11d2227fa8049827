"""``hopweave eval intents``: the classifier's figures on a pack's labelled utterances."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hopweave.cli import app
from hopweave.pack.intent_eval import NO_GOAL, intent_report
from hopweave.understand.datasets import LabeledUtterance
from hopweave.understand.models import Classification

ROOT = Path(__file__).resolve().parents[3]


def _u(goal: str | None, text: str = "x", tags: tuple[str, ...] = ()) -> LabeledUtterance:
    return LabeledUtterance(goal=goal, text=text, tags=list(tags))


def _c(best: str | None, confidence: float) -> Classification:
    return Classification(goal=best if confidence >= 0.5 else None, confidence=confidence,
                          abstained=confidence < 0.5, threshold=0.5, best=best)


def test_report_counts_accuracy_abstention_and_confusion() -> None:
    items = [_u("A", tags=("paraphrase",)), _u("A", tags=("typo",)), _u("B"), _u(None), _u(None)]
    cls = [_c("A", 0.9), _c("A", 0.3), _c("A", 0.8), _c(None, 0.1), _c("B", 0.7)]
    r = intent_report(items, cls, 0.5)
    assert (r["n"], r["n_in_scope"], r["n_out_of_scope"]) == (5, 3, 2)
    assert r["in_scope_accuracy"] == pytest.approx(1 / 3)      # only the first A
    assert r["in_scope_abstained"] == pytest.approx(1 / 3)     # the typo fell under the threshold
    assert r["selective_accuracy"] == pytest.approx(1 / 2)     # of the two it answered
    assert r["oos_abstain_rate"] == pytest.approx(1 / 2)
    assert r["confusion"] == {"A": {"A": 1, NO_GOAL: 1}, "B": {"A": 1}, NO_GOAL: {"B": 1, NO_GOAL: 1}}
    assert r["per_label"]["A"]["precision"] == pytest.approx(1 / 2)
    assert r["by_tag"] == {"paraphrase": {"n": 1, "correct": 1.0}, "typo": {"n": 1, "correct": 0.0}}
    assert len(r["errors"]) == 3
    # read at a lower threshold, the typo is answered (and right)
    assert intent_report(items, cls, 0.2)["in_scope_accuracy"] == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        intent_report(items, cls[:2], 0.5)


def test_an_unknown_split_is_a_typed_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["eval", "intents", str(ROOT / "examples" / "deltabank"), "--split", "nope"])
    assert res.exit_code == 2
    assert "no such labelled split" in res.output


@pytest.mark.slow
@pytest.mark.parametrize("pack", ["deltabank", "telecom"])
def test_eval_intents_on_the_example_packs_in_one_process(pack: str) -> None:
    t0 = time.perf_counter()
    res = CliRunner().invoke(app, ["eval", "intents", str(ROOT / "examples" / pack), "--split", "test", "--json"])
    elapsed = time.perf_counter() - t0
    assert res.exit_code == 0, res.output
    r = json.loads(res.output)
    assert r["pack"] == pack and r["n"] > 50
    assert r["in_scope_accuracy"] >= 0.9 and r["oos_abstain_rate"] >= 0.9
    assert set(r["calibration"]) == {"ece", "brier", "log_loss"}
    assert sum(sum(row.values()) for row in r["confusion"].values()) == r["n"]
    print(f"eval intents {pack}: {elapsed:.1f} s")
