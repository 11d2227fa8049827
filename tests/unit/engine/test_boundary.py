"""One validated boundary (issue 12 item 9): every malformed argument of retrieve / aretrieve is a
typed InputError (or TenantError) raised before any stage runs, never a raw TypeError, a silent
default or a degraded result."""

from __future__ import annotations

import asyncio
from datetime import date

import pytest
from domains import AS_OF, DELTABANK_REGISTRY, MARIA, UTTERANCE

from hopweave.engine.engine import Engine
from hopweave.errors import ConfigError, InputError, TenantError
from hopweave.models.domain import DomainRegistry


@pytest.mark.parametrize("as_of", [20260512, 1.5, True, ["2026-05-12"], "12/05/2026", "2026-13-45"])
def test_bad_as_of(engine: Engine, as_of) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="as_of"):
        engine.retrieve(UTTERANCE, session=MARIA, as_of=as_of, record=False)


@pytest.mark.parametrize("as_of", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00"])
def test_an_as_of_outside_the_years_held_is_an_input_error(engine: Engine, as_of: str) -> None:
    with pytest.raises(InputError, match="as_of .* outside"):
        engine.retrieve(UTTERANCE, session=MARIA, as_of=as_of, record=False)


def test_time_logic_agrees_below_and_above_the_year_1000(engine: Engine) -> None:
    def rows(as_of: str) -> dict[str, int]:
        r = engine.retrieve(UTTERANCE, session=MARIA, as_of=as_of, record=False)
        return {f.pattern: len(f.rows) for f in r.facts}

    assert rows("0999-12-31") == rows("1000-12-31") == rows("0001-06-01")


def test_as_of_date_and_datetime_are_accepted(engine: Engine) -> None:
    r = engine.retrieve(UTTERANCE, session=MARIA, as_of=date(2026, 5, 12), record=False)
    assert r.as_of.isoformat() == "2026-05-12T23:59:59" and not r.as_of_defaulted


@pytest.mark.parametrize("utterance", ["\x00", "\x00" * 50, "\x00 \x01\x02", "   ", "", "a" * 4001,
                                       "late fee \ud83d", "\udc00", None, 39])
def test_bad_utterance(engine: Engine, utterance) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError):
        engine.retrieve(utterance, session=MARIA, as_of=AS_OF, record=False)


def test_the_documented_limit_is_4000_characters(engine: Engine) -> None:
    text = UTTERANCE + " " + "x" * (4000 - len(UTTERANCE) - 1)
    assert engine.retrieve(text, session=MARIA, as_of=AS_OF, record=False).trace_id.startswith("RT_")
    with pytest.raises(InputError, match="4,000"):
        engine.retrieve(text + "x", session=MARIA, as_of=AS_OF, record=False)


def test_unknown_profile_is_an_input_error_not_a_degradation(engine: Engine) -> None:
    with pytest.raises(InputError, match="unknown ranking profile 'no_such_profile'"):
        engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, profile="no_such_profile", record=False)


@pytest.mark.parametrize("arg", ["budget_ms", "token_budget"])
@pytest.mark.parametrize("value", [0, -5, True, 2.5, "100", 10**9])
def test_zero_or_malformed_budgets(engine: Engine, arg: str, value) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=arg):
        engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False, **{arg: value})


@pytest.mark.parametrize("overrides, match", [
    ({"recent_transactions": {"max_visited": 10**9}}, "gates|max_visited"),
    ({"recent_transactions": {"budget_ms": 50_000}}, "gates|budget_ms"),
    ({"recent_transactions": {"limit": 100_000}}, "gates|limit"),
    ({"recent_transactions": {"depth": 50}}, "gates|depth"),
    ({"recent_transactions": {"pii_allowed": ["email"]}}, "cannot be overridden"),
    ({"recent_transactions": 5}, "mapping"),
    ("max_visited=3", "mapping"),
])
def test_pattern_overrides_are_gated(engine: Engine, overrides, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=match):
        engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False, pattern_overrides=overrides)


def test_a_valid_override_still_works(engine: Engine) -> None:
    r = engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False,
                        pattern_overrides={"recent_transactions": {"max_visited": 5}})
    assert any(f.pattern == "recent_transactions" and f.truncated for f in r.facts)


@pytest.mark.parametrize("session", ["deltabank", {"tenant_id": "deltabank", "customer_id": 4421},
                                     {"tenant_id": "deltabank", "nickname": "M"},
                                     {"tenant_id": "deltabank", "attributes": {"state": "CA"}}])
def test_bad_session(engine: Engine, session) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError):
        engine.retrieve(UTTERANCE, session=session, as_of=AS_OF, record=False)


def test_unserved_tenant_and_missing_domains(engine: Engine) -> None:
    with pytest.raises(TenantError, match="not served") as err:
        engine.retrieve(UTTERANCE, session={"tenant_id": "acme"}, as_of=AS_OF, record=False)
    assert "deltabank" not in str(err.value) and "northbank" not in str(err.value)  # no other tenant named
    bare = Engine(engine.graph, engine.index, config=engine.config)
    try:
        with pytest.raises(ConfigError, match="domain settings"):
            bare.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    finally:
        bare.close_pools()
    assert isinstance(DELTABANK_REGISTRY, DomainRegistry)


def test_aretrieve_uses_the_same_boundary(engine: Engine) -> None:
    with pytest.raises(InputError, match="token_budget"):
        asyncio.run(engine.aretrieve(UTTERANCE, session=MARIA, as_of=AS_OF, token_budget=0))
    with pytest.raises(InputError, match="as_of"):
        asyncio.run(engine.aretrieve(UTTERANCE, session=MARIA, as_of=20260512))


def test_engine_open_takes_a_config_mapping_and_refuses_a_bad_one(store_dir) -> None:  # type: ignore[no-untyped-def]
    from hopweave.errors import ConfigError

    with pytest.raises(ConfigError, match="budget_ms"):
        Engine.open(store_dir, domains=DELTABANK_REGISTRY, config={"budget_ms": float("nan")})
    with pytest.raises(ConfigError, match="no field"):
        Engine.open(store_dir, domains=DELTABANK_REGISTRY, config={"budget": 5})
