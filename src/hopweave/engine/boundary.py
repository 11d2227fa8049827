"""The one validated boundary of a retrieval request.

``Engine.retrieve`` / ``aretrieve``, the CLI, the agent tool and the LangChain retriever all pass
their inputs through :func:`check_request` (or its parts), so every caller gets the same typed
errors: :class:`~hopweave.errors.InputError` naming the argument and what to send instead, or
:class:`~hopweave.errors.TenantError` for a missing/malformed tenant. Nothing past this point
guesses at types.

Limits: an utterance is at most :data:`MAX_UTTERANCE_CHARS` (4,000) characters of valid Unicode
with some visible text; ``budget_ms`` is 1..:data:`MAX_BUDGET_MS`; ``token_budget`` is
1..:data:`MAX_TOKEN_BUDGET`; pattern overrides must keep each pattern within the gates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any, Mapping

from hopweave.errors import InputError, UnknownProfileError
from hopweave.models.common import Session, parse_session, to_datetime
from hopweave.models.domain import check_session_attributes
from hopweave.understand.text import MAX_CHARS as MAX_UTTERANCE_CHARS, check_utterance

#: Longest accepted wall-clock budget of one retrieval (ms).
MAX_BUDGET_MS = 600_000
#: Largest accepted context token budget.
MAX_TOKEN_BUDGET = 200_000
#: TraversalPattern fields a what-if override may change.
OVERRIDABLE = frozenset({"budget_ms", "max_visited", "limit", "depth", "order_by", "predicates", "returns",
                         "section"})

__all__ = ["MAX_BUDGET_MS", "MAX_TOKEN_BUDGET", "MAX_UTTERANCE_CHARS", "Request", "check_as_of",
           "check_positive", "check_profile", "check_request", "check_session", "check_session_attributes",
           "check_utterance_input"]


@dataclass(frozen=True)
class Request:
    """A validated retrieval request (what the engine's stages read)."""

    utterance: str
    session: Session
    as_of: datetime
    as_of_defaulted: bool
    budget_ms: int | None
    profile: str | None
    token_budget: int | None
    record: bool | None
    pattern_overrides: Mapping[str, Mapping[str, Any]]
    #: Who asked (a verified caller's id: token subject or key id, never a credential), recorded
    #: on the decision trace; None in process.
    caller: str | None = None


def check_utterance_input(utterance: object) -> str:
    """The utterance as given (spans refer to it). Raises InputError: not a string, empty or
    control characters only (NUL...), over 4,000 characters, or a lone surrogate."""
    check_utterance(utterance, MAX_UTTERANCE_CHARS)
    assert isinstance(utterance, str)
    return utterance


def check_session(session: object, source: str = "session") -> Session:
    """A Session from a Session or a mapping. Raises InputError (not a mapping, bad fields,
    wrong types) or TenantError (missing/malformed tenant)."""
    return parse_session(session, source)


def check_as_of(as_of: object) -> tuple[datetime, bool]:
    """``(as_of, defaulted)``: the parsed instant, or now (UTC, to the second) and True when None.
    Raises InputError for anything but an ISO string, a date or a datetime (an int, a bool)."""
    if as_of is None:
        return datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0), True
    if isinstance(as_of, bool) or not isinstance(as_of, (str, date)):
        raise InputError(f"as_of must be an ISO date/datetime string, a date or a datetime, "
                         f"not {type(as_of).__name__}")
    when = to_datetime(as_of)
    assert when is not None
    return when, False


def check_positive(name: str, value: object, upper: int) -> int | None:
    """None, or an int in 1..upper. Raises InputError (0, negatives, floats, bools, strings):
    a zero budget is a mistake to report, never a silent default."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name} must be a whole number, not {type(value).__name__}")
    if not 1 <= value <= upper:
        raise InputError(f"{name} must be between 1 and {upper:,}, got {value} (omit it for the default)")
    return value


def check_profile(profile: object) -> str | None:
    """None, or the name of a published ranking profile. Raises InputError for an unknown one."""
    if profile is None:
        return None
    if not isinstance(profile, str):
        raise InputError(f"profile must be a ranking profile name, not {type(profile).__name__}")
    from hopweave.search.profiles import get_profile

    try:
        get_profile(profile)
    except UnknownProfileError as exc:
        raise InputError(str(exc)) from None
    return profile


def check_overrides(overrides: object) -> Mapping[str, Mapping[str, Any]]:
    """``{pattern name: {field: value}}`` with overridable fields only (the values are checked
    against the gates once the patterns are known). Raises InputError."""
    if overrides is None:
        return {}
    if not isinstance(overrides, Mapping):
        raise InputError("pattern_overrides must map pattern names to {field: value} mappings")
    for name, fields in overrides.items():
        if not isinstance(name, str) or not isinstance(fields, Mapping):
            raise InputError(f"pattern_overrides[{name!r}] must be a mapping of pattern fields")
        bad = sorted(str(k) for k in fields if k not in OVERRIDABLE)
        if bad:
            raise InputError(f"pattern_overrides[{name!r}] names field(s) {bad} that cannot be overridden; "
                             f"overridable: {sorted(OVERRIDABLE)}")
    return overrides


def check_request(
    utterance: object,
    *,
    session: object,
    as_of: object = None,
    budget_ms: object = None,
    profile: object = None,
    token_budget: object = None,
    record: object = None,
    pattern_overrides: object = None,
    caller: object = None,
) -> Request:
    """Every retrieval argument checked at once. Returns the Request.

    Raises:
        InputError: a malformed argument (the message names it and what to send instead).
        TenantError: a missing or malformed tenant in the session.
    """
    sess = check_session(session)
    text = check_utterance_input(utterance)
    when, defaulted = check_as_of(as_of)
    if record is not None and not isinstance(record, bool):
        raise InputError(f"record must be True, False or None, not {type(record).__name__}")
    return Request(
        utterance=text, session=sess, as_of=when, as_of_defaulted=defaulted,
        budget_ms=check_positive("budget_ms", budget_ms, MAX_BUDGET_MS), profile=check_profile(profile),
        token_budget=check_positive("token_budget", token_budget, MAX_TOKEN_BUDGET), record=record,
        pattern_overrides=check_overrides(pattern_overrides), caller=check_caller(caller),
    )


#: Longest caller id recorded on a trace.
MAX_CALLER_CHARS = 256


def check_caller(caller: object) -> str | None:
    """A caller id: None, or 1 to :data:`MAX_CALLER_CHARS` printable characters. Raises InputError."""
    if caller is None:
        return None
    if not isinstance(caller, str) or not caller or len(caller) > MAX_CALLER_CHARS or not caller.isprintable():
        raise InputError(f"caller must be 1 to {MAX_CALLER_CHARS} printable characters (a token subject or key id)")
    return caller
