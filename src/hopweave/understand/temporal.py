"""Dates and relative dates in an utterance, evaluated against the request's ``as_of``.

Never the wall clock: "last month" on a request with as_of 2026-05-12 is 2026-04-01/2026-04-30,
whenever it is replayed. Each match becomes an interval of ISO dates ``(start, end)``, inclusive.

Recognised: ISO dates (2026-05-10), US numeric dates (05/10/2026), month-name dates
("May 10", "10 May 2026", "May 10th, 2026", "March 2026", "in March"), and relative phrases
("today", "yesterday", "this/last week|month|year", "past/last N days|weeks|months|years",
"N days ago", "year to date"), and a day of the month alone ("on the 10th": the latest 10th not
after as_of).

:func:`time_windows` turns them into :class:`TimeWindow` s, the windows the patterns' events are
read in (``entity.DateFrom`` / ``entity.DateUntil``), each cut at as_of: a date after as_of
never lets a later event in.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict

from hopweave.graph.values import relative_instant
from hopweave.models.metagraph import RelativeTime

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
_MONTHS["sept"] = 9
_MONTH_RE = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "eighteen": 18, "twenty-four": 24,
}
_NUM_RE = r"(?:\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r")"
_UNIT_RE = r"(?:days?|weeks?|months?|years?)"


@dataclass(frozen=True)
class DateMatch:
    start_char: int
    end_char: int
    text: str
    start: date
    end: date
    kind: str  # "absolute" | "relative"

    @property
    def value(self) -> str:
        """ISO interval ``start/end`` (or a single date when start == end)."""
        if self.start == self.end:
            return self.start.isoformat()
        return f"{self.start.isoformat()}/{self.end.isoformat()}"


def _month_end(y: int, m: int) -> date:
    return date(y, m, calendar.monthrange(y, m)[1])


def _num(tok: str) -> int:
    return int(tok) if tok.isdigit() else _NUMBERS[tok.lower()]


def _safe_date(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


def _latest(m: int, d: int | None, today: date) -> tuple[date, date] | None:
    """The most recent month (whole month) or month-day not after ``today``."""
    if d is None:
        y = today.year if m <= today.month else today.year - 1
        return date(y, m, 1), _month_end(y, m)
    dt = _safe_date(today.year, m, d)
    if dt is None or dt > today:
        dt = _safe_date(today.year - 1, m, d)
    return (dt, dt) if dt else None


def _relative(m: re.Match[str], as_of: datetime) -> tuple[date, date] | None:
    g = m.groupdict()
    today = as_of.date()
    if g.get("today"):
        return today, today
    if g.get("yesterday"):
        d = today - timedelta(days=1)
        return d, d
    if g.get("ytd"):
        return date(today.year, 1, 1), today
    if g.get("which") and g["which"].lower() == "past":  # rolling: past month = the last month
        unit = g["unit1"].lower()
        if unit == "week":
            return today - timedelta(days=7), today
        start = relative_instant(RelativeTime(amount=-1, unit=f"{unit}s"), as_of).date()  # type: ignore[arg-type]
        return start, today
    if g.get("which"):
        which, unit = g["which"].lower(), g["unit1"].lower()
        if unit == "week":
            monday = today - timedelta(days=today.weekday())
            if which == "this":
                return monday, today
            return monday - timedelta(days=7), monday - timedelta(days=1)
        if unit == "month":
            if which == "this":
                return today.replace(day=1), today
            first = relative_instant(RelativeTime(amount=-1, unit="months", start_of="month"), as_of).date()
            return first, _month_end(first.year, first.month)
        if which == "this":
            return date(today.year, 1, 1), today
        return date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)
    n = _num(g.get("n1") or g.get("n2") or "1")
    unit = (g.get("unit2") or g.get("unit3") or "days").lower().rstrip("s")
    if unit == "week":
        n, unit = 7 * n, "day"
    start = relative_instant(RelativeTime(amount=-n, unit=f"{unit}s"), as_of).date()  # type: ignore[arg-type]
    if g.get("ago"):
        return start, start
    return start, today


_RELATIVE = re.compile(
    r"\b(?:(?P<today>today)|(?P<yesterday>yesterday)|(?P<ytd>year[- ]to[- ]date|ytd)"
    r"|(?P<which>this|last|past|previous)\s+(?P<unit1>week|month|year)\b"
    r"|(?:past|last|previous)\s+(?P<n1>" + _NUM_RE + r")\s+(?P<unit2>" + _UNIT_RE + r")"
    r"|(?P<n2>" + _NUM_RE + r")\s+(?P<unit3>" + _UNIT_RE + r")\s+(?P<ago>ago))\b",
    re.IGNORECASE,
)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_US = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b")
_MONTH_DAY = re.compile(
    r"\b(?P<m>" + _MONTH_RE + r")\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y>\d{4})\b)?"
    r"|\b(?P<d2>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m2>" + _MONTH_RE + r")(?:,?\s+(?P<y2>\d{4})\b)?",
    re.IGNORECASE,
)
_MONTH_YEAR = re.compile(r"\b(?P<m>" + _MONTH_RE + r")\s+(?P<y>\d{4})\b", re.IGNORECASE)
_DAY_ALONE = re.compile(r"\b(?:on|from|since)\s+the\s+(?P<d>\d{1,2})(?:st|nd|rd|th)\b(?!\s+(?:of\s+)?" + _MONTH_RE + ")",
                        re.IGNORECASE)
_MONTH_ALONE = re.compile(
    r"\b(?:in|during|since|from|until|before|after|of)\s+(?P<m>" + _MONTH_RE + r")(?![\w])", re.IGNORECASE
)


def find_dates(text: str, as_of: datetime) -> list[DateMatch]:
    """Every date expression in ``text`` as an interval, leftmost-longest, non-overlapping."""
    today = as_of.date()
    found: list[DateMatch] = []

    def add(s: int, e: int, iv: tuple[date, date] | None, kind: str) -> None:
        if iv is None:
            return
        if any(not (e <= f.start_char or s >= f.end_char) for f in found):
            return
        found.append(DateMatch(s, e, text[s:e], iv[0], iv[1], kind))

    for m in _ISO.finditer(text):
        d = _safe_date(int(m[1]), int(m[2]), int(m[3]))
        add(m.start(), m.end(), (d, d) if d else None, "absolute")
    for m in _US.finditer(text):
        d = _safe_date(int(m[3]), int(m[1]), int(m[2]))
        add(m.start(), m.end(), (d, d) if d else None, "absolute")
    for m in _MONTH_DAY.finditer(text):
        mon_s = (m["m"] or m["m2"]).lower().rstrip(".")
        if mon_s == "may" and not (m["m"] or m["m2"])[0].isupper():
            continue  # the modal verb
        mon, day = _MONTHS[mon_s], int(m["d"] or m["d2"])
        year = m["y"] or m["y2"]
        if year:
            d = _safe_date(int(year), mon, day)
            add(m.start(), m.end(), (d, d) if d else None, "absolute")
        else:
            add(m.start(), m.end(), _in_range(_latest, mon, day, today), "absolute")
    for m in _MONTH_YEAR.finditer(text):
        mon_s = m["m"].lower().rstrip(".")
        if mon_s == "may" and not m["m"][0].isupper():
            continue
        y, mon = int(m["y"]), _MONTHS[mon_s]
        add(m.start(), m.end(), _in_range(_whole_month, y, mon), "absolute")
    for m in _MONTH_ALONE.finditer(text):
        mon_s = m["m"].lower().rstrip(".")
        if mon_s == "may" and not m["m"][0].isupper():
            continue
        add(m.start("m"), m.end("m"), _in_range(_latest, _MONTHS[mon_s], None, today), "absolute")
    for m in _RELATIVE.finditer(text):
        add(m.start(), m.end(), _in_range(_relative, m, as_of), "relative")
    for m in _DAY_ALONE.finditer(text):
        add(m.start("d") - len("the "), m.end(), _in_range(_latest_day, int(m["d"]), today), "relative")
    return sorted(found, key=lambda f: f.start_char)


def _whole_month(y: int, m: int) -> tuple[date, date]:
    return date(y, m, 1), _month_end(y, m)


def _in_range(window: Callable[..., tuple[date, date] | None], *args: Any) -> tuple[date, date] | None:
    """``window(*args)``, or None when the window would fall outside the years 1-9999 ("last
    year" at an as_of in the year 1): no window, as for a date that does not exist."""
    try:
        return window(*args)
    except (ValueError, OverflowError):
        return None


def _latest_day(d: int, today: date) -> tuple[date, date] | None:
    """The latest ``d``-th of a month not after ``today`` (skipping months without that day)."""
    y, m = today.year, today.month
    for _ in range(13):
        dt = _safe_date(y, m, d)
        if dt is not None and dt <= today:
            return dt, dt
        y, m = (y, m - 1) if m > 1 else (y - 1, 12)
    return None


class TimeWindow(BaseModel):
    """A window on the events the patterns return, from one date expression of the utterance:
    ``start`` .. ``end`` (inclusive dates) cut at as_of; ``future``: the expression lies after
    as_of (the window is empty: nothing later than as_of is shown)."""

    model_config = ConfigDict(frozen=True)

    text: str
    span: tuple[int, int]
    start: date
    end: date
    future: bool = False
    cut: bool = False

    def bounds(self, as_of: datetime) -> tuple[str, str]:
        """(from, until) as ISO datetimes for ``timestamp`` predicates: the start of ``start``,
        the end of ``end`` or as_of, whichever is earlier."""
        until = datetime.combine(self.end, datetime.max.time()).replace(microsecond=0)
        return datetime.combine(self.start, datetime.min.time()).isoformat(), min(until, as_of).isoformat()

    def note(self, as_of: datetime) -> str:
        """The line shown to the agent, naming the span it came from."""
        where = f"{self.text!r} (characters {self.span[0]}-{self.span[1]})"
        if self.future:
            return (f"{where} is after as_of {as_of.date().isoformat()}: no events after as_of are shown")
        tail = f", cut at as_of {as_of.date().isoformat()}" if self.cut else ""
        return f"{where} -> events from {self.start.isoformat()} to {self.end.isoformat()}{tail}"


def time_windows(text: str, as_of: datetime) -> list[TimeWindow]:
    """The date expressions of ``text`` as windows resolved against ``as_of`` (left to right)."""
    today = as_of.date()
    out = []
    for d in find_dates(text, as_of):
        future = d.start > today
        open_ended = text[: d.start_char].rstrip().lower().endswith(("since", "after"))
        end = today if open_ended else min(d.end, today)
        out.append(TimeWindow(text=d.text, span=(d.start_char, d.end_char), start=d.start,
                              end=d.end if future else end, future=future,
                              cut=not future and not open_ended and end < d.end))
    return out


def window_bounds(windows: "list[TimeWindow] | tuple[TimeWindow, ...]", as_of: datetime) -> tuple[str, str] | None:
    """One (from, until) over the utterance's windows for the patterns (``entity.DateFrom`` /
    ``entity.DateUntil``): the union of the windows not after as_of, else the first (empty) one;
    None without windows."""
    if not windows:
        return None
    past = [w for w in windows if not w.future]
    if not past:
        return windows[0].bounds(as_of)
    bounds = [w.bounds(as_of) for w in past]
    return min(b[0] for b in bounds), max(b[1] for b in bounds)
