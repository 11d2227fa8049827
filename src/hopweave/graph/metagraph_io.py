"""Metagraph files -> gates -> graph nodes.

Goal files (``<pack>/goals/*.yaml``)::

    goal:      {name, description, examples, version, sections, ranking_profile, ...}
    defaults:  {author, created_at, version, budget_ms, ...}   # merged into every pattern
    patterns:  [{name, sub_question, seed, edge_sequence, target_type, predicates, ...}, ...]

A pattern's ``goal`` defaults to the file's goal. Value shorthand: a plain scalar (or list) where
a ValueRef is expected is a literal; ``{bind: session.customer_id, default: x}``,
``{relative: -24, unit: months}`` and ``{as_of_year: 0}`` are the other kinds (the long form
``{kind: ..., ...}`` works too).

The one sanctioned path for metagraph writes: :func:`gated_items` gates goals and patterns and
returns GatedNode items (for a bulk load), :func:`write_metagraph` gates and writes them to a
store (``(:GoalType)-[:HAS_PATTERN]->(:TraversalPattern)`` as tenant ``_global``). Every store
refuses a GoalType / TraversalPattern / FilterMapping node that is not a GatedNode
(MetagraphWriteError, see ``write_rules``). At query time patterns are read from the graph
(``GraphStore.patterns()``), never from these files; :func:`decode_definitions` reads them
skipping (and reporting) nodes whose definition does not parse.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, TypeVar

from pydantic import ValidationError

from hopweave.errors import HopweaveError, InputError, PatternValidationError
from hopweave.fileio import read_yaml
from hopweave.graph.base import Edge, GraphStore, Node
from hopweave.graph.gates import gate_write, labels_used
from hopweave.graph.write_rules import GatedNode
from hopweave.models.common import to_datetime
from hopweave.models.instants import format_datetime
from hopweave.models.keys import with_key_hints
from hopweave.models.metagraph import (
    GoalType,
    TraversalPattern,
    goal_node_id,
    pattern_node_id,
    to_json,
)
from hopweave.models.schema import DOMAIN_PROPERTY, GLOBAL_TENANT, GraphSchema


def _value(v: Any) -> Any:
    if isinstance(v, Mapping):
        if "kind" in v:
            return dict(v)
        if "bind" in v:
            return {"kind": "bind", "ref": v["bind"], "default": v.get("default")}
        if "relative" in v:
            return {
                "kind": "relative",
                "amount": v["relative"],
                "unit": v.get("unit", "days"),
                "start_of": v.get("start_of"),
            }
        if "as_of_year" in v:
            return {"kind": "as_of_year", "offset": v["as_of_year"] or 0}
        return dict(v)
    if isinstance(v, list):
        return {"kind": "literal", "value": tuple(v)}
    return {"kind": "literal", "value": v}


def expand_pattern(raw: Mapping[str, Any], goal: str, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Apply file defaults, the file's goal and value shorthands to one raw pattern mapping."""
    data: dict[str, Any] = {**defaults, **raw}
    data.setdefault("goal", goal)
    seed = data.get("seed")
    if isinstance(seed, Mapping) and "value" in seed:
        data["seed"] = {**seed, "value": _value(seed["value"])}
    preds = []
    for pred in data.get("predicates") or ():
        if isinstance(pred, Mapping) and True in pred:
            # YAML 1.1 reads an unquoted `on:` key as the boolean True.
            pred = {("on" if k is True else k): v for k, v in pred.items()}
        if isinstance(pred, Mapping) and pred.get("value") is not None:
            pred = {**pred, "value": _value(pred["value"])}
        preds.append(pred)
    if preds:
        data["predicates"] = preds
    if "depth" not in data and isinstance(data.get("edge_sequence"), list):
        data["depth"] = len(data["edge_sequence"])
    return data


def read_goal_file(path: str | Path) -> tuple[GoalType, list[dict[str, Any]]]:
    """Parse one goal file into its GoalType and raw (expanded, not yet gated) pattern dicts."""
    p = Path(path)
    return parse_goal_doc(read_yaml(p, "goal file"), p)


