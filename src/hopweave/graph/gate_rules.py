"""The per-pattern gate rules, as a table of small named functions (run by ``gates``).

Each rule takes a :class:`RuleContext` (the parsed pattern, the schema, the pattern's GoalType if
known, and what earlier rules learned) and returns its problems as PatternValidationError
instances (PIIError for the PII rules); an empty list means the rule passes. :data:`RULES` runs
them in order; a rule marked ``stops`` ends the run when it found a problem (later rules need what
it checks: the seed label, the edge chain, the target label).

**PII rule** (data-driven grants): a PII property (``pii: true`` in the schema) may be returned,
filtered on (a predicate, or the seed key) or ordered by only when the pattern's GoalType lists
it in ``pii_grants`` as ``Label.property``. The grant belongs to the goal's owner (the goal file /
pack), never to the pattern: a pattern's ``pii_allowed`` is its request, and every entry must be
granted by its goal (a pattern without a known goal gets no grant). A predicate on a PII property
is an oracle ("does this customer have this email?") even when the value is never returned, so it
needs the same grant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from hopweave.errors import PatternValidationError, PIIError
from hopweave.models.metagraph import AsOfYear, Bind, GoalType, Literal_, RelativeTime, TraversalPattern
from hopweave.models.schema import GraphSchema

#: Upper bounds a pattern may declare (a pattern is a safety rail, not a full scan).
BOUNDS = {"budget_ms": 2_000, "max_visited": 1_000_000, "limit": 1_000, "depth": 6}

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")

Problems = list[PatternValidationError]


def err(name: str, field: str, problem: str, fix: str) -> PatternValidationError:
    return PatternValidationError(name, field, problem, fix)


@dataclass
class RuleContext:
    """What the rules read; ``possible`` (labels per walk position) is filled by the chain rule."""

    p: TraversalPattern
    schema: GraphSchema
    goal: GoalType | None
    possible: list[set[str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.p.name

    def granted(self, label: str, prop: str) -> bool:
        """True when the pattern's goal grants PII property ``label.prop``."""
        return self.goal is not None and f"{label}.{prop}" in getattr(self.goal, "pii_grants", ())


# ---- header rules -----------------------------------------------------------------------------
def rule_goal(c: RuleContext) -> Problems:
    if c.goal is not None and c.p.goal != c.goal.name:
        return [err(c.name, "goal", f"pattern belongs to goal {c.p.goal!r}, written under {c.goal.name!r}",
                    "set goal to the GoalType's name")]
    return []


def rule_seed_type(c: RuleContext) -> Problems:
    if c.p.seed.type not in c.schema.label_map:
        return [err(c.name, "seed.type", f"label {c.p.seed.type!r} is not in schema {c.schema.version}",
                    f"use one of {sorted(c.schema.label_map)}")]
    return []


def rule_seed_key(c: RuleContext) -> Problems:
    if c.p.seed.key not in c.schema.label_map[c.p.seed.type].props:
        return [err(c.name, "seed.key", f"property {c.p.seed.key!r} is not declared on {c.p.seed.type}",
                    "use a declared property (usually id or name)")]
    return []


def rule_depth(c: RuleContext) -> Problems:
    n = len(c.p.edge_sequence)
    if c.p.depth != n:
        return [err(c.name, "depth", f"depth {c.p.depth} != {n} edges", f"set depth to {n}")]
    return []


def rule_bounds(c: RuleContext) -> Problems:
    out: Problems = []
    for key, bound in BOUNDS.items():
        value = len(c.p.edge_sequence) if key == "depth" else getattr(c.p, key)
        if value > bound:
            out.append(err(c.name, key, f"{key} {value} exceeds the bound {bound}", f"lower {key} to at most {bound}"))
    return out


def rule_author(c: RuleContext) -> Problems:
    return [] if c.p.author.strip() else [err(c.name, "author", "author is blank", "name the pattern's author")]


