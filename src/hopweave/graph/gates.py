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
- **PII** — returning a PII property not listed in ``pii_allowed`` raises PIIError;
- **conflicts** (:func:`check_conflicts`) — two patterns of one goal answering the same
  sub-question; a changed definition without a version bump (or a version going backwards)
  relative to what is stored.

Also: :func:`patterns_using` (co-evolution: which patterns use a relationship type / label) and
:func:`validate_all` (re-validate stored patterns against a possibly changed schema).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Iterator, Mapping

from pydantic import ValidationError

from hopweave.errors import (
    PatternConflictError,
    PatternIdentifierError,
    PatternValidationError,
    PIIError,
)
from hopweave.graph.base import GraphStore
from hopweave.models.metagraph import (
    AsOfYear,
    Bind,
    GoalType,
    Literal_,
    RelativeTime,
    TraversalPattern,
)
from hopweave.models.schema import SAFE_IDENTIFIER, GraphSchema

#: Upper bounds a pattern may declare (a pattern is a safety rail, not a full scan).
BOUNDS = {"budget_ms": 2_000, "max_visited": 1_000_000, "limit": 1_000, "depth": 6}

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")


def _err(name: str, field: str, problem: str, fix: str) -> PatternValidationError:
    return PatternValidationError(name, field, problem, fix)


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


# ---- schema checks ------------------------------------------------------------------------
def _labels_after(
    schema: GraphSchema, prev: set[str], rel_name: str, direction: str
) -> tuple[set[str], set[str]]:
    """(labels the edge accepts at the previous end, labels at the next end), given direction."""
    rel = schema.rel_map[rel_name]
    if direction == "out":
        return set(rel.from_labels), set(rel.to_labels)
    if direction == "in":
        return set(rel.to_labels), set(rel.from_labels)
    nxt: set[str] = set()
    if prev & set(rel.from_labels):
        nxt |= set(rel.to_labels)
    if prev & set(rel.to_labels):
        nxt |= set(rel.from_labels)
    return set(rel.from_labels) | set(rel.to_labels), nxt


def _value_type_ok(ref: Any, prop_type: str, op: str) -> str | None:
    """None if a ValueRef fits the property type, else the problem."""
    if isinstance(ref, Bind):
        return None
    if isinstance(ref, RelativeTime):
        return (
            None
            if prop_type in ("date", "datetime")
            else f"a relative time needs a date/datetime property, not {prop_type}"
        )
    if isinstance(ref, AsOfYear):
        return None if prop_type == "int" else f"as_of_year needs an int property, not {prop_type}"
    if isinstance(ref, Literal_):
        vals = ref.value if isinstance(ref.value, tuple) else (ref.value,)
        if isinstance(ref.value, tuple) and op != "in":
            return f"a list value needs op 'in', not {op!r}"
        for v in vals:
            ok = {
                "str": isinstance(v, str),
                "int": isinstance(v, int) and not isinstance(v, bool),
                "float": isinstance(v, (int, float)) and not isinstance(v, bool),
                "bool": isinstance(v, bool),
                "date": isinstance(v, str) and bool(_DATE_RE.match(v)),
                "datetime": isinstance(v, str) and bool(_DATETIME_RE.match(v)),
            }.get(prop_type, False)
            if not ok:
                return f"value {v!r} does not fit property type {prop_type}"
    return None


