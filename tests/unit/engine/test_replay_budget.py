"""``replay --budget-ms`` and a scenario's ``options.budget_ms``: the scenario runs at that
request budget with served timings (pattern budgets and round latencies unscaled), instead of
the audit budgets; a bad budget is refused before anything runs."""

from __future__ import annotations

import pytest
from engine_store import SCENARIOS
from typer.testing import CliRunner

from hopweave.cli import app
from hopweave.engine.config import EngineConfig
from hopweave.engine.replay import REPLAY_CONFIG, budget_config, replay, run_scenario
from hopweave.errors import InputError
from hopweave.models.scenario import load_scenario

MARIA_SC = SCENARIOS / "01_maria_late_fee.yaml"


def test_budget_config_is_served_timing_at_that_budget() -> None:
    c = budget_config(800)
    assert c.budget_ms == 800 and c.pattern_budget_scale == 1.0 and c.round_latency_scale == 1.0
    assert c.pattern_budget_scale == EngineConfig().pattern_budget_scale != REPLAY_CONFIG.pattern_budget_scale
    for bad in (0, -5, True, 1.5):
        with pytest.raises(InputError, match="replay budget"):
            budget_config(bad)  # type: ignore[arg-type]


def test_a_generous_budget_still_passes(engine) -> None:
    (o,) = replay(engine, [MARIA_SC], record=False, budget_ms=20_000)
    assert o.passed, o.failures
    (audit,) = replay(engine, [MARIA_SC], record=False)
    assert o.context_hash == audit.context_hash  # nothing was cut by time


def test_a_tiny_budget_is_applied(engine) -> None:
    sc = load_scenario(MARIA_SC)
    r = run_scenario(engine, sc, record=False, budget_ms=1)
    assert r.degraded, "a 1 ms budget must cut something"
    own = sc.model_copy(update={"options": sc.options.model_copy(update={"budget_ms": 20_000})})
    assert not run_scenario(engine, own, record=False, budget_ms=1).degraded  # the scenario's own budget wins


def test_cli_refuses_a_bad_budget() -> None:
    res = CliRunner().invoke(app, ["replay", str(MARIA_SC), "--budget-ms", "0"])
    assert res.exit_code == 2 and "replay budget" in res.output
