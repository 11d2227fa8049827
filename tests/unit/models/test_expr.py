"""The safe rule expression language: every operator, three-valued verdicts, unsafe input rejected."""

from __future__ import annotations

from datetime import date

import pytest

from hopweave.errors import HopweaveError, RuleExpressionError
from hopweave.models.expr import MAX_DEPTH, evaluate, names, parse, show

FACTS = {"tier": "Gold", "amount": 39, "ratio": 0.92, "waivers_this_year": 0, "fee_date": "2026-05-10",
         "posted": "2026-05-10T09:30:00", "autopay": True, "region": "US"}


@pytest.mark.parametrize("text, value", [
    ('tier == "Gold"', True), ("tier == 'Platinum'", False), ('tier != "Platinum"', True),
    ("amount < 50", True), ("amount <= 39", True), ("amount > 39", False), ("amount >= 39.0", True),
    ("ratio >= 0.9", True), ("amount > -1", True),
    ('tier in ["Gold", "Platinum"]', True), ('tier in ["Silver"]', False), ('tier not in ["Silver"]', True),
    ("amount in [39, 40]", True), ("tier in []", False),
    ('tier == "Gold" and amount <= 50', True), ('tier == "Gold" and amount > 50', False),
    ('tier == "Platinum" or amount <= 50', True), ('tier == "Platinum" or amount > 50', False),
    ("not amount > 50", True), ("not (amount < 50 and ratio > 0.9)", False),
    ("fee_date >= 2026-05-01", True), ("fee_date < 2026-05-10", False), ("posted == 2026-05-10", True),
    ("2026-01-01 < fee_date", True), ("autopay == true", True), ("autopay", True), ("autopay != false", True),
    ("true", True), ("false", False), ("region == 'US' and (tier == 'Gold' or tier == 'Silver')", True),
])
def test_every_operator(text: str, value: bool) -> None:
    assert evaluate(text, FACTS).value is value, evaluate(text, FACTS).reason


def test_reasons_name_the_failing_comparison() -> None:
    v = evaluate('tier == "Platinum" and waivers_this_year == 0 and amount <= 50', FACTS)
    assert v.value is False
    assert v.reason == 'tier == "Platinum" is false (tier = Gold)'
    assert evaluate("amount <= 50", FACTS).reason == "amount <= 50 is true (amount = 39)"
    both = evaluate("amount > 50 or tier == 'Silver'", FACTS)
    assert both.reason == 'amount > 50 is false (amount = 39) or tier == "Silver" is false (tier = Gold)'


def test_unknown_facts_are_unknown_not_false() -> None:
    v = evaluate("requested_increase > 50", FACTS)
    assert v.value is None and "requested_increase unknown" in v.reason
    assert evaluate("requested_increase > 50 and tier == 'Silver'", FACTS).value is False  # decided anyway
    assert evaluate("requested_increase > 50 or tier == 'Gold'", FACTS).value is True
    assert evaluate("not missing_fact", FACTS).value is None
    assert evaluate("tier > 5", FACTS).value is None  # not comparable
    assert evaluate('amount == "39"', FACTS).value is False  # different types are never equal


def test_names_and_show_round_trip() -> None:
    e = parse("tier == 'Platinum' and amount in [1, 2.5] or not posted < 2026-01-02")
    assert names(e) == {"tier", "amount", "posted"}
    assert parse(show(e)) == e
    assert isinstance(parse("2026-05-12 == d").left.value, date)  # type: ignore[union-attr]


@pytest.mark.parametrize("text", [
    "__import__('os').system('id')", "amount.__class__", "tier[0]", "len(tier)", "amount + 1", "amount = 1",
    "tier == ", "and tier", "(amount > 1", "amount > 1)", "tier in 'Gold'", "tier in [tier == 'x']",
    "amount >> 1", "`id`", "tier == \"unterminated", "x; y", "a if b else c", "lambda: 1", "", "   ",
    "2026-13-45 > d", "{}", "tier in [1, 2", "a == 1 2",
])
def test_unsafe_or_malformed_input_is_rejected(text: str) -> None:
    with pytest.raises(RuleExpressionError) as exc:
        parse(text)
    assert isinstance(exc.value, HopweaveError)


def test_bounds() -> None:
    with pytest.raises(RuleExpressionError, match="longer than"):
        parse("a == 1 or " * 200 + "a == 1")
    with pytest.raises(RuleExpressionError, match="nested deeper"):
        parse("(" * (MAX_DEPTH + 2) + "a" + ")" * (MAX_DEPTH + 2))
    with pytest.raises(RuleExpressionError, match="nested deeper"):
        parse("not " * (MAX_DEPTH + 2) + "a")
    with pytest.raises(RuleExpressionError):
        parse(123)  # type: ignore[arg-type]
