"""Procedure applied to the case: case facts, case state and rule verdicts.

The goal's :class:`~hopweave.models.case.CaseSpec` (pack data) says where each case fact comes
from (an entity, a session attribute, or a pattern's rows), which case state the facts put the
case in, and which patterns' rows carry rule conditions. Conditions are evaluated with the safe
expression language of :mod:`hopweave.models.expr` (never ``eval``). Each rule row gets
``verdict`` ("fires", "does not fire", "cannot be evaluated") and ``why`` (the comparison that
decided, with the facts' values), so the context shows which rules fire, which do not and why.
Pure functions; the engine re-runs the state's patterns when the state is not the default.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable, Mapping, Sequence

from hopweave.engine.context_lines import metric_value
from hopweave.errors import RuleExpressionError
from hopweave.models.case import CaseFact, CaseSpec
from hopweave.models.common import PatternResult, Row, Session
from hopweave.models.expr import evaluate
from hopweave.models.metagraph import Bind, TraversalPattern

#: The entity type that carries the resolved case state into patterns (``entity.CaseState``).
STATE_ENTITY = "CaseState"


def case_facts(spec: CaseSpec, facts: Sequence[PatternResult], entities: Mapping[str, Any],
               session: Session) -> dict[str, Any]:
    """The case facts' values by name (None when a fact has no value). Never raises."""
    by_pattern = {f.pattern: f for f in facts}
    return {name: _fact_value(cf, by_pattern, entities, session) for name, cf in sorted(spec.facts.items())}


def _fact_value(cf: CaseFact, by_pattern: Mapping[str, PatternResult], entities: Mapping[str, Any],
                session: Session) -> Any:
    if cf.entity:
        return entities.get(cf.entity)
    if cf.session:
        return session.attribute(cf.session)
    pr = by_pattern.get(cf.pattern or "")
    if pr is None or pr.error:
        return None
    if cf.fn == "first":
        return pr.rows[0].properties.get(cf.property or "") if pr.rows else None
    v = metric_value(cf.fn, cf.property, cf.where, pr.rows)
    return int(v) if isinstance(v, float) and v.is_integer() else v


def resolve_state(spec: CaseSpec, values: Mapping[str, Any]) -> tuple[str | None, str]:
    """The case state: the first of ``spec.states`` whose condition holds, else the default.
    Returns (state or None, why in words)."""
    for st in spec.states:
        v = evaluate(st.when, values)
        if v.value is True:
            return st.name, v.reason
    if spec.default_state is None:
        return None, "no case state applies"
    return spec.default_state, "default" + ("; no state condition holds" if spec.states else "")


def state_patterns(patterns: Sequence[TraversalPattern]) -> list[TraversalPattern]:
    """The patterns whose seed binds the case state (re-run when the state is not the default)."""
    return [p for p in patterns if isinstance(p.seed.value, Bind) and p.seed.value.ref == f"entity.{STATE_ENTITY}"]


def apply_rules(spec: CaseSpec, facts: Sequence[PatternResult], values: Mapping[str, Any]) -> list[PatternResult]:
    """``facts`` with every row of the rule patterns annotated (``verdict``, ``why``); rows
    whose condition is outside the language say so instead of raising. Firing rules come first."""
    out: list[PatternResult] = []
    for pr in facts:
        if pr.pattern not in spec.rules:
            out.append(pr)
            continue
        rows = [_judge(r, spec.condition_property, values) for r in pr.rows]
        rank = {"fires": 0, "cannot be evaluated": 1, "does not fire": 2}
        rows.sort(key=lambda r: rank.get(str(r.properties.get("verdict")), 3))  # stable: pattern order within
        out.append(pr.model_copy(update={"rows": tuple(rows)}))
    return out


def _judge(row: Row, prop: str, values: Mapping[str, Any]) -> Row:
    cond = row.properties.get(prop)
    if not isinstance(cond, str) or not cond.strip():
        verdict, why = "cannot be evaluated", "the rule has no condition"
    else:
        try:
            v = evaluate(cond, values)
        except RuleExpressionError as exc:
            verdict, why = "cannot be evaluated", f"its condition is not in the rule language ({exc})"
        else:
            verdict = {True: "fires", False: "does not fire", None: "cannot be evaluated"}[v.value]
            why = v.reason
    return row.model_copy(update={"properties": {**row.properties, "verdict": verdict, "why": why}})


def state_line(state: str | None, why: str, values: Mapping[str, Any]) -> str:
    """One line for the context: the case state and the facts it was resolved from."""
    shown = ", ".join(f"{k} = {_fmt(v)}" for k, v in values.items() if v is not None)
    return f"Case state: {state or 'none'} ({why}); case facts: {shown or 'none'}"


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


__all__ = ["STATE_ENTITY", "apply_rules", "case_facts", "resolve_state", "state_line", "state_patterns"]


def apply_case(
    spec: CaseSpec | None,
    patterns: Sequence[TraversalPattern],
    facts: list[PatternResult],
    entities: Mapping[str, Any],
    session: Session,
    rerun: Callable[[list[TraversalPattern], dict[str, Any]], list[PatternResult]],
    *,
    as_of: datetime | None = None,
) -> tuple[list[PatternResult], dict[str, Any]]:
    """Apply the goal's procedure to the case: resolve the case facts and state, re-run the
    state's patterns (``rerun(patterns, entities)``) when the state is not the default one the
    first run used, and judge the rules. Returns (facts, the values the assembler's templates
    get as ``entity_<name>``: ``CaseState`` and ``case`` (the state line)). ``spec`` None:
    facts unchanged.

    Conditions also see ``as_of`` (the request's instant, for recurring windows such as
    ``as_of during "11-15" to "03-15"``) unless a case fact has that name; the state line shows
    the case facts only."""
    if spec is None:
        return facts, dict(entities)
    values = case_facts(spec, facts, entities, session)
    judged = values if as_of is None or "as_of" in values else {**values, "as_of": as_of}
    state, why = resolve_state(spec, judged)
    if state is not None and state != spec.default_state:
        again = state_patterns(patterns)
        if again:
            fresh = {f.pattern: f for f in rerun(again, {**entities, STATE_ENTITY: state})}
            facts = [fresh.get(f.pattern, f) for f in facts]
    facts = apply_rules(spec, facts, judged)
    extra = {**entities, "case": state_line(state, why, values)}
    if state is not None:
        extra[STATE_ENTITY] = state
    return facts, extra
