"""The stated sizes (models/limits.py) refused at the boundary with a LimitError naming the
field: session fields and attributes, NaN numbers; the engine's config as a mapping or with a
NaN budget is a typed error, never an AttributeError."""

from __future__ import annotations

import math

import pytest

from hopweave.engine.config import EngineConfig, engine_config
from hopweave.errors import ConfigError, InputError
from hopweave.models.common import parse_session
from hopweave.models.limits import MAX_SESSION_ATTRIBUTES, MAX_SESSION_FIELD_CHARS, LimitError


@pytest.mark.parametrize("field", ["customer_id", "region", "channel", "agent_id", "locale"])
def test_session_fields_over_the_limit_are_refused_naming_the_field(field: str) -> None:
    ok = parse_session({"tenant_id": "t1", field: "x" * MAX_SESSION_FIELD_CHARS})
    assert getattr(ok, field) == "x" * MAX_SESSION_FIELD_CHARS
    with pytest.raises(LimitError, match=f"session.{field} is 10,000,000 characters; at most 256") as ei:
        parse_session({"tenant_id": "t1", field: "x" * 10_000_000})
    assert isinstance(ei.value, InputError) and ei.value.field == f"session.{field}"


@pytest.mark.parametrize("attributes, needle", [
    ({"state": "x" * 1025}, "1,025 characters"),
    ({"k" * 1025: "x"}, "attribute name"),
    ({f"a{i}": 1 for i in range(MAX_SESSION_ATTRIBUTES + 1)}, "at most 64"),
    ({"score": math.nan}, "finite"),
    ({"score": math.inf}, "finite"),
])
def test_session_attributes_are_bounded_and_finite(attributes: dict, needle: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(LimitError, match=needle):
        parse_session({"tenant_id": "t1", "attributes": attributes})


def test_engine_config_from_a_mapping_and_typed_errors() -> None:
    assert engine_config({"budget_ms": 5}).budget_ms == 5
    assert engine_config(None) == EngineConfig()
    with pytest.raises(ConfigError, match="no field"):
        engine_config({"budget": 5})
    with pytest.raises(ConfigError, match="mapping"):
        engine_config(5)


@pytest.mark.parametrize("over", [{"budget_ms": math.nan}, {"budget_ms": 0}, {"budget_ms": 2.5},
                                  {"understand_share": math.inf}, {"record": "yes"}, {"max_active": -1},
                                  {"default_profile": 3}])
def test_engine_config_refuses_nan_zero_and_wrong_types(over: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(ConfigError, match=next(iter(over))):
        EngineConfig(**over)
