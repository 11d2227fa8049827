"""Internal (never stored) traversal patterns: the engine's own graph questions, asked through
the same tenant-scoped walker as any stored pattern.

The resolver's ownership check, the lexical plan's synonym lookup, the trace audit queries and
the HTML trace view each ask one short walk. :func:`internal_pattern` builds them all with one
set of defaults and a fixed ``created_at`` (the patterns are never stored, so a wall-clock
value would only make them non-deterministic).
"""

from __future__ import annotations

from datetime import datetime
from typing import Sequence

from hopweave.models.metagraph import EdgeStep, OrderBy, Predicate, Seed, TraversalPattern

#: ``created_at`` of every internal pattern (never stored; a constant keeps them deterministic).
INTERNAL_EPOCH = datetime(2000, 1, 1)


def internal_pattern(
    name: str,
    *,
    owner: str,
    seed: Seed,
    edges: Sequence[EdgeStep],
    target: str,
    question: str | None = None,
    predicates: Sequence[Predicate] = (),
    returns: Sequence[str] = (),
    order_by: Sequence[OrderBy] = (),
    limit: int = 10_000,
    budget_ms: int = 5_000,
    max_visited: int = 1_000_000,
) -> TraversalPattern:
    """An ad-hoc pattern named ``name`` for the internal ``owner`` (``_resolver``, ``_audit``...).

    Returns the TraversalPattern (depth = number of edges). Raises pydantic ValidationError only
    for a programming error (a malformed internal question).
    """
    return TraversalPattern(
        name=name, goal=owner, sub_question=question or name.replace("_", " ").strip(), seed=seed,
        edge_sequence=tuple(edges), target_type=target, predicates=tuple(predicates), depth=len(edges),
        budget_ms=budget_ms, max_visited=max_visited, limit=limit, returns=tuple(returns),
        order_by=tuple(order_by), version=1, author=f"hopweave.{owner.strip('_')}",
        created_at=INTERNAL_EPOCH,
    )