def parse_goal_doc(doc: Any, p: str | Path) -> tuple[GoalType, list[dict[str, Any]]]:
    """A parsed goal file (``doc``, read from ``p``) as its GoalType and raw pattern dicts.
    Raises InputError (not a goal mapping, malformed patterns) or PatternValidationError (the
    goal mapping)."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("goal"), Mapping):
        raise InputError(f"goal file {p} needs a top-level 'goal' mapping (and 'patterns')")
    try:
        goal = GoalType.model_validate(doc["goal"])
    except Exception as exc:  # pydantic ValidationError or UnsafeIdentifierError
        raise PatternValidationError(
            str(doc["goal"].get("name", Path(p).stem)),
            "goal",
            f"invalid GoalType in {p}: {with_key_hints(exc, GoalType)}",
            "fix the goal mapping",
        ) from None
    defaults = doc.get("defaults") or {}
    patterns = doc.get("patterns") or []
    if not isinstance(defaults, Mapping):
        raise InputError(f"goal file {p}: `defaults` must be a mapping of pattern keys")
    if not isinstance(patterns, list) or not all(isinstance(r, Mapping) for r in patterns):
        raise InputError(f"goal file {p}: `patterns` must be a list of pattern mappings")
    raws = [expand_pattern(r, goal.name, defaults) for r in patterns]
    return goal, raws


def load_goal_files(directory: str | Path) -> tuple[list[GoalType], list[dict[str, Any]]]:
    """Read every ``*.yaml`` of ``directory`` (a pack's ``goals/``), by file name."""
    d = Path(directory)
    if not d.is_dir():
        raise InputError(f"goal directory {d} does not exist")
    goals: list[GoalType] = []
    raws: list[dict[str, Any]] = []
    for f in sorted(d.glob("*.yaml")):
        g, r = read_goal_file(f)
        goals.append(g)
        raws.extend(r)
    return goals, raws


def _time(dt: Any) -> str | None:
    t = to_datetime(dt)
    return format_datetime(t) if t else None


def pattern_node(p: TraversalPattern) -> Node:
    return Node(
        id=pattern_node_id(p.name),
        label="TraversalPattern",
        props={
            "name": p.name,
            "goal": p.goal,
            "sub_question": p.sub_question,
            "seed_type": p.seed.type,
            "edge_types": [s.type for s in p.edge_sequence],
            "labels_used": labels_used(p),
            "target_type": p.target_type,
            "depth": p.depth,
            "budget_ms": p.budget_ms,
            "version": p.version,
            "author": p.author,
            "created_at": _time(p.created_at),
            "definition_hash": p.definition_hash(),
            "status": p.status,
            "definition": to_json(p),
        },
    )


def goal_node(g: GoalType) -> Node:
    return Node(
        id=goal_node_id(g.name),
        label="GoalType",
        props={
            "name": g.name,
            "description": g.description,
            "examples": list(g.examples),
            "version": g.version,
            "definition": to_json(g),
        },
    )


def gated_items(
    schema: GraphSchema,
    goals: Iterable[GoalType],
    patterns: Iterable[Mapping[str, Any] | TraversalPattern],
    *,
    stored: Iterable[TraversalPattern] = (),
    stored_goals: Iterable[GoalType] = (),
    domain: str | None = None,
) -> tuple[list[Node | Edge], list[TraversalPattern]]:
    """THE sanctioned way to make metagraph nodes: gate ``patterns`` (with ``goals``, or the
    ``stored_goals`` for patterns of goals not written now) and return ``(items, parsed)``:
    GatedNode GoalType / TraversalPattern nodes (tagged with ``domain`` when given) and their
    HAS_PATTERN edges, to write as tenant ``_global`` with ``GraphStore.write`` or a bulk load.
    A raw Node of those labels is refused by every store. Raises the first gate error
    (PatternValidationError and subclasses); nothing is returned then."""
    goals, stored_goals = list(goals), list(stored_goals)
    parsed = gate_write(schema, goals, patterns, stored, stored_goals)
    missing = {p.goal for p in parsed} - {g.name for g in goals} - {g.name for g in stored_goals}
    if missing:
        name = sorted(missing)[0]
        raise PatternValidationError(
            name, "goal", f"goal {name!r} is neither written nor stored", "write its GoalType together with its patterns"
        )
    tag = {DOMAIN_PROPERTY: domain} if domain else {}
    items: list[Node | Edge] = [
        GatedNode(n.id, n.label, {**n.props, **tag})
        for n in [goal_node(g) for g in goals] + [pattern_node(p) for p in parsed]
    ]
    items += [Edge(goal_node_id(p.goal), pattern_node_id(p.name), "HAS_PATTERN") for p in parsed]
    return items, parsed


def write_metagraph(
    store: GraphStore,
    goals: Iterable[GoalType],
    patterns: Iterable[Mapping[str, Any] | TraversalPattern],
    *,
    domain: str | None = None,
) -> dict[str, Any]:
    """Gate and write goal types and patterns into ``store`` (tenant ``_global``) in one write,
    checked against what is stored (conflicts, version bumps, the stored goals' PII grants).

    Returns ``{"goals": n, "patterns": n, "unchanged": n, "revision": ...}``. Raises the first
    gate error (PatternValidationError and subclasses); nothing is written then."""
    stored = store.patterns()
    items, parsed = gated_items(
        store.schema, goals, patterns, stored=stored, stored_goals=store.goal_types(), domain=domain
    )
    stored_by = {p.name: p for p in stored}
    unchanged = sum(1 for p in parsed if p.name in stored_by and to_json(stored_by[p.name]) == to_json(p))
    store.write(GLOBAL_TENANT, [i for i in items if isinstance(i, Node)], [i for i in items if isinstance(i, Edge)])
    return {
        "goals": sum(1 for i in items if isinstance(i, Node) and i.label == "GoalType"),
        "patterns": len(parsed),
        "unchanged": unchanged,
        "revision": store.metagraph_revision(),
    }


@dataclass(frozen=True)
class MetagraphProblem:
    """A stored metagraph node skipped on read: its id, name (if readable) and why."""

    node_id: str
    name: str
    reason: str


M = TypeVar("M", GoalType, TraversalPattern)


def decode_definitions(
    model: type[M], rows: Iterable[tuple[str, Any, Any]]
) -> tuple[list[M], list[MetagraphProblem]]:
    """Parse stored ``(node id, name, definition JSON)`` rows into ``model`` instances; a row
    that does not parse is skipped and reported (never raised: one bad stored pattern must not
    break every request). Returns (models, problems), both in row order."""
    out: list[M] = []
    problems: list[MetagraphProblem] = []
    for nid, name, definition in rows:
        try:
            out.append(model.model_validate_json(definition))
        except (ValidationError, ValueError, TypeError, HopweaveError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            problems.append(MetagraphProblem(nid, str(name or nid), f"{model.__name__} definition does not parse: {reason}"))
    return out, problems


def load_metagraph(store: GraphStore, directory: str | Path) -> dict[str, Any]:
    """Read the goal files of ``directory`` (a pack's ``goals/``) and :func:`write_metagraph` them."""
    goals, raws = load_goal_files(directory)
    return write_metagraph(store, goals, raws)
