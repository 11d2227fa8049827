"""The procedure stage: the goal's case (facts, state, rules: :mod:`hopweave.engine.rules`)
applied to one request's pattern results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from hopweave.engine.config import Run
from hopweave.engine.deps import StageDeps
from hopweave.engine.plan import Plan
from hopweave.engine.rules import apply_case
from hopweave.models.common import PatternResult
from hopweave.models.metagraph import TraversalPattern


@dataclass(frozen=True)
class Case:
    """The procedure stage's outcome: the pattern results (the case state's patterns re-run
    when it is not the default) and the values the context's templates see."""

    facts: tuple[PatternResult, ...]
    values: Mapping[str, Any]


def case_for(deps: StageDeps, run: Run, plan: Plan, facts: list[PatternResult]) -> Case:
    """:func:`apply_case` for one request: the case state's patterns re-run on the graph when
    the state is not the default.

    Args:
        deps: the engine's parts (the graph).
        run: the request in flight.
        plan: its plan (goal, patterns, entity values).
        facts: the first pass's pattern results.

    Returns:
        The case's facts and template values.
    """
    from hopweave.graph.traverse import run_goal_patterns
    from hopweave.models.common import Bindings

    def rerun(pats: list[TraversalPattern], entities: dict[str, Any]) -> list[PatternResult]:
        b = Bindings(session=run.req.session, as_of=run.req.as_of, goal=plan.goal.name if plan.goal else None,
                     entities=entities)
        return run_goal_patterns(deps.graph, run.req.session.tenant_id, pats, b, max_workers=1)

    spec = plan.goal.case if plan.goal is not None else None
    out, values = apply_case(spec, plan.patterns, facts, plan.entity_values, run.req.session, rerun,
                             as_of=run.req.as_of)
    return Case(tuple(out), values)


__all__ = ["Case", "case_for"]
