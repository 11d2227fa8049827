"""Maria's LateFeeDispute traversals on the generated DeltaBank store return seed 004's facts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "deltabank"))  # the pack's generator
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))  # tests/shared helpers

import deltabank_checks as checks  # noqa: E402
from generator.build import load_deltabank  # noqa: E402
from generator.maria import expected_facts  # noqa: E402

from hopweave.graph import open_graph_store
from hopweave.graph.traverse import run_goal_patterns, seed_entities
from hopweave.models.common import Bindings, Session, to_datetime


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("deltabank")
    load_deltabank(d, nodes=4000, seed=7, with_vectors=False)
    return open_graph_store(d)  # reopened: nothing re-ingested


def run(store, as_of="2026-05-12", tenant="deltabank", customer="CUST_4421", entities=None, goal="LateFeeDispute"):
    ents = seed_entities(store, tenant, "Customer", customer) if entities is None else entities
    b = Bindings(session=Session(tenant_id=tenant, customer_id=customer), as_of=to_datetime(as_of), goal=goal,
                 entities=ents)
    # Generous budgets: these tests check WHAT comes back; budget truncation has its own tests,
    # and a loaded 2-core CI machine must not turn a 50 ms budget into a flaky failure.
    patterns = [p.model_copy(update={"budget_ms": 5_000}) for p in store.patterns(goal)]
    return {r.pattern: r for r in run_goal_patterns(store, tenant, patterns, b)}


def ids(result):
    return [row.node_id for row in result.rows]


def test_seed_004_facts_at_2026_05_12(store):
    res = run(store)
    exp = expected_facts()
    for name in ("customer_tier", "customer_account", "waiver_events_this_year", "waiver_history",
                 "last_conversation_outcome", "comparable_precedent", "applicable_workflow", "applicable_rules",
                 "disputed_fee_event", "fee_event_cause", "customer"):
        assert ids(res[name]) == exp[name], name
        assert res[name].error is None
    tx = res["recent_transactions"].rows
    assert len(tx) == exp["recent_transactions_count"] == 24
    assert sum(1 for r in tx if r.properties["on_time"]) == 22
    assert all(r.path[0] == "CUST_4421" and r.path[1] == "ACCT_99812" for r in tx)  # provenance
    cust = res["customer"].rows[0].properties
    assert (cust["name"], cust["tier"], cust["tier_since"]) == ("Maria Lopez", "Platinum", "2023-08-12")
    acct = res["customer_account"].rows[0].properties
    assert (acct["type"], acct["balance"]) == ("credit", 4250.0)
    fee = res["disputed_fee_event"].rows[0].properties
    assert fee["summary"] == "LateFeeCharged $39 on 2026-05-10, caused by PaymentMissed on 2026-05-05"
    prec = [r.properties for r in res["comparable_precedent"].rows]
    assert [(p["tier"], p["waivers_this_year"], p["on_time_ratio"], p["amount"], p["outcome"]) for p in prec] == [
        ("Platinum", 0, 0.95, 39.0, "fee_waived"), ("Platinum", 0, 0.88, 45.0, "fee_waived"),
        ("Platinum", 1, 0.76, 39.0, "escalated_declined")]
    assert prec[0]["approved_by"] == "Janet" and prec[0]["text"]
    assert res["comparable_precedent"].rows[0].path == ("CUST_4421", "PROFILE_CUST_4421", "PROFILE_CUST_5104",
                                                        "TRACE_8514")
    # the disabled rule and the superseded workflow are traps
    assert "RULE_LateFeeDispute_4" not in ids(res["applicable_rules"])


def test_precedent_fails_closed_without_a_tier(store):
    res = run(store, entities={})
    assert ids(res["comparable_precedent"]) == []
    gold = run(store, entities={"Tier": "Gold"})
    assert ids(gold["comparable_precedent"]) == ["TRACE_8333"]  # the look-alike is only Gold precedent


def test_relative_time_follows_as_of_not_the_wall_clock(store):
    r2024 = run(store, as_of="2024-12-31")
    assert ids(r2024["waiver_events_this_year"]) == ["EVT_4421_WAIVER_20240912"]
    assert ids(r2024["waiver_history"]) == []
    assert ids(r2024["disputed_fee_event"]) == []  # the 2026 fee does not exist yet
    assert len(r2024["recent_transactions"].rows) == 16  # 2023-09 .. 2024-12
    later = run(store, as_of="2026-06-01")
    assert ids(later["last_conversation_outcome"]) == ["OUTCOME_4421_20260520"]
    assert ids(later["comparable_precedent"]) == ["TRACE_9001", "TRACE_8514", "TRACE_8702", "TRACE_8108"]
    # the same as_of twice: identical rows
    a, b = run(store), run(store)
    assert {k: v.rows for k, v in a.items()} == {k: v.rows for k, v in b.items()}


def test_tenants_are_isolated_in_the_example(store):
    nb = run(store, tenant="northbank", customer="NB_CUST_4421")
    assert ids(nb["comparable_precedent"]) == ["NB_TRACE_77"]
    assert ids(nb["applicable_workflow"]) == ["NB_WF_LateFeeDispute_v2"]
    assert all(i.startswith("NB_RULE_") for i in ids(nb["applicable_rules"]))
    # deltabank's Maria from northbank's session: invisible
    cross = run(store, tenant="northbank", customer="CUST_4421")
    assert all(not r.rows for name, r in cross.items() if name not in ("applicable_workflow", "applicable_rules",
                                                                       "applicable_heuristics"))
    dl = run(store)
    for r in dl.values():
        for row in r.rows:
            assert not any(n.startswith("NB_") for n in row.path)


def test_other_goals_run_for_maria(store):
    for goal in ("FraudClaim", "CreditLimitIncrease", "NameChange"):
        res = run(store, goal=goal)
        assert res and all(r.error is None for r in res.values())
        wf = [r for n, r in res.items() if n.endswith("_workflow")][0]
        assert ids(wf) == [f"WF_{goal}_v2"]


def test_procedure_in_force_at_three_dates(store) -> None:
    """Issue 14: workflows and rules are selected by validity at as_of, not `version = current`."""
    checks.check_procedure_in_force(store)
