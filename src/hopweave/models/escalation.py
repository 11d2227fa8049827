"""A goal's escalation policy (pack data): one pipeline pass, or a multi-round loop under an
explicit budget of rounds, tokens and time.

.. code-block:: yaml

    escalation:
      mode: multi_round          # single (default): one pass, nothing extra
      max_rounds: 3              # rounds in all, the first pass included
      token_budget: 1200         # tokens of policy text the later rounds may add, in all
      latency_ms: 400            # wall-clock budget of the later rounds, in all
      min_score: 0.7             # the score cliff: the best chunk's semantic (cosine) score must reach it
      needs_entities: [Segment]     # entities the goal needs bound
      steps: [expand, relax:product, relax:segment]   # what a later round may do, in this order

``expand`` widens the lexical query with vocabulary from the first round (the titles of the
chunks it found, fact values, the utterance's content words); ``relax:<field>`` drops the
filter's clauses on that chunk field (never an always-on scope clause: those are refused and
reported). Each round is listed in the result with what it asked, why and what it added.
"""

from __future__ import annotations

import re
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

_STEP = re.compile(r"^(expand|relax:[A-Za-z_][A-Za-z0-9_]{0,63})$")


class EscalationPolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["single", "multi_round"] = "single"
    max_rounds: int = Field(default=3, ge=1, le=6)
    token_budget: int = Field(default=1500, ge=1, le=100_000)
    latency_ms: int = Field(default=500, ge=1, le=60_000)
    min_score: Optional[float] = Field(default=None, ge=0.0)
    needs_entities: tuple[str, ...] = ()
    steps: tuple[str, ...] = ("expand",)

    @field_validator("steps")
    @classmethod
    def _steps(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for s in v:
            if not _STEP.match(s):
                raise ValueError(f"escalation step {s!r}: use 'expand' or 'relax:<chunk field>'")
        if len(set(v)) != len(v):
            raise ValueError("escalation steps must not repeat")
        return v

    @property
    def multi_round(self) -> bool:
        return self.mode == "multi_round" and self.max_rounds > 1


__all__ = ["EscalationPolicy"]
