"""Small shared models: the authenticated session, request bindings, graph rows and pattern
results. Every stage's typed result builds on these."""

from __future__ import annotations

import re
from datetime import date, datetime, time, timezone
from typing import Any, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hopweave.errors import TenantError

Scalar = Union[str, int, float, bool]

_TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_tenant(tenant_id: Any) -> str:
    """Validate a tenant id; raise TenantError if missing or malformed."""
    if not isinstance(tenant_id, str) or not _TENANT_RE.match(tenant_id):
        raise TenantError(
            f"tenant id {tenant_id!r} is missing or malformed: every request needs the "
            "authenticated session's tenant (letters, digits, '_', '.', '-', at most 64)"
        )
    return tenant_id


def to_datetime(value: Union[str, date, datetime, None]) -> datetime | None:
    """Parse an ``as_of`` (date or datetime, ISO string accepted) to a naive UTC datetime.

    A bare date means the end of that day (23:59:59) so 'as of 2026-05-12' includes that day.
    """
    if value is None:
        return None
    if isinstance(value, str):
        s = value.strip()
        try:
            if len(s) == 10:
                value = date.fromisoformat(s)
            else:
                value = datetime.fromisoformat(s.replace("Z", "+00:00"))
        except ValueError as exc:
            from hopweave.errors import InputError

            raise InputError(f"as_of {s!r} is not an ISO date or datetime (YYYY-MM-DD[THH:MM:SS])") from exc
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(timezone.utc).replace(tzinfo=None)
        return value.replace(microsecond=0)
    return datetime.combine(value, time(23, 59, 59))


class Session(BaseModel):
    """The authenticated session. It, never the utterance, decides identity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str
    customer_id: str | None = None
    region: str | None = None
    channel: str | None = None
    agent_id: str | None = None
    locale: str = "en"

    @field_validator("tenant_id")
    @classmethod
    def _tenant(cls, v: str) -> str:
        return check_tenant(v)


class Bindings(BaseModel):
    """Everything a pattern's ValueRefs may bind to, for one request."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session: Session
    as_of: datetime
    goal: str | None = None
    #: Canonical entity values by entity type, e.g. {"Tier": "Platinum", "Product": "Platinum_Card"}
    entities: dict[str, Scalar] = Field(default_factory=dict)


class Row(BaseModel):
    """One result row of a pattern: the target node, with provenance."""

    model_config = ConfigDict(frozen=True)

    node_id: str
    label: str
    properties: dict[str, Any] = Field(default_factory=dict)
    #: Node ids from the seed to the target, inclusive.
    path: tuple[str, ...] = ()


class PatternResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    pattern: str
    version: int
    sub_question: str
    section: str | None = None
    rows: tuple[Row, ...] = ()
    truncated: bool = False
    #: Why the rows may be incomplete: "budget_ms", "max_visited", "limit", or an error text.
    truncated_reason: str | None = None
    elapsed_ms: float = 0.0
    visited: int = 0
    seed_id: str | None = None
    error: str | None = None