def _pattern_errors(
    p: TraversalPattern, schema: GraphSchema, goal: GoalType | None
) -> Iterator[PatternValidationError]:
    n = p.name
    if goal is not None and p.goal != goal.name:
        yield _err(
            n,
            "goal",
            f"pattern belongs to goal {p.goal!r}, written under {goal.name!r}",
            "set goal to the GoalType's name",
        )
    if p.seed.type not in schema.label_map:
        yield _err(
            n,
            "seed.type",
            f"label {p.seed.type!r} is not in schema {schema.version}",
            f"use one of {sorted(schema.label_map)}",
        )
        return
    if p.seed.key not in schema.label_map[p.seed.type].props:
        yield _err(
            n,
            "seed.key",
            f"property {p.seed.key!r} is not declared on {p.seed.type}",
            "use a declared property (usually id or name)",
        )
    if p.depth != len(p.edge_sequence):
        yield _err(
            n,
            "depth",
            f"depth {p.depth} != {len(p.edge_sequence)} edges",
            f"set depth to {len(p.edge_sequence)}",
        )
    for key, bound in BOUNDS.items():
        value = len(p.edge_sequence) if key == "depth" else getattr(p, key)
        if value > bound:
            yield _err(n, key, f"{key} {value} exceeds the bound {bound}", f"lower {key} to at most {bound}")
    if not p.author.strip():
        yield _err(n, "author", "author is blank", "name the pattern's author")
    if len(p.via_types) > max(len(p.edge_sequence) - 1, 0):
        yield _err(
            n,
            "via_types",
            f"{len(p.via_types)} via types for {len(p.edge_sequence) - 1} intermediate nodes",
            "give at most one via type per intermediate node (depth - 1)",
        )
    # chain
    possible: list[set[str]] = [{p.seed.type}]
    chain_ok = True
    for i, step in enumerate(p.edge_sequence):
        if step.type not in schema.rel_map:
            yield _err(
                n,
                f"edge_sequence[{i}].type",
                f"relationship type {step.type!r} is not in schema {schema.version}",
                f"use one of {sorted(schema.rel_map)} (or update the schema)",
            )
            chain_ok = False
            break
        prev = possible[-1]
        accepts, nxt = _labels_after(schema, prev, step.type, step.direction)
        if not prev & accepts:
            yield _err(
                n,
                f"edge_sequence[{i}]",
                f"{step.type} ({step.direction}) cannot follow a node labelled {sorted(prev)}; "
                f"that end of {step.type} takes {sorted(accepts)}",
                "fix the edge order, type or direction",
            )
            chain_ok = False
            break
        if i < len(p.edge_sequence) - 1 and i < len(p.via_types) and p.via_types[i] is not None:
            via = p.via_types[i]
            if via not in schema.label_map:
                yield _err(
                    n,
                    f"via_types[{i}]",
                    f"label {via!r} is not in the schema",
                    "use a declared label or null",
                )
                chain_ok = False
                break
            if via not in nxt:
                yield _err(
                    n,
                    f"via_types[{i}]",
                    f"{via} cannot be reached by {step.type} ({step.direction}); reachable: {sorted(nxt)}",
                    "use a reachable label or null",
                )
                chain_ok = False
                break
            nxt = {via}
        possible.append(nxt)
    if chain_ok:
        if p.target_type not in schema.label_map:
            yield _err(
                n,
                "target_type",
                f"label {p.target_type!r} is not in the schema",
                f"use one of {sorted(schema.label_map)}",
            )
            chain_ok = False
        elif p.target_type not in possible[-1]:
            yield _err(
                n,
                "target_type",
                f"{p.target_type} is not reachable by the last edge; reachable: {sorted(possible[-1])}",
                "change target_type or the last edge",
            )
            chain_ok = False
        else:
            possible[-1] = {p.target_type}
    if not chain_ok:
        return
    depth = len(p.edge_sequence)
    # predicates
    for i, pred in enumerate(p.predicates):
        k = depth if pred.on == "target" else int(pred.on)
        if k > depth:
            yield _err(
                n,
                f"predicates[{i}].on",
                f"hop index {k} is beyond the walk's {depth} hops",
                f"use 0..{depth} or 'target'",
            )
            continue
        specs = [
            schema.label_map[lab].props[pred.property]
            for lab in sorted(possible[k])
            if pred.property in schema.label_map[lab].props
        ]
        if not specs:
            yield _err(
                n,
                f"predicates[{i}].property",
                f"property {pred.property!r} is not declared on {sorted(possible[k])}",
                "use a declared property of the node at that hop",
            )
            continue
        ptype = specs[0].type
        if ptype in ("list[str]", "json") and pred.op not in ("eq", "in", "exists"):
            yield _err(
                n,
                f"predicates[{i}].op",
                f"op {pred.op!r} on a {ptype} property",
                "use eq/in (any element) or exists",
            )
        elif ptype == "bool" and pred.op in ("lt", "lte", "gt", "gte"):
            yield _err(n, f"predicates[{i}].op", f"range op {pred.op!r} on a bool property", "use eq or ne")
        if pred.value is not None:
            problem = _value_type_ok(pred.value, "str" if ptype == "list[str]" else ptype, pred.op)
            if problem:
                yield _err(n, f"predicates[{i}].value", problem, f"give a value of type {ptype}")
    target = schema.label_map[p.target_type]
    for i, ob in enumerate(p.order_by):
        spec = target.props.get(ob.property)
        if spec is None:
            yield _err(
                n,
                f"order_by[{i}].property",
                f"{ob.property!r} is not declared on {p.target_type}",
                "order by a declared property",
            )
        elif spec.type in ("list[str]", "json"):
            yield _err(
                n,
                f"order_by[{i}].property",
                f"cannot order by a {spec.type} property",
                "order by a scalar property",
            )
    for i, prop in enumerate(p.returns):
        if prop not in target.props:
            yield _err(
                n,
                f"returns[{i}]",
                f"{prop!r} is not declared on {p.target_type}",
                "return declared properties only",
            )
    for i, prop in enumerate(p.pii_allowed):
        if prop not in target.props:
            yield _err(
                n,
                f"pii_allowed[{i}]",
                f"{prop!r} is not declared on {p.target_type}",
                "list properties of the target",
            )
    pii = schema.pii_properties(p.target_type)
    leaked = sorted((set(p.returns) & pii) - set(p.pii_allowed))
    if leaked:
        yield PIIError(
            n,
            "returns",
            f"returns PII properties {leaked} of {p.target_type} without declaring them",
            f"add {leaked} to pii_allowed (after review) or stop returning them",
        )
    if (
        goal is not None
        and goal.sections
        and p.section is not None
        and p.section not in {s.name for s in goal.sections}
    ):
        yield _err(
            n,
            "section",
            f"section {p.section!r} is not a section of goal {goal.name}",
            f"use one of {[s.name for s in goal.sections]}",
        )


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
    for err in _pattern_errors(p, schema, goal):
        raise err
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


def gate_write(
    schema: GraphSchema,
    goals: Iterable[GoalType],
    patterns: Iterable[Mapping[str, Any] | TraversalPattern],
    stored: Iterable[TraversalPattern] = (),
) -> list[TraversalPattern]:
    """The full harness for one metagraph write. Returns the parsed patterns; raises the first error."""
    goal_map = {g.name: g for g in goals}
    parsed: list[TraversalPattern] = []
    for data in patterns:
        p = parse_pattern(data)
        goal = goal_map.get(p.goal)
        validate_pattern(p, schema, goal)
        parsed.append(p)
    check_conflicts(parsed, stored)
    all_patterns = {p.name: p for p in stored}
    all_patterns.update({p.name: p for p in parsed})
    for g in goal_map.values():
        validate_goal(g, all_patterns.values())
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
    """Re-validate every stored pattern against ``schema`` (default: the store's). Returns the
    errors by pattern name, only for patterns with errors (an empty dict = all valid)."""
    schema = schema or store.schema
    goals = {g.name: g for g in store.goal_types()}
    out: dict[str, list[PatternValidationError]] = {}
    for p in store.patterns():
        errs = list(_pattern_errors(p, schema, goals.get(p.goal)))
        if errs:
            out[p.name] = errs
    return out
