"""The scenario file: an utterance, the authenticated session, the time it is asked (``as_of``)
and what the context must (and must not) contain (docs/packs.md, Scenarios). Replay
(``hopweave.engine.replay``) runs it; ``hopweave validate`` checks it with the same models.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hopweave.errors import InputError
from hopweave.fileio import read_yaml
from hopweave.models.common import Session, parse_session, read_session_file
from hopweave.models.keys import with_key_hints

Fault = Literal["search_unavailable", "understand_unavailable"]
#: ``Expect.goal`` when the scenario does not name one (``goal: null`` expects no goal).
UNSET: Any = object()


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token_budget: Optional[int] = Field(default=None, ge=0)
    profile: Optional[str] = None
    budget_ms: Optional[int] = Field(default=None, ge=1)
    pattern_overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)
    faults: list[Fault] = Field(default_factory=list)


class Expect(BaseModel):
    model_config = ConfigDict(extra="forbid")

    goal: Any = UNSET
    clarify: Optional[bool] = None
    min_confidence: Optional[float] = None
    sections: list[str] = Field(default_factory=list)
    facts: list[str] = Field(default_factory=list)
    absent: list[str] = Field(default_factory=list)
    chunks: list[str] = Field(default_factory=list)
    forbidden_chunks: list[str] = Field(default_factory=list)
    forbidden_metadata: dict[str, list[Any]] = Field(default_factory=dict)
    documents: list[str] = Field(default_factory=list)
    precedent: list[str] = Field(default_factory=list)
    forbidden_precedent: list[str] = Field(default_factory=list)
    degraded: list[str] = Field(default_factory=list)
    not_degraded: bool = False
    entities: dict[str, Any] = Field(default_factory=dict)
    max_tokens: Optional[int] = None
    truncated_patterns: list[str] = Field(default_factory=list)
    revisions: dict[str, str] = Field(default_factory=dict)
    found_by: list[Literal["semantic", "lexical"]] = Field(default_factory=list)
    in_force: bool = False
    #: Retrieval rounds: exactly ``rounds``, at least ``min_rounds``; each string of
    #: ``round_actions`` appears in some later round's action; ``intents``: the parts' goals.
    rounds: Optional[int] = Field(default=None, ge=1)
    min_rounds: Optional[int] = Field(default=None, ge=1)
    round_actions: list[str] = Field(default_factory=list)
    intents: list[Optional[str]] = Field(default_factory=list)


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    utterance: str
    session: Optional[dict[str, Any]] = None
    session_file: Optional[str] = None
    as_of: str
    options: Options = Field(default_factory=Options)
    expect: Expect = Field(default_factory=Expect)
    path: str = ""

    def resolved_session(self) -> Session:
        """The scenario's session: its ``session_file`` (relative to the scenario) overlaid with
        its inline ``session``. Raises InputError naming the scenario, or TenantError."""
        data: dict[str, Any] = {}
        if self.session_file:
            p = Path(self.path).parent / self.session_file if self.path else Path(self.session_file)
            data.update(read_session_file(p).model_dump(exclude_defaults=True))
        data.update(self.session or {})
        return parse_session(data, f"scenario {self.name}: session")


def load_scenario(path: str | Path) -> Scenario:
    """Read one scenario YAML file. Raises InputError naming the file and the problem."""
    p = Path(path)
    return parse_scenario(read_yaml(p, "scenario"), p)


def parse_scenario(data: Any, p: str | Path) -> Scenario:
    """A parsed scenario file (``data``, read from ``p``) as a Scenario. Raises InputError
    naming the file and the problem."""
    if not isinstance(data, dict):
        raise InputError(f"scenario {p} is not a YAML mapping")
    if "as_of" in data and not isinstance(data["as_of"], str):
        data["as_of"] = str(data["as_of"]).replace(" ", "T")
    try:
        return Scenario.model_validate({**data, "path": str(p)})
    except ValidationError as exc:
        raise InputError(f"scenario {p} is invalid: {with_key_hints(exc, Scenario)}") from exc


