"""The living-memory commands as a new user runs them on the second shipped pack (Acme Mobile,
examples/telecom, loaded graph-only): `write-facts` with the pack's example facts file, a
`--tenant` the store does not serve, a review given twice, and the hints `consolidate` and
`pattern-report` print when there are too few decided cases. The DeltaBank example facts file
is written to a copy of the session's CLI store."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hopweave.cli import app
from hopweave.engine import consolidate as C
from hopweave.graph.base import Node
from hopweave.stores.front import open_stores

REPO = Path(__file__).resolve().parents[3]
TELECOM = REPO / "examples" / "telecom"
GOAL = "RoamingChargeDispute"


@pytest.fixture(scope="module")
def telecom(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Acme Mobile's pack, loaded graph-only (no corpus vectors: the memory commands read none)."""
    d = tmp_path_factory.mktemp("telecom") / "store"
    res = CliRunner().invoke(app, ["load", str(TELECOM), "--no-vectors", "--graph", str(d)])
    assert res.exit_code == 0, res.output
    return d


def _node(store: Path, tenant: str, nid: str) -> Node | None:
    stores = open_stores(str(store), None, graph_only=True)
    try:
        return stores.graph.get_node(tenant, nid)
    finally:
        stores.close()


def test_the_telecom_example_facts_file_writes_once(telecom: Path) -> None:
    facts = TELECOM / "facts" / "new-roaming-charge.jsonl"
    args = ["write-facts", str(facts), "--tenant", "acme", "--source", "billing", "--graph", str(telecom), "--json"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    out = json.loads(first.output)
    assert out["nodes_written"] == ["CHG_2001_20260601"] and out["edges_written"] == 2
    again = json.loads(CliRunner().invoke(app, args).output)
    assert again["nodes_written"] == [] and again["edges_written"] == 0 and again["unchanged"] == 3
    node = _node(telecom, "acme", "CHG_2001_20260601")
    assert node is not None and node.props["recorded_by"] == "billing"


def test_the_deltabank_example_facts_file_writes(cli_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(cli_store, store)
    res = CliRunner().invoke(app, ["write-facts", str(REPO / "examples" / "deltabank" / "facts" / "new-fees.jsonl"),
                                   "--tenant", "deltabank", "--source", "billing", "--graph", str(store)])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("1 nodes and 2 edges written, 0 unchanged")


def test_write_facts_refuses_a_tenant_the_store_does_not_serve(telecom: Path, tmp_path: Path) -> None:
    f = tmp_path / "typo.jsonl"
    f.write_text(json.dumps({"node": "CHG_TYPO_1", "label": "Charge", "properties": {"amount": 1.0}}) + "\n")
    res = CliRunner().invoke(app, ["write-facts", str(f), "--tenant", "acm", "--source", "billing",
                                   "--graph", str(telecom)])
    assert res.exit_code == 2
    assert "TenantError" in res.output and "hopweave load PACK" in res.output
    assert _node(telecom, "acm", "CHG_TYPO_1") is None  # nothing written


def test_a_review_given_twice_keeps_the_first_reviewer_and_instant(telecom: Path) -> None:
    mined = C.MinedHeuristic(goal=GOAL, conditions=(("amount", "<=", 40.0),), outcome="credited", support=3,
                             confidence=1.0)
    stores = open_stores(str(telecom), None, graph_only=True)
    try:
        C.propose(stores.graph, stores.graph.write, "acme", [mined], at=datetime(2026, 7, 1))
    finally:
        stores.close()
    runner = CliRunner()
    base = ["review", "--tenant", "acme", "--approve", mined.id, "--graph", str(telecom), "--json"]
    first = runner.invoke(app, [*base, "--by", "ops-lead", "--as-of", "2026-07-02T09:00:00"])
    assert first.exit_code == 0, first.output
    again = runner.invoke(app, [*base, "--by", "someone-else", "--as-of", "2026-08-02T09:00:00"])
    assert again.exit_code == 0, again.output
    for res in (first, again):
        done = json.loads(res.output)["heuristics"][0]
        assert (done["status"], done["reviewed_by"], done["reviewed_at"]) == (
            "approved", "ops-lead", "2026-07-02T09:00:00")
    node = _node(telecom, "acme", mined.id)
    assert node is not None and str(node.props["recorded_at"]).startswith("2026-07-02T09:00:00")  # not moved later
    other = runner.invoke(app, ["review", "--tenant", "acme", "--reject", mined.id, "--by", "x",
                                "--graph", str(telecom)])
    assert other.exit_code == 2 and "already approved" in other.output


def test_too_few_decided_cases_say_what_to_do(telecom: Path) -> None:
    res = CliRunner().invoke(app, ["consolidate", "--goal", GOAL, "--tenant", "acme", "--dry-run",
                                   "--graph", str(telecom)])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("0 decided cases of RoamingChargeDispute; 0 heuristic(s)")
    assert "--min-support 20" in res.output and "hopweave outcome" in res.output
    res = CliRunner().invoke(app, ["pattern-report", "--goal", GOAL, "--tenant", "acme", "--graph", str(telecom)])
    assert res.exit_code == 0, res.output
    assert "--min-cases 20" in res.output and "hopweave outcome --cite" in res.output


def test_review_refuses_an_unknown_status_or_goal(telecom: Path) -> None:
    base = ["review", "--tenant", "acme", "--graph", str(telecom)]
    res = CliRunner().invoke(app, [*base, "--status", "approve"])
    assert res.exit_code == 2 and "--status must be proposed, approved or rejected" in res.output
    res = CliRunner().invoke(app, [*base, "--goal", "LateFeeDispute"])
    assert res.exit_code == 2 and "NotFoundError" in res.output and "RoamingChargeDispute" in res.output


def test_the_record_decision_tool_names_the_domains_own_outcomes(telecom: Path) -> None:
    from hopweave.adapters.agent_tool import RecordDecisionTool
    from hopweave.engine.engine import Engine

    stores = open_stores(str(telecom), None, graph_only=True)
    eng = Engine(stores.graph, None, domains=stores.domains(), settings=stores.settings, store_dir=stores.store_dir)
    try:
        tool = RecordDecisionTool(eng, json.loads((TELECOM / "sessions" / "ana.json").read_text()))
        assert tool.description.endswith("Outcomes by goal: RoamingChargeDispute: credited, declined, escalated.")
        assert "fee_waived" not in tool.description  # another domain's vocabulary
    finally:
        eng.close()
