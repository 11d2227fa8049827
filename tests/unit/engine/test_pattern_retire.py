"""Retiring a pattern (engine/pattern_learning.py ``approve_pattern`` on a ``retire`` proposal) and
seeing what an approval changes (engine/replay.py ``compare``), on a copy of the session store:
the retired pattern's next version is stored with ``status: retired``, its goal no longer runs it,
a trace that ran it still replays as recorded, and the scenarios replayed before and after show
the pattern gone. The simulated-operation version (proposals mined from decided cases, through
the CLI) is test_consolidate.py's (slow)."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path
from typing import Iterator

import pytest
from conftest import DELTABANK_REGISTRY, MARIA, SCENARIOS, UTTERANCE

from hopweave.engine import pattern_learning as PL
from hopweave.engine.engine import Engine
from hopweave.engine.outcomes import commit
from hopweave.engine.replay import REPLAY_CONFIG, as_recorded, compare
from hopweave.errors import InputError, NotFoundError
from hopweave.graph.base import Node
from hopweave.graph.metagraph_io import to_json
from hopweave.models.metagraph import TraversalPattern

GOAL = "LateFeeDispute"
AT = datetime(2026, 6, 1, 9, 0)
SCENARIO = SCENARIOS / "01_maria_late_fee.yaml"


@pytest.fixture(scope="module")
def eng(cli_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    d = tmp_path_factory.mktemp("retire") / "store"
    shutil.copytree(cli_store, d)
    e = Engine.open(d, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG)
    yield e
    e.close()


def _stored(eng: Engine, name: str) -> TraversalPattern:
    return next(p for p in eng.graph.patterns(GOAL) if p.name == name)


def _propose_retire(eng: Engine, definition: TraversalPattern) -> str:
    """A retire proposal as ``pattern-report --propose`` writes one."""
    raw = to_json(definition)
    pid = PL._proposal_id("deltabank", "retire", raw)
    commit(eng.trace_writer, "deltabank", [Node(pid, "PatternProposal", {
        "kind": "retire", "goal": GOAL, "pattern": definition.name, "status": "proposed", "definition": raw,
        "reason": "returned rows in 30 decided cases, cited in none", "proposed_by": PL.PROPOSER,
        "proposed_at": AT, "summary": f"Pattern proposal (retire) {definition.name}"})], [])
    return pid


def _approve(eng: Engine, pid: str) -> dict[str, object]:
    return PL.approve_pattern(eng.graph, lambda t, n, e: commit(eng.trace_writer, t, n, e), "deltabank", pid,
                              by="ops-lead", at=AT, domain="deltabank")


def test_an_active_status_is_left_out_of_the_stored_definition(eng: Engine) -> None:
    p = _stored(eng, "waiver_history")
    assert p.status == "active" and "status" not in json.loads(to_json(p))  # stored definitions, hashes unchanged
    retired = p.model_copy(update={"status": "retired"})
    assert json.loads(to_json(retired))["status"] == "retired" and retired.definition_hash() != p.definition_hash()
    assert TraversalPattern.model_validate_json(to_json(retired)).status == "retired"


def test_approving_a_retire_proposal_retires_the_pattern_and_replay_shows_it(eng: Engine) -> None:
    before = eng.retrieve(UTTERANCE, session=MARIA, as_of="2026-05-12")
    assert before.recorded and "waiver_history" in {f.pattern for f in before.facts}
    old = _stored(eng, "waiver_history")
    pid = _propose_retire(eng, old)
    done, changes = compare(eng, [SCENARIO], lambda: _approve(eng, pid))
    assert (done["status"], done["reviewed_by"]) == ("approved", "ops-lead")
    (change,) = changes
    assert change.before.passed and change.after.passed, change.after.failures
    assert change.diff.changes["patterns"]["removed"] == [f"waiver_history@{old.version}"]
    assert "waiver_history" in change.rows and change.rows["waiver_history"]["added"] == []
    assert "patterns: - waiver_history@1" in change.render()
    now = _stored(eng, "waiver_history")
    assert (now.status, now.version, now.author) == ("retired", old.version + 1, "ops-lead")
    assert now.edge_sequence == old.edge_sequence  # the same pattern, kept for the audit
    after = eng.retrieve(UTTERANCE, session=MARIA, as_of="2026-05-12", record=False)
    assert "waiver_history" not in {f.pattern for f in after.facts}  # its goal no longer runs it
    again = as_recorded(eng, "deltabank", before.trace_id)
    assert again.identical and again.text == before.context.text  # the trace that ran it, as recorded
    rep = PL.pattern_report(eng.graph, "deltabank", eng.goals().goals[GOAL], eng.graph.patterns(GOAL), min_cases=1)
    assert rep["retired"] == ["waiver_history"] and "waiver_history" not in {p["name"] for p in rep["patterns"]}
    assert _approve(eng, pid)["status"] == "approved"  # approving again changes nothing
    assert _stored(eng, "waiver_history").version == old.version + 1


def test_a_stale_or_unknown_retire_proposal_is_refused_and_retires_nothing(eng: Engine) -> None:
    cur = _stored(eng, "customer_tier")
    stale = _propose_retire(eng, cur.model_copy(update={"version": cur.version + 5}))
    with pytest.raises(InputError, match="changed since"):
        _approve(eng, stale)
    gone = _propose_retire(eng, cur.model_copy(update={"name": "no_such_pattern"}))
    with pytest.raises(NotFoundError, match="no longer stored"):
        _approve(eng, gone)
    with pytest.raises(NotFoundError):
        _approve(eng, "PP_0000000000000000")
    assert _stored(eng, "customer_tier") == cur  # nothing retired
    assert {p["id"]: p["status"] for p in PL.pattern_proposals(eng.graph, "deltabank")}[stale] == "proposed"
