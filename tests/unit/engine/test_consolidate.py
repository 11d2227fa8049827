"""Consolidation (engine/consolidate.py) on simulated operation (the DeltaBank generator's
simulate.py): cases played through a real engine on a copy of the session store, mined into
heuristics, proposed, reviewed over the CLI, and only approved ones reach the Procedure section.

The simulated suite is slow (HOPWEAVE_SIM_CASES cases, default 200, ~80 s on this loaded machine;
the 5,000-case figures are in docs/BENCHMARKS.md, "Living memory"). The miner's own tests are fast.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from typer.testing import CliRunner

_ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(_ROOT / "examples" / "deltabank"))  # the pack's generator
sys.path.insert(0, str(_ROOT / "tests" / "shared"))
from domains import DELTABANK_REGISTRY  # noqa: E402
from generator import simulate as S  # noqa: E402

from hopweave.cli import app  # noqa: E402
from hopweave.engine import consolidate as C  # noqa: E402
from hopweave.engine.engine import Engine  # noqa: E402
from hopweave.engine.replay import REPLAY_CONFIG  # noqa: E402
from hopweave.errors import InputError, NotFoundError  # noqa: E402

CASES = int(os.environ.get("HOPWEAVE_SIM_CASES", "200"))
SUPPORT = 10  # the default (20) is for thousands of cases; a few hundred split into smaller leaves


def _case(i: int, outcome: str, **facts: Any) -> C.DecidedCase:
    return C.DecidedCase(f"T{i:04d}", facts, outcome)


def _synthetic() -> list[C.DecidedCase]:
    out = []
    i = 0
    for tier in ("Platinum", "Gold"):
        for amount in (25.0, 45.0, 75.0):
            for w in (0, 1):
                for k in range(12):
                    rule = "escalated" if amount > 50 else "declined" if w or tier != "Platinum" else "fee_waived"
                    noisy = k == 0 and amount == 25.0  # one noisy case per cell
                    out.append(_case(i, "declined" if noisy and rule != "declined" else rule, tier=tier,
                                     amount=amount, waivers_this_year=w))
                    i += 1
    return out


def test_the_miner_recovers_planted_rules_deterministically() -> None:
    cases = _synthetic()
    mined = C.mine(cases, "G", ["tier", "amount", "waivers_this_year"], min_support=10)
    texts = [h.text() for h in mined]
    assert "If amount > 45.0 then escalated" in texts
    assert 'If amount <= 45.0 and tier == "Platinum" and waivers_this_year <= 0 then fee_waived' in texts
    waived = next(h for h in mined if h.outcome == "fee_waived")
    assert waived.support == 24 and waived.confidence == round(23 / 24, 4) and len(waived.evidence) == 23
    assert all(h.confidence >= C.DEFAULT_MIN_CONFIDENCE and h.support >= 10 for h in mined)
    again = C.mine(list(reversed(cases)), "G", ["waivers_this_year", "tier", "amount"], min_support=10)
    assert [h.model_dump() for h in again] == [h.model_dump() for h in mined]  # order-free, deterministic
    assert len({h.id for h in mined}) == len(mined)


def test_the_miner_refuses_bad_settings_and_mines_nothing_from_nothing() -> None:
    assert C.mine([], "G", ["tier"]) == []
    for bad in ({"min_support": 0}, {"min_confidence": 1.5}, {"max_depth": 0}):
        with pytest.raises(InputError):
            C.mine(_synthetic(), "G", ["tier"], **bad)
    # too few cases for the support: no heuristic rests on fewer than min_support cases
    assert C.mine(_synthetic()[:5], "G", ["tier", "amount"], min_support=10) == []


# ---- simulated operation ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sim_store(cli_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("consolidate") / "store"
    shutil.copytree(cli_store, d)
    return d


@pytest.fixture(scope="module")
def simulated(sim_store: Path) -> Iterator[tuple[Engine, S.Simulation]]:
    eng = Engine.open(sim_store, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG)
    cases = S.cases(CASES)
    S.write_cases(eng.graph, cases)
    sim = S.play(eng, cases)
    yield eng, sim
    eng.close()


@pytest.mark.slow
def test_the_simulation_is_deterministic_and_decides_by_the_rules(simulated: tuple[Engine, S.Simulation]) -> None:
    eng, sim = simulated
    assert [c.facts for c in S.cases(50)] == [c.facts for c in S.cases(50)]
    assert len(sim.decided()) == CASES and sim.fact_mismatches == 0  # the engine resolved the generated facts
    noisy = [p for p in sim.played if p.noisy]
    assert 0 < len(noisy) < CASES * 0.12 and all(p.outcome != p.truth for p in noisy)
    assert all(p.outcome == p.truth for p in sim.played if not p.noisy)
    p = sim.played[0]
    node = eng.graph.get_node("deltabank", p.decided_id)
    assert node is not None and node.props["outcome"] == p.outcome and tuple(node.props["cited"]) == p.cited
    assert p.case.product in p.cited  # the planted cited-but-unretrieved node
    trace = eng.graph.get_node("deltabank", p.trace_id)
    assert trace is not None
    raw = trace.props["pattern_rows_json"]
    rows = json.loads(raw) if isinstance(raw, str) else raw
    assert p.case.product not in {r for ids in rows.values() for r in ids}


@pytest.mark.slow
def test_consolidation_recovers_the_rules_and_only_approved_heuristics_reach_the_procedure(
        simulated: tuple[Engine, S.Simulation], sim_store: Path) -> None:
    eng, sim = simulated
    goal = {g.name: g for g in eng.graph.goal_types()}[S.GOAL]
    assert goal.outcomes is not None
    decided = C.decided_cases(eng.graph, "deltabank", goal)
    mined = C.mine(decided, goal.name, list(goal.outcomes.keep), min_support=SUPPORT)
    rec = S.recovery(mined, sim.played)
    assert rec["precision"] >= 0.9 and rec["recall"] >= 0.9, rec
    eng.close()  # the CLI opens the store itself
    runner = CliRunner()
    args = ["consolidate", "--goal", S.GOAL, "--tenant", "deltabank", "--min-support", str(SUPPORT),
            "--graph", str(sim_store), "--json"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    out = json.loads(first.output)
    assert out["cases"] == CASES and [p["text"] for p in out["proposals"]] == [h.text() for h in mined]
    assert {p["status"] for p in out["proposals"]} == {"proposed"}
    assert runner.invoke(app, args).output == first.output  # deterministic, idempotent
    shallow = runner.invoke(app, [*args, "--dry-run", "--max-depth", "1"])
    assert shallow.exit_code == 0, shallow.output
    one = C.mine(decided, goal.name, list(goal.outcomes.keep), min_support=SUPPORT, max_depth=1)
    texts = [h["text"] for h in json.loads(shallow.output)["proposals"]]
    assert texts == [h.text() for h in one] and texts != [h.text() for h in mined]
    assert all(len(h.conditions) == 1 for h in one)
    assert runner.invoke(app, [*args, "--dry-run", "--max-depth", "0"]).exit_code == 2
    listed = json.loads(runner.invoke(app, ["review", "--tenant", "deltabank", "--graph", str(sim_store),
                                            "--json"]).output)["heuristics"]
    assert sorted(p["id"] for p in listed) == sorted(p["id"] for p in out["proposals"])
    waive = next(p for p in out["proposals"] if p["outcome"] == "fee_waived")
    other = next(p for p in out["proposals"] if p["outcome"] != "fee_waived")
    ok = runner.invoke(app, ["review", "--tenant", "deltabank", "--approve", waive["id"], "--by", "ops-lead",
                             "--as-of", "2026-08-01T09:00:00", "--graph", str(sim_store), "--json"])
    assert ok.exit_code == 0, ok.output
    done = json.loads(ok.output)["heuristics"][0]
    assert (done["status"], done["reviewed_by"], done["reviewed_at"]) == ("approved", "ops-lead", "2026-08-01T09:00:00")
    no = runner.invoke(app, ["review", "--tenant", "deltabank", "--reject", other["id"], "--by", "ops-lead",
                             "--as-of", "2026-08-01T09:05:00", "--graph", str(sim_store)])
    assert no.exit_code == 0 and "[rejected]" in no.output
    again = runner.invoke(app, ["review", "--tenant", "deltabank", "--approve", other["id"], "--by", "x",
                                "--graph", str(sim_store)])
    assert again.exit_code != 0 and "already rejected" in again.output
    with Engine.open(sim_store, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG) as e2:
        c = S.cases(1)[0]
        session = {"tenant_id": "deltabank", "customer_id": c.customer_id, "channel": "chat"}
        after = e2.retrieve(c.utterance, session=session, as_of="2026-08-02T10:00:00").context.text
        before = e2.retrieve(c.utterance, session=session, as_of="2026-07-31T10:00:00").context.text
        assert waive["text"] in after and other["text"] not in after  # approved only, from its approval on
        assert waive["text"] not in before
        with pytest.raises(NotFoundError):
            C.review(e2.graph, e2.graph.write, "northbank", {}, waive["id"], decision="approve", by="x",
                     at=c.as_of)  # another tenant cannot see, let alone approve, this tenant's proposal


@pytest.mark.slow
def test_the_pattern_report_flags_the_uncited_pattern_and_proposes_the_unretrieved_path(
        simulated: tuple[Engine, S.Simulation], sim_store: Path) -> None:
    eng, _sim = simulated
    eng.close()  # the CLI opens the store itself
    runner = CliRunner()
    base = ["--goal", S.GOAL, "--tenant", "deltabank", "--graph", str(sim_store)]
    res = runner.invoke(app, ["pattern-report", *base, "--min-cases", "10", "--propose", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    rep = {p["name"]: p for p in out["report"]["patterns"]}
    assert [n for n, p in rep.items() if p["never_cited"]] == ["waiver_history"]
    assert rep["disputed_fee_event"]["cited_in"] == CASES and rep["waiver_history"]["retrieved_in"] >= 10
    assert out["report"]["unretrieved"]["cases"] == CASES
    new = [p for p in out["proposals"] if p["kind"] == "new"]
    assert len(new) == 1 and new[0]["pattern"] == "cited_product"
    d = json.loads(new[0]["definition"]) if isinstance(new[0]["definition"], str) else new[0]["definition"]
    assert [(s["type"], s["direction"]) for s in d["edge_sequence"]] == [("HOLDS", "out"), ("OF_PRODUCT", "out")]
    assert {"on": 1, "property": "type", "op": "eq"}.items() <= d["predicates"][0].items()
    c = S.cases(1)[0]
    scen = sim_store.parent / "scenarios"
    scen.mkdir()
    (scen / "case0.yaml").write_text(json.dumps({  # JSON is YAML
        "name": "simulated_case_0", "utterance": c.utterance, "as_of": "2026-08-02T10:00:00",
        "session": {"tenant_id": "deltabank", "customer_id": c.customer_id}, "expect": {"goal": S.GOAL}}))
    ok = runner.invoke(app, ["review-pattern", "--tenant", "deltabank", "--approve", new[0]["id"], "--by", "ops-lead",
                             "--as-of", "2026-08-01T09:00:00", "--graph", str(sim_store), "--scenarios", str(scen)])
    assert ok.exit_code == 0, ok.output
    assert f"{new[0]['id']} [approved] new cited_product" in ok.output
    assert "1 scenarios, 1 changed, 0 newly failing" in ok.output
    assert "simulated_case_0: PASS -> PASS, context changed" in ok.output
    assert "patterns: + cited_product@1" in ok.output and f"rows cited_product: + {c.product}" in ok.output
    assert f"fact_ids: + {c.product}" in ok.output  # its row reaches the context, as a line of its section
    with Engine.open(sim_store, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG) as e2:
        res2 = e2.retrieve(c.utterance, session={"tenant_id": "deltabank", "customer_id": c.customer_id},
                           as_of="2026-08-02T10:00:00")
        rows = {f.pattern: [r.node_id for r in f.rows] for f in res2.facts}
        assert rows.get("cited_product") == [c.product]  # the approved pattern runs: credit card product only
        assert e2.graph.get_node("deltabank", new[0]["id"]).props["status"] == "approved"  # type: ignore[union-attr]


@pytest.mark.slow
def test_approving_a_retire_proposal_retires_the_pattern_and_its_traces_replay_as_recorded(
        simulated: tuple[Engine, S.Simulation], sim_store: Path) -> None:
    from hopweave.engine import record
    from hopweave.engine.replay import as_recorded

    eng, sim = simulated
    eng.close()  # the CLI opens the store itself
    runner = CliRunner()
    base = ["--goal", S.GOAL, "--tenant", "deltabank", "--graph", str(sim_store)]
    out = json.loads(runner.invoke(app, ["pattern-report", *base, "--min-cases", "10", "--propose", "--json"]).output)
    retire = next(p for p in out["proposals"] if p["kind"] == "retire")
    assert retire["pattern"] == "waiver_history"
    with Engine.open(sim_store, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG) as e0:
        earlier = next(p for p in sim.played if _rows_of(e0, p.trace_id).get("waiver_history"))  # ran it, with rows
    c = S.cases(1)[0]
    scen = sim_store.parent / "retire_scenarios"
    scen.mkdir()
    (scen / "case0.yaml").write_text(json.dumps({
        "name": "simulated_case_0", "utterance": c.utterance, "as_of": "2026-08-02T10:00:00",
        "session": {"tenant_id": "deltabank", "customer_id": c.customer_id}, "expect": {"goal": S.GOAL}}))
    ok = runner.invoke(app, ["review-pattern", "--tenant", "deltabank", "--approve", retire["id"], "--by", "ops-lead",
                             "--as-of", "2026-08-01T09:30:00", "--graph", str(sim_store), "--scenarios", str(scen),
                             "--json"])
    assert ok.exit_code == 0, ok.output
    done = json.loads(ok.output)
    assert (done["proposals"][0]["status"], done["proposals"][0]["reviewed_by"]) == ("approved", "ops-lead")
    change = done["replay"][0]
    assert change["before"]["passed"] and change["after"]["passed"]
    assert change["diff"]["changes"]["patterns"]["removed"] == ["waiver_history@1"]
    assert change["rows"]["waiver_history"]["added"] == [] and change["rows"]["waiver_history"]["removed"]
    listed = json.loads(runner.invoke(app, ["patterns", "list", "--goal", S.GOAL, "--graph", str(sim_store),
                                            "--json"]).output)
    row = next(r for r in listed if r["name"] == "waiver_history")
    assert (row["status"], row["version"]) == ("retired", 2)  # still stored and listed, as a new version
    report = json.loads(runner.invoke(app, ["pattern-report", *base, "--min-cases", "10", "--json"]).output)
    assert report["report"]["retired"] == ["waiver_history"]
    assert not any(p["kind"] == "retire" for p in report["proposals"])  # not proposed again
    with Engine.open(sim_store, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG) as e2:
        stored = next(p for p in e2.graph.patterns(S.GOAL) if p.name == "waiver_history")
        assert stored.status == "retired" and stored.author == "ops-lead"
        res = e2.retrieve(c.utterance, session={"tenant_id": "deltabank", "customer_id": c.customer_id},
                          as_of="2026-08-02T10:00:00")
        assert "waiver_history" not in {f.pattern for f in res.facts}  # its goal no longer runs it
        again = as_recorded(e2, "deltabank", earlier.trace_id)
        assert again.identical  # a trace that ran it still replays byte-identically as recorded
        assert "waiver_history" in [p["name"] for p in record.load(e2.graph, "deltabank", earlier.trace_id).patterns]
    second = runner.invoke(app, ["review-pattern", "--tenant", "deltabank", "--approve", retire["id"], "--by",
                                 "ops-lead", "--graph", str(sim_store)])
    assert second.exit_code == 0 and "[approved]" in second.output  # approving again changes nothing


def _rows_of(eng: Engine, trace_id: str) -> dict[str, list[str]]:
    node = eng.graph.get_node("deltabank", trace_id)
    assert node is not None
    raw = node.props["pattern_rows_json"]
    return json.loads(raw) if isinstance(raw, str) else dict(raw)
