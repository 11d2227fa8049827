"""`hopweave outcome --history`: every version recorded on a trace (a decision and its correction),
for the session's own customer only, on a copy of the session's CLI store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from domains import AS_OF, DELTABANK_REGISTRY, MARIA, UTTERANCE
from typer.testing import CliRunner

from hopweave.cli import app
from hopweave.engine.engine import Engine
from hopweave.engine.replay import REPLAY_CONFIG

REPO = Path(__file__).resolve().parents[3]
SESSIONS = REPO / "examples" / "deltabank" / "sessions"


def test_history_lists_the_decision_and_its_correction(cli_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(cli_store, store)
    with Engine.open(store, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG) as eng:
        tid = eng.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF).trace_id
    maria = str(SESSIONS / "maria.json")
    runner = CliRunner()
    base = ["outcome", tid, "--session", maria, "--graph", str(store)]
    assert runner.invoke(app, [*base, "--history"]).output.strip() == f"no outcome recorded on {tid}"
    for outcome, at in (("fee_waived", "2026-05-13T10:00:00"), ("escalated", "2026-05-14T10:00:00")):
        res = runner.invoke(app, [*base, "--outcome", outcome, "--decided-by", "Janet", "--as-of", at])
        assert res.exit_code == 0, res.output
    res = runner.invoke(app, [*base, "--history"])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == ["v1 2026-05-13T10:00:00  fee_waived by Janet",
                                       "v2 2026-05-14T10:00:00  escalated by Janet"]
    rows = json.loads(runner.invoke(app, [*base, "--history", "--json"]).output)
    assert [(r["version"], r["outcome"]) for r in rows] == [(1, "fee_waived"), (2, "escalated")]
    other = runner.invoke(app, ["outcome", tid, "--session", str(SESSIONS / "mario_gold.json"), "--history",
                                "--graph", str(store)])
    assert other.exit_code == 2 and "IdentityError" in other.output  # another customer's trace: refused


def test_history_and_recording_flags_do_not_mix(tmp_path: Path) -> None:
    maria = str(SESSIONS / "maria.json")
    res = CliRunner().invoke(app, ["outcome", "RT_x", "--session", maria, "--history", "--outcome", "declined",
                                   "--graph", str(tmp_path / "none")])
    assert res.exit_code == 2 and "--history lists the recorded versions" in res.output
    res = CliRunner().invoke(app, ["outcome", "RT_x", "--session", maria, "--graph", str(tmp_path / "none")])
    assert res.exit_code == 2 and "--outcome is required" in res.output