def rule_via_count(c: RuleContext) -> Problems:
    inner = len(c.p.edge_sequence) - 1
    if len(c.p.via_types) > max(inner, 0):
        return [err(c.name, "via_types", f"{len(c.p.via_types)} via types for {inner} intermediate nodes",
                    "give at most one via type per intermediate node (depth - 1)")]
    return []


# ---- the edge chain ---------------------------------------------------------------------------
def labels_after(schema: GraphSchema, prev: set[str], rel_name: str, direction: str) -> tuple[set[str], set[str]]:
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


def _via_problem(c: RuleContext, i: int, nxt: set[str], step_desc: str) -> PatternValidationError | None:
    via = c.p.via_types[i]
    if via not in c.schema.label_map:
        return err(c.name, f"via_types[{i}]", f"label {via!r} is not in the schema", "use a declared label or null")
    if via not in nxt:
        return err(c.name, f"via_types[{i}]", f"{via} cannot be reached by {step_desc}; reachable: {sorted(nxt)}",
                   "use a reachable label or null")
    return None


def rule_chain(c: RuleContext) -> Problems:
    """Each edge fits the labels the previous node can have; via types fit. Fills c.possible."""
    c.possible = [{c.p.seed.type}]
    last = len(c.p.edge_sequence) - 1
    for i, step in enumerate(c.p.edge_sequence):
        if step.type not in c.schema.rel_map:
            return [err(c.name, f"edge_sequence[{i}].type",
                        f"relationship type {step.type!r} is not in schema {c.schema.version}",
                        f"use one of {sorted(c.schema.rel_map)} (or update the schema)")]
        prev = c.possible[-1]
        accepts, nxt = labels_after(c.schema, prev, step.type, step.direction)
        if not prev & accepts:
            return [err(c.name, f"edge_sequence[{i}]",
                        f"{step.type} ({step.direction}) cannot follow a node labelled {sorted(prev)}; "
                        f"that end of {step.type} takes {sorted(accepts)}", "fix the edge order, type or direction")]
        via = c.p.via_types[i] if i < len(c.p.via_types) else None
        if i < last and via is not None:
            problem = _via_problem(c, i, nxt, f"{step.type} ({step.direction})")
            if problem is not None:
                return [problem]
            nxt = {via}
        c.possible.append(nxt)
    return []


def rule_target(c: RuleContext) -> Problems:
    t = c.p.target_type
    if t not in c.schema.label_map:
        return [err(c.name, "target_type", f"label {t!r} is not in the schema", f"use one of {sorted(c.schema.label_map)}")]
    if t not in c.possible[-1]:
        return [err(c.name, "target_type", f"{t} is not reachable by the last edge; reachable: {sorted(c.possible[-1])}",
                    "change target_type or the last edge")]
    c.possible[-1] = {t}
    return []


# ---- predicates -------------------------------------------------------------------------------
def value_type_problem(ref: Any, prop_type: str, op: str) -> str | None:
    """None if a ValueRef fits the property type, else the problem."""
    if isinstance(ref, Bind):
        return None
    if isinstance(ref, RelativeTime):
        ok = prop_type in ("date", "datetime")
        return None if ok else f"a relative time needs a date/datetime property, not {prop_type}"
    if isinstance(ref, AsOfYear):
        return None if prop_type == "int" else f"as_of_year needs an int property, not {prop_type}"
    if isinstance(ref, Literal_):
        if isinstance(ref.value, tuple) and op != "in":
            return f"a list value needs op 'in', not {op!r}"
        for v in ref.value if isinstance(ref.value, tuple) else (ref.value,):
            if not _literal_fits(v, prop_type):
                return f"value {v!r} does not fit property type {prop_type}"
    return None


