"""Procedure applied to the case (issue 15, item 4): case facts, state, rule verdicts with reasons."""

from __future__ import annotations

from datetime import datetime

from domains import AS_OF, MARIA

from hopweave.engine.rules import apply_case, case_facts, resolve_state
from hopweave.models.case import CaseSpec
from hopweave.models.common import PatternResult, Row, Session
from hopweave.models.metagraph import Bind, EdgeStep, Seed, TraversalPattern

SESSION = Session(tenant_id="deltabank", customer_id="CUST_4412", region="US")
SPEC = CaseSpec.model_validate({
    "facts": {"tier": {"entity": "Tier"}, "amount": {"pattern": "fee", "property": "amount"},
              "waivers_this_year": {"pattern": "waivers", "fn": "count"}, "region": {"session": "region"}},
    "states": [{"name": "G_escalated", "when": "amount > 50"}],
    "default_state": "G_open",
    "rules": ["rules"],
})


def _pr(name: str, rows: list[dict]) -> PatternResult:
    return PatternResult(pattern=name, version=1, sub_question="?", rows=tuple(
        Row(node_id=f"{name}_{i}", label="X", properties=p) for i, p in enumerate(rows)))


RULES = [{"name": "Platinum courtesy waiver", "condition": 'tier == "Platinum" and amount <= 50'},
         {"name": "Escalate", "condition": "amount > 50"},
         {"name": "Broken", "condition": "amount >> 1"},
         {"name": "Needs data", "condition": "late_fees_ever == 1"}]


def _facts(amount: float) -> list[PatternResult]:
    return [_pr("fee", [{"amount": amount}]), _pr("waivers", []), _pr("rules", RULES)]


def _pattern(name: str, seed_ref: str) -> TraversalPattern:
    return TraversalPattern(name=name, goal="G", sub_question="which rules?", depth=1, version=1, author="t",
                            created_at=datetime(2026, 1, 1), target_type="Rule",
                            seed=Seed(type="CaseState", key="name", value=Bind(ref=seed_ref)),
                            edge_sequence=(EdgeStep(type="MATCHES"),))


def test_case_facts_and_default_state() -> None:
    values = case_facts(SPEC, _facts(39), {"Tier": "Gold"}, SESSION)
    assert values == {"amount": 39, "region": "US", "tier": "Gold", "waivers_this_year": 0}
    assert resolve_state(SPEC, values) == ("G_open", "default; no state condition holds")


def test_gold_case_platinum_rule_does_not_fire_with_reason() -> None:
    calls: list = []
    facts, extra = apply_case(SPEC, [_pattern("rules", "entity.CaseState")], _facts(39), {"Tier": "Gold"}, SESSION,
                              lambda p, e: calls.append((p, e)) or [])
    assert calls == []  # default state: no re-run
    rows = {r.properties["name"]: r.properties for r in facts[2].rows}
    assert rows["Platinum courtesy waiver"]["verdict"] == "does not fire"
    assert rows["Platinum courtesy waiver"]["why"] == 'tier == "Platinum" is false (tier = Gold)'
    assert rows["Escalate"]["verdict"] == "does not fire"
    assert rows["Broken"]["verdict"] == "cannot be evaluated" and "not in the rule language" in rows["Broken"]["why"]
    assert rows["Needs data"]["verdict"] == "cannot be evaluated" and "late_fees_ever unknown" in rows["Needs data"]["why"]
    assert extra["CaseState"] == "G_open" and extra["case"].startswith("Case state: G_open")


def test_state_from_facts_reruns_the_state_patterns() -> None:
    calls: list = []

    def rerun(pats, entities):  # noqa: ANN001, ANN202
        calls.append(([p.name for p in pats], entities["CaseState"]))
        return [_pr("rules", [RULES[1]])]

    pats = [_pattern("rules", "entity.CaseState"), _pattern("other", "session.customer_id")]
    facts, extra = apply_case(SPEC, pats, _facts(75), {"Tier": "Platinum"}, SESSION, rerun)
    assert calls == [(["rules"], "G_escalated")]
    assert [r.properties["verdict"] for r in facts[2].rows] == ["fires"]
    assert extra["CaseState"] == "G_escalated" and "amount > 50 is true (amount = 75)" in extra["case"]


def test_firing_rules_come_first() -> None:
    facts, _ = apply_case(SPEC, [], _facts(39), {"Tier": "Platinum"}, SESSION, lambda p, e: [])
    assert [r.properties["verdict"] for r in facts[2].rows] == [
        "fires", "cannot be evaluated", "cannot be evaluated", "does not fire"]


def test_no_spec_leaves_facts_alone() -> None:
    facts = _facts(39)
    assert apply_case(None, [], facts, {"Tier": "Gold"}, SESSION, lambda p, e: [])[0] is facts


def test_engine_gold_customer_sees_platinum_rule_not_firing(engine) -> None:  # noqa: ANN001
    gold = {**MARIA, "customer_id": "CUST_4412"}
    r = engine.retrieve("I want to dispute this $39 late fee on my card.", session=gold, as_of=AS_OF, record=False)
    assert "Rule 'Platinum courtesy waiver' does not fire: tier == \"Platinum\" is false (tier = Gold)" in r.context.text
    m = engine.retrieve("I want to dispute this $39 late fee on my Platinum card.", session=MARIA, as_of=AS_OF,
                        record=False)
    assert "Rule 'Platinum courtesy waiver' fires" in m.context.text
    assert "Case state: LateFeeDispute_open" in m.context.text


def test_rules_see_the_request_instant_for_recurring_windows() -> None:
    spec = CaseSpec.model_validate({
        "facts": {"amount": {"pattern": "fee", "property": "amount"}},
        "rules": ["rules"],
    })
    rules = [{"name": "Winter moratorium", "condition": 'as_of during "11-15" to "03-15" and amount > 0'}]
    facts = [_pr("fee", [{"amount": 39}]), _pr("rules", rules)]
    verdicts = {}
    for day in ("2026-01-10", "2026-07-10", "2027-02-01"):
        out, extra = apply_case(spec, [], facts, {}, SESSION, lambda p, e: [], as_of=datetime.fromisoformat(day))
        verdicts[day] = out[1].rows[0].properties["verdict"]
        assert "as_of" not in extra["case"]  # the state line shows the case facts only
    assert verdicts == {"2026-01-10": "fires", "2026-07-10": "does not fire", "2027-02-01": "fires"}
