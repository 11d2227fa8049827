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


@pytest.mark.parametrize(("text", "value"), [
    ("usage > 1.5 * avg_usage", True),            # 200 > 150
    ("usage > 2 * avg_usage", False),
    ("usage - avg_usage == 100", True),
    ("usage / avg_usage >= 2", True),
    ("(usage + avg_usage) / 3 == 100", True),
    ("-amount < 0", True),
    ("amount + 1 * 2 == 41", True),               # * before +
    ("usage > -5", True),
    ("amount in [-39, 39]", True),
])
def test_arithmetic_over_case_facts(text: str, value: bool) -> None:
    v = evaluate(text, {"usage": 200, "avg_usage": 100, "amount": 39})
    assert v.value is value, v.reason


def test_arithmetic_on_non_numbers_or_division_by_zero_is_unknown() -> None:
    v = evaluate("amount / zero > 1", {"amount": 39, "zero": 0})
    assert v.value is None and "divides by zero" in v.reason
    v = evaluate("tier * 2 > 1", {"tier": "Gold"})
    assert v.value is None and "needs numbers" in v.reason
    assert evaluate("amount * 2 > 1", {}).value is None  # absent fact: unknown, as everywhere


@pytest.mark.parametrize(("day", "value"), [
    ("2026-11-15", True), ("2026-12-31", True), ("2027-01-01", True), ("2027-03-15", True),
    ("2027-03-16", False), ("2026-11-14", False), ("2026-07-01", False), ("2031-02-01", True),
])
def test_a_winter_window_recurs_every_year(day: str, value: bool) -> None:
    v = evaluate('as_of during "11-15" to "03-15"', {"as_of": day})
    assert v.value is value, v.reason


def test_windows_within_a_year_and_weekdays() -> None:
    assert evaluate('d during "06-01" to "08-31"', {"d": "2026-07-04T10:00:00"}).value is True
    assert evaluate('d during "06-01" to "08-31"', {"d": "2026-09-01"}).value is False
    assert evaluate('d on ["sat", "sun"]', {"d": "2026-12-05"}).value is True   # a Saturday
    assert evaluate('d on ["sat", "sun"]', {"d": "2026-12-07"}).value is False  # a Monday
    assert evaluate('d on ["mon"]', {"d": "not a date"}).value is None
    assert evaluate('d during "01-01" to "12-31"', {}).value is None


@pytest.mark.parametrize("text", [
    'd during "13-01" to "03-15"', 'd during "02-30" to "03-15"', 'd during "11-15" "03-15"',
    'd during 11 to 12', 'd on ["someday"]', "d on []", "amount + 1", "amount * 2 or tier", "not amount - 1",
    "amount +", "* 2 > 1",
])
def test_bad_windows_and_bare_sums_are_rejected(text: str) -> None:
    with pytest.raises(RuleExpressionError):
        parse(text)


def test_new_forms_show_round_trip() -> None:
    for text in ['as_of during "11-15" to "03-15"', 'd on ["sat", "sun"]', "usage > 1.5 * avg_usage",
                 "(a + b) * c >= -2", "-x < 1"]:
        assert show(parse(show(parse(text)))) == show(parse(text))