def _literal_fits(v: Any, prop_type: str) -> bool:
    checks: dict[str, Callable[[Any], bool]] = {
        "str": lambda x: isinstance(x, str),
        "int": lambda x: isinstance(x, int) and not isinstance(x, bool),
        "float": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool),
        "bool": lambda x: isinstance(x, bool),
        "date": lambda x: isinstance(x, str) and bool(_DATE_RE.match(x)),
        "datetime": lambda x: isinstance(x, str) and bool(_DATETIME_RE.match(x)),
    }
    check = checks.get(prop_type)
    return bool(check and check(v))


def _hop(c: RuleContext, on: Any) -> int:
    return len(c.p.edge_sequence) if on == "target" else int(on)


def _predicate_problems(c: RuleContext, i: int) -> Problems:
    pred, depth = c.p.predicates[i], len(c.p.edge_sequence)
    k = _hop(c, pred.on)
    if k > depth:
        return [err(c.name, f"predicates[{i}].on", f"hop index {k} is beyond the walk's {depth} hops",
                    f"use 0..{depth} or 'target'")]
    labels = c.possible[k]
    specs = [c.schema.label_map[lab].props[pred.property] for lab in sorted(labels)
             if pred.property in c.schema.label_map[lab].props]
    if not specs:
        return [err(c.name, f"predicates[{i}].property", f"property {pred.property!r} is not declared on {sorted(labels)}",
                    "use a declared property of the node at that hop")]
    ptype, out = specs[0].type, []
    if ptype in ("list[str]", "json") and pred.op not in ("eq", "in", "exists"):
        out.append(err(c.name, f"predicates[{i}].op", f"op {pred.op!r} on a {ptype} property", "use eq/in (any element) or exists"))
    elif ptype == "bool" and pred.op in ("lt", "lte", "gt", "gte"):
        out.append(err(c.name, f"predicates[{i}].op", f"range op {pred.op!r} on a bool property", "use eq or ne"))
    if pred.value is not None:
        problem = value_type_problem(pred.value, "str" if ptype == "list[str]" else ptype, pred.op)
        if problem:
            out.append(err(c.name, f"predicates[{i}].value", problem, f"give a value of type {ptype}"))
    return out


def rule_predicates(c: RuleContext) -> Problems:
    return [e for i in range(len(c.p.predicates)) for e in _predicate_problems(c, i)]


# ---- the target's properties --------------------------------------------------------------------
def rule_order_by(c: RuleContext) -> Problems:
    target, out = c.schema.label_map[c.p.target_type], []
    for i, ob in enumerate(c.p.order_by):
        spec = target.props.get(ob.property)
        if spec is None:
            out.append(err(c.name, f"order_by[{i}].property", f"{ob.property!r} is not declared on {c.p.target_type}",
                           "order by a declared property"))
        elif spec.type in ("list[str]", "json"):
            out.append(err(c.name, f"order_by[{i}].property", f"cannot order by a {spec.type} property",
                           "order by a scalar property"))
    return out


def _declared(c: RuleContext, key: str, fix: str) -> Problems:
    target = c.schema.label_map[c.p.target_type]
    return [err(c.name, f"{key}[{i}]", f"{prop!r} is not declared on {c.p.target_type}", fix)
            for i, prop in enumerate(getattr(c.p, key)) if prop not in target.props]


def rule_returns_declared(c: RuleContext) -> Problems:
    return _declared(c, "returns", "return declared properties only")


def rule_pii_allowed_declared(c: RuleContext) -> Problems:
    return _declared(c, "pii_allowed", "list properties of the target")


# ---- PII ----------------------------------------------------------------------------------------
def _grant_fix(label: str, prop: str) -> str:
    return f"have the goal's owner add '{label}.{prop}' to the GoalType's pii_grants (after review), or drop it"


def rule_pii_returns(c: RuleContext) -> Problems:
    """Returning a PII property needs it in pii_allowed (the pattern's explicit request)."""
    pii = c.schema.pii_properties(c.p.target_type)
    leaked = sorted((set(c.p.returns) & pii) - set(c.p.pii_allowed))
    if leaked:
        return [PIIError(c.name, "returns", f"returns PII properties {leaked} of {c.p.target_type} without declaring them",
                         f"add {leaked} to pii_allowed (after review) or stop returning them")]
    return []


