"""Pattern write gates: the one harness every TraversalPattern / GoalType write goes through.

Gates (each rejection is a typed error naming the pattern, the field and the fix):

- **identifiers** — every label, relationship type and property name is a safe identifier
  (:class:`~hopweave.errors.PatternIdentifierError`), checked on the raw data before parsing;
- **shape** — the data parses as a TraversalPattern (unknown fields rejected);
- **schema** — labels, relationship types and properties exist; the edges chain (each edge's
  endpoint fits the labels the previous node can have, given its direction); via types fit;
  ``depth == len(edge_sequence)``; the target type fits the last edge; predicate ``on`` indexes
  are in range; value types fit property types;
- **bounds** — budget_ms, max_visited, limit and depth within :data:`BOUNDS`;
- **provenance** — author, version and created_at present;
- **PII** (PIIError) — returning a PII property not listed in ``pii_allowed``; a ``pii_allowed``
  entry, a predicate, a seed key or an ``order_by`` on a PII property that the pattern's GoalType
  does not grant in ``pii_grants`` (``Label.property``): grants come from the goal's owner, never
  from the pattern itself (rule details in :mod:`hopweave.graph.gate_rules`);
- **conflicts** (:func:`check_conflicts`) — two patterns of one goal answering the same
  sub-question; a changed definition without a version bump (or a version going backwards)
  relative to what is stored.

The per-pattern gates are the table :data:`hopweave.graph.gate_rules.RULES` of small named rule
functions. Also: :func:`patterns_using` (co-evolution: which patterns use a relationship type / label) and
:func:`validate_all` (re-validate stored patterns against a possibly changed schema).
"""

from __future__ import annotations

import string
from typing import Any, Iterable, Iterator, Mapping

from pydantic import ValidationError

from hopweave.errors import PatternConflictError, PatternIdentifierError, PatternValidationError
from hopweave.graph.base import GraphStore
from hopweave.graph.gate_rules import BOUNDS, err, run_rules
from hopweave.models.metagraph import COMPUTED_ROW_FIELDS, GoalType, TraversalPattern
from hopweave.models.schema import SAFE_IDENTIFIER, GraphSchema

__all__ = ["BOUNDS", "check_conflicts", "gate_write", "parse_pattern", "pattern_errors", "validate_pattern"]


_err = err


