"""Small model factories shared by the graph, FalkorDB and Neo4j tests."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hopweave.models.metagraph import EdgeStep, Seed, TraversalPattern


def make_pattern(**overrides: Any) -> TraversalPattern:
    """A valid one-hop Customer -HOLDS-> Account pattern; keyword arguments replace fields."""
    base: dict[str, Any] = dict(
        name="t",
        goal="G",
        sub_question="test?",
        seed=Seed(type="Customer"),
        edge_sequence=(EdgeStep(type="HOLDS"),),
        target_type="Account",
        depth=1,
        version=1,
        author="t",
        created_at=datetime(2026, 1, 1),
    )
    base.update(overrides)
    return TraversalPattern(**base)
