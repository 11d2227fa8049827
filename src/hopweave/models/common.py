"""Small shared models: the authenticated session, request bindings, graph rows and pattern
results. Every stage's typed result builds on these."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any, Mapping, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hopweave.errors import TenantError
from hopweave.models.instants import parse_instant
from hopweave.models.limits import (
    MAX_SESSION_ATTRIBUTE_CHARS,
    MAX_SESSION_ATTRIBUTES,
    MAX_SESSION_FIELD_CHARS,
    LimitError,
    check_finite,
    check_text,
)

Scalar = Union[str, int, float, bool]
#: A session attribute's value: one scalar, or several (a customer in two programs), a set.
AttributeValue = Union[Scalar, tuple[Scalar, ...]]
#: The most values one list-valued session attribute may hold.
MAX_SESSION_ATTRIBUTE_VALUES = 64

_TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_tenant(tenant_id: Any) -> str:
    """Validate a tenant id; raise TenantError if missing or malformed."""
    if not isinstance(tenant_id, str) or not _TENANT_RE.match(tenant_id):
        raise TenantError(
            f"tenant id {tenant_id!r} is missing or malformed: every request needs the "
            "authenticated session's tenant (letters, digits, '_', '.', '-', at most 64)"
        )
    return tenant_id


def to_datetime(value: Union[str, date, datetime, None], field: str = "as_of") -> datetime | None:
    """Parse an ``as_of`` (date or datetime, ISO string accepted) to a naive UTC datetime, by
    :func:`hopweave.models.instants.parse_instant` (None stays None).

    A bare date means the end of that day (23:59:59) so 'as of 2026-05-12' includes that day.
    Raises InstantError (an InputError naming ``field``) for anything else (an int, a malformed
    string, an instant outside 0001-01-01 .. 9999-12-31 UTC).
    """
    if value is None:
        return None
    return parse_instant(value, field)


class Session(BaseModel):
    """The authenticated session. It, never the utterance, decides identity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: str
    customer_id: str | None = None
    region: str | None = None
    channel: str | None = None
    agent_id: str | None = None
    locale: str = "en"
    #: Attributes a domain pack declares beyond the built-in ones (a US state, a contract
    #: number): checked against the pack's ``session_attributes`` at the engine's boundary and
    #: usable in always-on filter clauses (``{field: state, session: state}``). A list value
    #: (an attribute declared ``many: true``) is a set: matched as ``field in [...]``.
    attributes: dict[str, AttributeValue] = Field(default_factory=dict)

    @field_validator("tenant_id")
    @classmethod
    def _tenant(cls, v: str) -> str:
        return check_tenant(v)

    @field_validator("customer_id", "region", "channel", "agent_id", "locale")
    @classmethod
    def _sized(cls, v: str | None, info: Any) -> str | None:
        return v if v is None else check_text(f"session.{info.field_name}", v, MAX_SESSION_FIELD_CHARS)

    @field_validator("attributes")
    @classmethod
    def _attributes(cls, v: dict[str, AttributeValue]) -> dict[str, AttributeValue]:
        if len(v) > MAX_SESSION_ATTRIBUTES:
            raise LimitError("session.attributes", f"session.attributes holds {len(v):,} attributes; at most "
                                                   f"{MAX_SESSION_ATTRIBUTES} are accepted")
        for name, value in v.items():
            check_text("session attribute name", name, MAX_SESSION_ATTRIBUTE_CHARS)
            where = f"session.attributes[{name[:40]!r}]"
            items = value if isinstance(value, tuple) else (value,)
            if len(items) > MAX_SESSION_ATTRIBUTE_VALUES:
                raise LimitError(where, f"{where} holds {len(items):,} values; at most "
                                        f"{MAX_SESSION_ATTRIBUTE_VALUES} are accepted")
            for item in items:
                if isinstance(item, str):
                    check_text(where, item, MAX_SESSION_ATTRIBUTE_CHARS)
                check_finite(where, item)
        return v

    def attribute(self, name: str) -> AttributeValue | None:
        """A built-in attribute (``region``, ``channel``, ...) or a pack-declared one (a tuple
        for a list-valued one); None if unset."""
        if name in _BUILT_IN:
            value = getattr(self, name)
            return value if isinstance(value, (str, int, float, bool)) else None
        return self.attributes.get(name)

    def attribute_values(self, name: str) -> tuple[Scalar, ...]:
        """The attribute's values as a set: de-duplicated, sorted (by type, then text), empty
        strings dropped; ``()`` when unset or empty."""
        return set_values(self.attribute(name))


def set_values(value: Any) -> tuple[Scalar, ...]:
    """A scalar or a list of scalars (a session attribute, a record property) as a set:
    the scalars, de-duplicated and sorted by (type name, text) so [A, B] and [B, A] are one set;
    empty strings and non-scalars dropped."""
    items = value if isinstance(value, (list, tuple)) else (value,)
    kept = {(type(v).__name__, str(v)): v for v in items if isinstance(v, (str, int, float, bool)) and v != ""}
    return tuple(kept[k] for k in sorted(kept))


_BUILT_IN = ("tenant_id", "customer_id", "region", "channel", "agent_id", "locale")


def parse_session(data: Any, source: str = "session") -> Session:
    """The one session parser: a Session from a Session or a mapping of its fields (an ``as_of``
    key is ignored: as_of is per request). ``source`` names where it came from in errors.

    Raises:
        TenantError: a missing or malformed tenant_id.
        InputError: not a mapping, or fields the Session model rejects (names the field).
    """
    from pydantic import ValidationError

    from hopweave.errors import InputError

    if isinstance(data, Session):
        return data
    if not isinstance(data, Mapping):
        raise InputError(f"{source} must be a Session or a mapping of its fields "
                         f"(tenant_id, customer_id, ...), not {type(data).__name__}")
    fields = {k: v for k, v in data.items() if k != "as_of"}
    check_tenant(fields.get("tenant_id"))  # a missing tenant is a tenant error, not a field error
    try:
        return Session.model_validate(fields)
    except ValidationError as exc:
        for err in exc.errors():
            cause = (err.get("ctx") or {}).get("error")
            if isinstance(cause, TenantError):
                raise cause from None
        problems = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'session'}: {e['msg']}" for e in exc.errors())
        raise InputError(f"{source} is not a valid session: {problems}") from None


def read_session_file(path: Any) -> Session:
    """A Session from a JSON file holding the Session fields. Raises InputError (unreadable
    file, not a JSON object, rejected fields) or TenantError."""
    import json
    from pathlib import Path

    from hopweave.errors import InputError

    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read session file {p}: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(f"session file {p} must hold a JSON object with the Session fields")
    return parse_session(data, f"session file {p}")


class Bindings(BaseModel):
    """Everything a pattern's ValueRefs may bind to, for one request."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session: Session
    as_of: datetime
    goal: str | None = None
    #: Canonical entity values by entity type, e.g. {"Plan": "Unlimited_Plus", "ChargeType": "RoamingCharge"}
    entities: dict[str, Scalar] = Field(default_factory=dict)
    #: True only for the store's own inspection views (a trace's subgraph, the traces that used a
    #: pattern): the walk sees every node and edge whatever its dates. A request never sets it:
    #: its patterns see what was known and in force at ``as_of`` (docs/engine.md, "Time").
    timeless: bool = False


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
