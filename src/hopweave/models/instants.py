"""Instants: the one place hopweave parses, formats, checks and shifts dates and datetimes.

Range: every instant hopweave accepts or stores lies in ``0001-01-01T00:00:00`` ..
``9999-12-31T23:59:59`` UTC (:data:`MIN_INSTANT` .. :data:`MAX_INSTANT`), the years Python's
``datetime`` holds. Formats, always with a four-digit, zero-padded year (``0999-12-31``, never
``999-12-31``), so that strings of one format compare lexicographically in time order:

- a date: ``YYYY-MM-DD`` (:func:`format_date`)
- a datetime: ``YYYY-MM-DDTHH:MM:SS``, naive UTC (:func:`format_datetime`)
- an RFC 3339 UTC instant: ``YYYY-MM-DDTHH:MM:SSZ`` (:func:`format_utc`)

Parsing (:func:`parse_instant`) takes an ISO string (a bare date is the end of that day,
23:59:59; an offset is converted to UTC), a ``date`` or a ``datetime``; an instant whose UTC value
falls outside the range (``0001-01-01T00:00:00+05:00``) is refused with :class:`InstantError`
naming the field. Arithmetic relative to an instant (:func:`shift_days`, :func:`shift_months`)
clamps at the ends of the range instead of overflowing: "24 months before 0001-06-01" is
``0001-01-01T00:00:00``.

The write rules (``graph/write_rules.py``) and every reader check a stored date or datetime
string with :func:`is_date_text` / :func:`is_datetime_text`, so a value is written only when it
will read back.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, time, timedelta, timezone

from hopweave.errors import InputError

#: The earliest instant hopweave accepts or stores (naive UTC).
MIN_INSTANT = datetime(1, 1, 1, 0, 0, 0)
#: The latest instant hopweave accepts or stores (naive UTC).
MAX_INSTANT = datetime(9999, 12, 31, 23, 59, 59)
#: The accepted range, as said in error messages.
RANGE_TEXT = "0001-01-01T00:00:00 .. 9999-12-31T23:59:59 UTC"

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")

__all__ = ["MAX_INSTANT", "MIN_INSTANT", "RANGE_TEXT", "InstantError", "clamp", "format_date",
           "format_datetime", "format_utc", "is_date_text", "is_datetime_text", "parse_instant",
           "shift_days", "shift_months"]


class InstantError(InputError):
    """A date or datetime is malformed or outside :data:`RANGE_TEXT`; ``field`` names the
    argument or property."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def format_date(value: date) -> str:
    """``YYYY-MM-DD`` with a four-digit year (the date part of a datetime)."""
    d = value.date() if isinstance(value, datetime) else value
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


def format_datetime(value: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS`` with a four-digit year (microseconds and tzinfo dropped: pass naive
    UTC, e.g. from :func:`parse_instant`)."""
    return (f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
            f"T{value.hour:02d}:{value.minute:02d}:{value.second:02d}")


def format_utc(value: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ``: :func:`format_datetime` of a naive UTC datetime plus ``Z``."""
    return format_datetime(value) + "Z"


def is_date_text(value: str) -> bool:
    """Whether ``value`` is a stored date: ``YYYY-MM-DD``, a real calendar day."""
    if not _DATE_RE.match(value):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def is_datetime_text(value: str) -> bool:
    """Whether ``value`` is a stored datetime: ``YYYY-MM-DDTHH:MM:SS``, a real instant."""
    if not _DATETIME_RE.match(value):
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _range_error(field: str, shown: object) -> InstantError:
    return InstantError(field, f"{field} {shown!s:.60} is outside the instants hopweave holds ({RANGE_TEXT}); "
                               "send an instant in that range")


def parse_instant(value: str | date | datetime, field: str = "as_of") -> datetime:
    """``value`` as a naive UTC datetime to the second: an ISO string (``YYYY-MM-DD`` = the end
    of that day; ``Z`` or an offset converted to UTC), a ``date`` (the end of that day) or a
    ``datetime`` (aware: converted to UTC; naive: taken as UTC).

    Raises:
        InstantError: not one of those, not ISO, or outside :data:`RANGE_TEXT` once in UTC (the
            message names ``field``).
    """
    if isinstance(value, bool) or not isinstance(value, (str, date)):
        raise InstantError(field, f"{field} must be an ISO date/datetime string, a date or a datetime, "
                                  f"not {type(value).__name__} ({value!r:.40})")
    if isinstance(value, str):
        s = value.strip()
        try:
            if len(s) == 10:
                value = date.fromisoformat(s)
            else:
                value = datetime.fromisoformat(s.replace("Z", "+00:00") if s.endswith("Z") else s)
        except ValueError as exc:
            raise InstantError(field, f"{field} {s!r:.60} is not an ISO date or datetime "
                                      "(YYYY-MM-DD[THH:MM:SS[+HH:MM]])") from exc
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            try:
                value = value.astimezone(timezone.utc).replace(tzinfo=None)
            except OverflowError:
                raise _range_error(field, value.isoformat()) from None
        return value.replace(microsecond=0)
    return datetime.combine(value, time(23, 59, 59))


def clamp(value: datetime) -> datetime:
    """``value`` limited to :data:`MIN_INSTANT` .. :data:`MAX_INSTANT`."""
    return MIN_INSTANT if value < MIN_INSTANT else MAX_INSTANT if value > MAX_INSTANT else value


def shift_days(value: datetime, days: int) -> datetime:
    """``value`` plus ``days`` (negative: before), clamped to the range."""
    try:
        return clamp(value + timedelta(days=days))
    except OverflowError:
        return MIN_INSTANT if days < 0 else MAX_INSTANT


def shift_months(value: datetime, months: int) -> datetime:
    """``value`` plus ``months`` calendar months (the day capped at the month's last), clamped
    to the range."""
    m = value.month - 1 + months
    year, month = value.year + m // 12, m % 12 + 1
    if year < MIN_INSTANT.year:
        return MIN_INSTANT
    if year > MAX_INSTANT.year:
        return MAX_INSTANT
    return value.replace(year=year, month=month, day=min(value.day, calendar.monthrange(year, month)[1]))