def rule_pii_grants(c: RuleContext) -> Problems:
    """Every pii_allowed entry must be granted by the goal: a pattern cannot grant itself PII."""
    t = c.p.target_type
    return [PIIError(c.name, f"pii_allowed[{i}]",
                     f"the pattern grants itself PII property {t}.{prop}; goal "
                     f"{c.goal.name if c.goal else c.p.goal!r} does not grant it", _grant_fix(t, prop))
            for i, prop in enumerate(c.p.pii_allowed) if not c.granted(t, prop)]


def _pii_labels(c: RuleContext, labels: set[str], prop: str) -> list[str]:
    """Labels among ``labels`` on which ``prop`` is PII and not granted."""
    return sorted(lab for lab in labels
                  if lab in c.schema.label_map and prop in c.schema.pii_properties(lab) and not c.granted(lab, prop))


def rule_pii_predicates(c: RuleContext) -> Problems:
    """A predicate (or the seed key) on a PII property is an oracle: it needs a grant too."""
    out: Problems = []
    seed_pii = _pii_labels(c, {c.p.seed.type}, c.p.seed.key)
    if seed_pii:
        out.append(PIIError(c.name, "seed.key", f"the seed is looked up by PII property {c.p.seed.type}.{c.p.seed.key}",
                            _grant_fix(c.p.seed.type, c.p.seed.key)))
    for i, pred in enumerate(c.p.predicates):
        k = _hop(c, pred.on)
        if k >= len(c.possible):
            continue
        labels = _pii_labels(c, c.possible[k], pred.property)
        if labels:
            out.append(PIIError(c.name, f"predicates[{i}].property",
                                f"a predicate on PII property {labels[0]}.{pred.property} tells its value",
                                _grant_fix(labels[0], pred.property)))
    return out


def rule_pii_order_by(c: RuleContext) -> Problems:
    t = c.p.target_type
    return [PIIError(c.name, f"order_by[{i}].property", f"ordering by PII property {t}.{ob.property} leaks its value",
                     _grant_fix(t, ob.property))
            for i, ob in enumerate(c.p.order_by) if _pii_labels(c, {t}, ob.property)]


def rule_section(c: RuleContext) -> Problems:
    g, s = c.goal, c.p.section
    if g is not None and g.sections and s is not None and s not in {x.name for x in g.sections}:
        return [err(c.name, "section", f"section {s!r} is not a section of goal {g.name}",
                    f"use one of {[x.name for x in g.sections]}")]
    return []


Rule = Callable[[RuleContext], Problems]

#: The per-pattern gates, in order: (rule, stops the run when it found a problem).
RULES: tuple[tuple[Rule, bool], ...] = (
    (rule_goal, False),
    (rule_seed_type, True),
    (rule_seed_key, False),
    (rule_depth, False),
    (rule_bounds, False),
    (rule_author, False),
    (rule_via_count, False),
    (rule_chain, True),
    (rule_target, True),
    (rule_predicates, False),
    (rule_order_by, False),
    (rule_returns_declared, False),
    (rule_pii_allowed_declared, False),
    (rule_pii_returns, False),
    (rule_pii_grants, False),
    (rule_pii_predicates, False),
    (rule_pii_order_by, False),
    (rule_section, False),
)


def run_rules(p: TraversalPattern, schema: GraphSchema, goal: GoalType | None,
              skip: frozenset[str] = frozenset()) -> Problems:
    """Every problem the :data:`RULES` find, in rule order (rules named in ``skip`` are not run)."""
    ctx, out = RuleContext(p, schema, goal), []
    for rule, stops in RULES:
        if rule.__name__ in skip:
            continue
        found = rule(ctx)
        out.extend(found)
        if found and stops:
            break
    return out
