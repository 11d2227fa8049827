"""Dates in the utterance become windows on the events the patterns return, resolved against
as_of (issue 14): month boundaries, "last year" in January, a date after as_of leaks nothing."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from hopweave.understand.temporal import time_windows

MAY12 = datetime(2026, 5, 12, 23, 59, 59)
MAR31 = datetime(2026, 3, 31, 23, 59, 59)
JAN05 = datetime(2026, 1, 5, 10, 0, 0)
MAR01 = datetime(2024, 3, 1, 9, 0, 0)  # leap year
MAR01_2026 = datetime(2026, 3, 1, 9, 0, 0)
DEC31 = datetime(2025, 12, 31, 23, 59, 59)
NEW_YEAR = datetime(2026, 1, 1, 0, 0, 1)  # one second into the year

CASES = [
    # (utterance, as_of, expression, start, end, future)
    ("what was the fee from March?", MAY12, "March", date(2026, 3, 1), date(2026, 3, 31), False),
    ("the fee from March", JAN05, "March", date(2025, 3, 1), date(2025, 3, 31), False),  # the latest March
    ("last month's statement has a late fee", MAY12, "last month", date(2026, 4, 1), date(2026, 4, 30), False),
    ("last month's statement", MAR31, "last month", date(2026, 2, 1), date(2026, 2, 28), False),
    ("last month's statement", MAR01, "last month", date(2024, 2, 1), date(2024, 2, 29), False),
    ("last month", JAN05, "last month", date(2025, 12, 1), date(2025, 12, 31), False),
    ("the fee charged on the 10th", MAY12, "the 10th", date(2026, 5, 10), date(2026, 5, 10), False),
    ("the fee charged on the 20th", MAY12, "the 20th", date(2026, 4, 20), date(2026, 4, 20), False),
    ("the payment on the 31st", MAY12, "the 31st", date(2026, 3, 31), date(2026, 3, 31), False),  # April has 30
    ("how many waivers did I get last year", JAN05, "last year", date(2025, 1, 1), date(2025, 12, 31), False),
    ("how many waivers did I get this year", JAN05, "this year", date(2026, 1, 1), date(2026, 1, 5), False),
    ("the fee on June 3, 2026", MAY12, "June 3, 2026", date(2026, 6, 3), date(2026, 6, 3), True),
    ("the fee on 2026-09-01", MAY12, "2026-09-01", date(2026, 9, 1), date(2026, 9, 1), True),
    ("a charge on December 24", JAN05, "December 24", date(2025, 12, 24), date(2025, 12, 24), False),
    ("the fee on May 10th", MAY12, "May 10th", date(2026, 5, 10), date(2026, 5, 10), False),
    ("the fee on May 20", MAY12, "May 20", date(2025, 5, 20), date(2025, 5, 20), False),  # the latest May 20
    ("charges since March 2026", MAY12, "March 2026", date(2026, 3, 1), date(2026, 5, 12), False),  # open-ended
    ("what happened yesterday", MAY12, "yesterday", date(2026, 5, 11), date(2026, 5, 11), False),
    ("fees in the past 30 days", MAY12, "past 30 days", date(2026, 4, 12), date(2026, 5, 12), False),
    ("a fee two weeks ago", MAY12, "two weeks ago", date(2026, 4, 28), date(2026, 4, 28), False),
    ("this week's charges", MAY12, "this week", date(2026, 5, 11), date(2026, 5, 12), False),
    ("last week's charges", MAY12, "last week", date(2026, 5, 4), date(2026, 5, 10), False),
    ("fees year to date", MAY12, "year to date", date(2026, 1, 1), date(2026, 5, 12), False),
    ("the statement of 05/10/2026", MAY12, "05/10/2026", date(2026, 5, 10), date(2026, 5, 10), False),
    ("the fee in September 2024", MAY12, "September 2024", date(2024, 9, 1), date(2024, 9, 30), False),
    # month and year boundaries
    ("the payment on the 31st", MAR01_2026, "the 31st", date(2026, 1, 31), date(2026, 1, 31), False),  # no Feb 31
    ("the fee from February", MAR01, "February", date(2024, 2, 1), date(2024, 2, 29), False),  # leap day
    ("the fee from January", JAN05, "January", date(2026, 1, 1), date(2026, 1, 5), False),  # cut at as_of
    ("what did I pay in December?", NEW_YEAR, "December", date(2025, 12, 1), date(2025, 12, 31), False),
    ("last month", NEW_YEAR, "last month", date(2025, 12, 1), date(2025, 12, 31), False),
    ("waivers last year", DEC31, "last year", date(2024, 1, 1), date(2024, 12, 31), False),
]


@pytest.mark.parametrize("text, as_of, expr, start, end, future", CASES, ids=[c[0] for c in CASES])
def test_window(text: str, as_of: datetime, expr: str, start: date, end: date, future: bool) -> None:
    ws = time_windows(text, as_of)
    assert len(ws) == 1, ws
    w = ws[0]
    assert (w.text, w.start, w.end, w.future) == (expr, start, end, future)
    assert text[w.span[0]:w.span[1]] == expr  # shown with the span it came from
    lo, hi = w.bounds(as_of)
    assert hi <= as_of.isoformat()  # never a window past as_of
    if future:
        assert lo > hi  # empty: no event can match
        assert "after as_of" in w.note(as_of)
    else:
        assert expr in w.note(as_of)


def test_at_least_twenty_utterances() -> None:
    assert len(CASES) >= 20


def test_this_month_is_cut_at_as_of() -> None:
    (w,) = time_windows("charges this month", MAY12)
    assert (w.start, w.end) == (date(2026, 5, 1), date(2026, 5, 12))
    (w,) = time_windows("the fee in May 2026", MAY12)
    assert w.cut and w.end == date(2026, 5, 12) and w.bounds(MAY12)[1] == "2026-05-12T23:59:59"


@pytest.mark.parametrize("text", ["the late fee last year", "fees 3 years ago", "the fee in May 0000",
                                  "charges last month", "the fee last week", "payments on the 31st"])
@pytest.mark.parametrize("as_of", [datetime(1, 1, 1, 0, 0, 0), datetime(9999, 12, 31, 23, 59, 59)])
def test_windows_at_the_ends_of_the_years_held_never_raise(text: str, as_of: datetime) -> None:
    for w in time_windows(text, as_of):  # a window before the year 1 is no window; never a ValueError
        assert date(1, 1, 1) <= w.start <= w.end <= date(9999, 12, 31)


def test_no_date_no_window() -> None:
    assert time_windows("I want to dispute this $39 late fee", MAY12) == []
    assert time_windows("you may waive it on the card", MAY12) == []


def test_the_understanding_carries_the_window_to_the_patterns(understander, maria) -> None:  # type: ignore[no-untyped-def]
    u = understander.understand("Why was I charged the late fee from March?", maria, "2026-05-12")
    (w,) = u.time_windows
    assert (w.text, w.span, w.start, w.end) == ("March", (36, 41), date(2026, 3, 1), date(2026, 3, 31))
    b = u.entity_bindings()
    assert (b["DateFrom"], b["DateUntil"]) == ("2026-03-01T00:00:00", "2026-03-31T23:59:59")
    assert "'March' (characters 36-41) -> events from 2026-03-01 to 2026-03-31" in u.notes
    none = understander.understand("I want to dispute this late fee", maria, "2026-05-12")
    assert none.time_windows == () and "DateFrom" not in none.entity_bindings()  # the pattern binds nothing
