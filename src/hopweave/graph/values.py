"""Resolve a pattern's ValueRefs against one request's Bindings.

Shared by every backend (the networkx walker and the Cypher compiler), so relative times and
bindings mean exactly the same thing everywhere. Times are computed from ``bindings.as_of``,
never the wall clock.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hopweave.models.common import Bindings
from hopweave.models.instants import format_date, format_datetime, shift_days, shift_months
from hopweave.models.metagraph import AsOfYear, Bind, Literal_, RelativeTime, ValueRef

#: Sentinel: a binding that is absent and has no default. Predicates using it match nothing.
UNBOUND = object()


def relative_instant(ref: RelativeTime, as_of: datetime) -> datetime:
    """``as_of`` shifted by ``ref`` (then cut to the start of its year / month / day), clamped to
    the instants hopweave holds (0001-01-01 .. 9999-12-31: see ``models.instants``)."""
    if ref.unit == "days":
        dt = shift_days(as_of, ref.amount)
    elif ref.unit == "months":
        dt = shift_months(as_of, ref.amount)
    else:
        dt = shift_months(as_of, 12 * ref.amount)
    if ref.start_of == "year":
        dt = dt.replace(month=1, day=1, hour=0, minute=0, second=0)
    elif ref.start_of == "month":
        dt = dt.replace(day=1, hour=0, minute=0, second=0)
    elif ref.start_of == "day":
        dt = dt.replace(hour=0, minute=0, second=0)
    return dt


def format_time(dt: datetime, prop_type: str) -> str:
    """ISO string in the property's type, year zero-padded: 'date' -> YYYY-MM-DD, else
    YYYY-MM-DDTHH:MM:SS."""
    if prop_type == "date":
        return format_date(dt)
    return format_datetime(dt)


def resolve_value(ref: ValueRef, bindings: Bindings, prop_type: str = "str") -> Any:
    """The concrete value of ``ref`` for this request (a scalar, a tuple, or UNBOUND)."""
    if isinstance(ref, Literal_):
        return ref.value
    if isinstance(ref, AsOfYear):
        return bindings.as_of.year + ref.offset
    if isinstance(ref, RelativeTime):
        return format_time(relative_instant(ref, bindings.as_of), prop_type)
    if isinstance(ref, Bind):
        source, key = ref.ref.split(".", 1)
        value: Any = None
        if source == "session":
            value = getattr(bindings.session, key, None)
        elif source == "entity":
            value = bindings.entities.get(key)
        elif source == "goal" and key == "name":
            value = bindings.goal
        if value is None:
            return ref.default if ref.default is not None else UNBOUND
        return value
    raise TypeError(f"unknown value reference {ref!r}")  # pragma: no cover
