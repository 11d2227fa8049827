"""What an application's query writer (e.g. its LLM) sees before a later retrieval round and
what it answers (:mod:`hopweave.engine.agentic` runs the rounds)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from hopweave.engine.result import ChunkItem
from hopweave.models.common import PatternResult


@dataclass(frozen=True)
class RoundRequest:
    """What a query writer sees before a later round."""

    utterance: str
    goal: str
    round: int
    unmet: tuple[str, ...]
    lexical_query: str
    dense_query: str
    relaxable: tuple[str, ...]
    chunks: tuple[ChunkItem, ...]
    facts: tuple[PatternResult, ...]


@dataclass(frozen=True)
class RoundQuery:
    """A later round's query: a new lexical and/or dense query, fields to relax (only among the
    goal's declared ``relax:`` steps), and the writer's reason."""

    lexical_query: str | None = None
    dense_query: str | None = None
    relax: tuple[str, ...] = ()
    reason: str = ""


#: Returns the next round's query, or None to stop.
QueryWriter = Callable[[RoundRequest], "RoundQuery | None"]


__all__ = ["QueryWriter", "RoundQuery", "RoundRequest"]
