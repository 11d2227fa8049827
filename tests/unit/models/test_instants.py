"""The one instant module: four-digit years everywhere, the 0001..9999 range refused outside at
the boundary (naming the field), arithmetic that clamps instead of overflowing, and stored
strings that sort in time order across year 999 / 1000."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from hopweave.errors import InputError
from hopweave.graph.values import format_time, relative_instant
from hopweave.models.common import to_datetime
from hopweave.models.instants import (
    MAX_INSTANT,
    MIN_INSTANT,
    InstantError,
    format_date,
    format_datetime,
    format_utc,
    is_date_text,
    is_datetime_text,
    parse_instant,
    shift_days,
    shift_months,
)
from hopweave.models.metagraph import RelativeTime


@pytest.mark.parametrize("year", [1, 9, 99, 999, 1000, 2026, 9999])
def test_years_are_zero_padded_and_read_back(year: int) -> None:
    dt = datetime(year, 12, 31, 23, 59, 59)
    text = format_datetime(dt)
    assert text.startswith(f"{year:04d}-12-31T") and is_datetime_text(text) and parse_instant(text) == dt
    assert format_date(dt) == f"{year:04d}-12-31" and is_date_text(format_date(dt))
    assert format_utc(dt) == text + "Z"


def test_stored_strings_sort_in_time_order_across_the_year_1000() -> None:
    instants = [datetime(y, 1, 1) for y in (1, 99, 999, 1000, 2026, 9999)]
    assert sorted(map(format_datetime, instants)) == list(map(format_datetime, instants))


@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00",
                                   datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))])
def test_an_offset_that_leaves_the_range_is_an_input_error_naming_the_field(value: object) -> None:
    with pytest.raises(InstantError, match="valid_from .* outside") as ei:
        parse_instant(value, "valid_from")  # type: ignore[arg-type]
    assert isinstance(ei.value, InputError) and ei.value.field == "valid_from"


@pytest.mark.parametrize("value", ["999-12-31", "2026-13-45", "12/05/2026", "", 20260512, True, None, 1.5])
def test_malformed_instants_are_refused(value: object) -> None:
    with pytest.raises(InstantError, match="as_of"):
        parse_instant(value)  # type: ignore[arg-type]


def test_ends_of_the_range_are_accepted() -> None:
    assert parse_instant("0001-01-01T00:00:00Z") == MIN_INSTANT
    assert parse_instant("9999-12-31") == MAX_INSTANT
    assert to_datetime(date(1, 1, 1)) == datetime(1, 1, 1, 23, 59, 59)


@pytest.mark.parametrize("text,ok", [("2026-02-29", False), ("2024-02-29", True), ("999-01-01", False),
                                     ("0999-01-01", True), ("2026-05-12T24:00:00", False)])
def test_stored_text_is_checked_as_a_real_day(text: str, ok: bool) -> None:
    assert (is_datetime_text(text) if "T" in text else is_date_text(text)) is ok


def test_arithmetic_clamps_at_the_ends() -> None:
    assert shift_days(MIN_INSTANT, -1) == MIN_INSTANT and shift_days(MAX_INSTANT, 10) == MAX_INSTANT
    assert shift_months(datetime(1, 6, 1), -24) == MIN_INSTANT
    assert shift_months(datetime(9999, 6, 1), 12) == MAX_INSTANT
    assert shift_months(datetime(2026, 3, 31), -1) == datetime(2026, 2, 28)
    back = RelativeTime(amount=-24, unit="months")
    assert format_time(relative_instant(back, datetime(1, 6, 1)), "datetime") == "0001-01-01T00:00:00"
    assert format_time(relative_instant(back, datetime(1000, 6, 1)), "date") == "0998-06-01"