# ---- raw identifier scan ------------------------------------------------------------------
def _identifier_fields(data: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    for key in ("name", "goal", "target_type"):
        if key in data:
            yield key, data[key]
    seed = data.get("seed")
    if isinstance(seed, Mapping):
        for key in ("type", "key"):
            if key in seed:
                yield f"seed.{key}", seed[key]
    for i, step in enumerate(data.get("edge_sequence") or ()):
        if isinstance(step, Mapping) and "type" in step:
            yield f"edge_sequence[{i}].type", step["type"]
    for i, via in enumerate(data.get("via_types") or ()):
        if via is not None:
            yield f"via_types[{i}]", via
    for i, pred in enumerate(data.get("predicates") or ()):
        if isinstance(pred, Mapping) and "property" in pred:
            yield f"predicates[{i}].property", pred["property"]
    for i, ob in enumerate(data.get("order_by") or ()):
        if isinstance(ob, Mapping) and "property" in ob:
            yield f"order_by[{i}].property", ob["property"]
    for key in ("returns", "pii_allowed"):
        for i, prop in enumerate(data.get(key) or ()):
            yield f"{key}[{i}]", prop


def parse_pattern(data: Mapping[str, Any] | TraversalPattern) -> TraversalPattern:
    """Parse raw pattern data after the identifier gate. Raises PatternIdentifierError or
    PatternValidationError (naming the field)."""
    if isinstance(data, TraversalPattern):
        return data
    if not isinstance(data, Mapping):
        raise _err(
            "?",
            "pattern",
            f"expected a mapping, got {type(data).__name__}",
            "write the pattern as a YAML mapping",
        )
    name = str(data.get("name", "?"))[:80]
    for field, value in _identifier_fields(data):
        if not isinstance(value, str) or not SAFE_IDENTIFIER.match(value):
            raise PatternIdentifierError(
                name,
                field,
                f"{value!r} is not a safe identifier (it could inject Cypher)",
                "use letters, digits and underscore only, starting with a letter or underscore, at most 64 chars",
            )
    for field in ("author", "version", "created_at"):
        if data.get(field) in (None, ""):
            raise _err(
                name,
                field,
                "provenance is required",
                f"set {field} (author, version and created_at are required)",
            )
    try:
        return TraversalPattern.model_validate(dict(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first.get("loc", ())) or "pattern"
        raise _err(
            name, loc, first.get("msg", str(exc)), "correct the field to the TraversalPattern model"
        ) from None


def _pattern_errors(
    p: TraversalPattern, schema: GraphSchema, goal: GoalType | None, skip: frozenset[str] = frozenset()
) -> Iterator[PatternValidationError]:
    """The per-pattern rules of :data:`hopweave.graph.gate_rules.RULES`, in order."""
    yield from run_rules(p, schema, goal, skip)


def pattern_errors(
    data: Mapping[str, Any] | TraversalPattern, schema: GraphSchema, goal: GoalType | None = None
) -> list[PatternValidationError]:
    """Every gate error of one pattern (empty = valid). Identifier and shape errors stop early."""
    try:
        p = parse_pattern(data)
    except PatternValidationError as exc:
        return [exc]
    return list(_pattern_errors(p, schema, goal))


def validate_pattern(
    data: Mapping[str, Any] | TraversalPattern, schema: GraphSchema, goal: GoalType | None = None
) -> TraversalPattern:
    """Run every per-pattern gate; return the parsed pattern or raise the first error
    (PatternIdentifierError, PIIError or PatternValidationError)."""
    p = parse_pattern(data)
    for problem in _pattern_errors(p, schema, goal):
        raise problem
    return p


def normalize_question(q: str) -> str:
    return " ".join(q.casefold().replace("?", " ").split())


def check_conflicts(new: Iterable[TraversalPattern], stored: Iterable[TraversalPattern]) -> None:
    """Raise PatternConflictError if two patterns of one goal answer the same sub-question
    (among ``new`` plus ``stored`` of other names), or a pattern's definition changed without a
    version bump (or its version went backwards) relative to ``stored``."""
    stored_by_name = {p.name: p for p in stored}
    new_list = list(new)
    names = [p.name for p in new_list]
    dup = sorted({x for x in names if names.count(x) > 1})
    if dup:
        raise PatternConflictError(
            dup[0],
            "name",
            "the same pattern name appears twice in one write",
            "give each pattern a unique name",
        )
    for p in new_list:
        old = stored_by_name.get(p.name)
        if old is None:
            continue
        if p.version < old.version:
            raise PatternConflictError(
                p.name,
                "version",
                f"version {p.version} is older than the stored version {old.version}",
                f"use version {old.version + 1} or higher",
            )
        if p.definition_hash() != old.definition_hash() and p.version == old.version:
            raise PatternConflictError(
                p.name,
                "version",
                f"definition changed but version is still {p.version}",
                f"bump version to {old.version + 1}",
            )
        if p.goal != old.goal:
            raise PatternConflictError(
                p.name, "goal", f"pattern moved from goal {old.goal} to {p.goal}", "use a new pattern name"
            )
    merged = {p.name: p for p in stored_by_name.values()}
    merged.update({p.name: p for p in new_list})
    seen: dict[tuple[str, str], str] = {}
    for name in sorted(merged):
        p = merged[name]
        key = (p.goal, normalize_question(p.sub_question))
        other = seen.get(key)
        if other is not None:
            culprit = p.name if p.name in names else other
            raise PatternConflictError(
                culprit,
                "sub_question",
                f"patterns {other!r} and {p.name!r} both answer {p.sub_question!r} for goal {p.goal}",
                "merge them, or reword one sub-question",
            )
        seen[key] = p.name


def validate_goal(goal: GoalType, patterns: Iterable[TraversalPattern]) -> None:
    """Gate a GoalType write: section templates name patterns of this goal."""
    names = {p.name for p in patterns if p.goal == goal.name}
    for s in goal.sections:
        for pname in s.patterns:
            if pname not in names:
                raise PatternValidationError(
                    goal.name,
                    f"sections.{s.name}.patterns",
                    f"section names pattern {pname!r} which goal {goal.name} does not have",
                    "name a pattern of this goal",
                )


def template_fields(template: str) -> list[str]:
    """The field names a (valid) str.format template names, nested format specs included."""
    out: list[str] = []
    for _, name, spec, _conv in string.Formatter().parse(template):
        if name is not None:
            out.append(name)
        if spec and "{" in spec:
            out.extend(template_fields(spec))
    return out


def validate_section_fields(goal: GoalType, patterns: Iterable[TraversalPattern], schema: GraphSchema) -> None:
    """Gate a GoalType write: a facts section's row lines (``line``, ``pattern_lines``) name
    only fields its patterns' rows carry: the properties the schema declares on each pattern's
    target label, ``id``, ``label`` and the engine's :data:`COMPUTED_ROW_FIELDS`. Raises PatternValidationError naming the section and key."""
    by_name = {p.name: p for p in patterns if p.goal == goal.name}
    for s in goal.sections:
        if s.source != "facts":
            continue
        rows = s.patterns if s.row_patterns is None else s.row_patterns
        for pname in rows:
            p = by_name.get(pname)
            if p is None or p.target_type not in schema.label_map:
                continue
            declared = set(schema.label_map[p.target_type].props) | {"id", "label", "tenant_id"} | COMPUTED_ROW_FIELDS
            key = f"sections.{s.name}.pattern_lines.{pname}" if pname in s.pattern_lines else f"sections.{s.name}.line"
            template = s.pattern_lines.get(pname, s.line)
            unknown = sorted(set(template_fields(template)) - declared)
            if unknown:
                raise PatternValidationError(
                    goal.name, key, f"the template names {unknown}, which rows of pattern {pname!r} "
                    f"({p.target_type}) do not carry", f"use declared properties of {p.target_type}, id or label")


def gate_write(
    schema: GraphSchema,
    goals: Iterable[GoalType],
    patterns: Iterable[Mapping[str, Any] | TraversalPattern],
    stored: Iterable[TraversalPattern] = (),
    stored_goals: Iterable[GoalType] = (),
) -> list[TraversalPattern]:
    """The full harness for one metagraph write. A pattern is checked against its GoalType among
    ``goals`` (else among ``stored_goals``: its PII grants and sections). Returns the parsed
    patterns; raises the first error (PatternValidationError or a subclass)."""
    goal_map = {g.name: g for g in stored_goals}
    goal_map.update({g.name: g for g in goals})
    written = {g.name for g in goals}
    parsed: list[TraversalPattern] = []
    for data in patterns:
        p = parse_pattern(data)
        validate_pattern(p, schema, goal_map.get(p.goal))
        parsed.append(p)
    check_conflicts(parsed, stored)
    all_patterns = {p.name: p for p in stored}
    all_patterns.update({p.name: p for p in parsed})
    for name in sorted(written):
        validate_goal(goal_map[name], all_patterns.values())
        validate_section_fields(goal_map[name], all_patterns.values(), schema)
    return parsed


# ---- co-evolution ---------------------------------------------------------------------------
def labels_used(p: TraversalPattern) -> list[str]:
    return sorted({p.seed.type, p.target_type, *(v for v in p.via_types if v)})


def patterns_using(
    store: GraphStore, rel_type: str | None = None, label: str | None = None
) -> list[TraversalPattern]:
    """Patterns (read from the graph) whose edge sequence uses ``rel_type`` and/or whose seed,
    via or target types use ``label``, by name."""
    out = []
    for p in store.patterns():
        if rel_type is not None and rel_type not in {s.type for s in p.edge_sequence}:
            continue
        if label is not None and label not in labels_used(p):
            continue
        out.append(p)
    return out


def validate_all(
    store: GraphStore, schema: GraphSchema | None = None
) -> dict[str, list[PatternValidationError]]:
    """Re-validate every stored pattern against ``schema`` (default: the store's), including the
    stored nodes whose definition does not parse (``store.pattern_problems()``, field
    ``definition``). Returns the errors by pattern name, only for patterns with errors (an empty
    dict = all valid)."""
    schema = schema or store.schema
    goals = {g.name: g for g in store.goal_types()}
    out: dict[str, list[PatternValidationError]] = {}
    for bad in store.pattern_problems():  # stored nodes whose definition does not even parse
        out.setdefault(bad.name, []).append(
            PatternValidationError(bad.name, "definition", bad.reason, "rewrite it with metagraph_io.write_metagraph")
        )
    for p in store.patterns():
        errs = list(_pattern_errors(p, schema, goals.get(p.goal)))
        if errs:
            out[p.name] = errs
    return out
