"""Consolidation: heuristics mined from decided traces, proposed, then reviewed.

:func:`mine` takes decided cases (the kept case facts and the outcome of each decided trace of a
goal) and grows one decision tree, deterministically:

- a node is split while its majority outcome's share is below ``purity``, it holds at least
  ``2 * min_support`` cases and it is shallower than ``max_depth``; the split is the condition
  with the largest entropy reduction whose two sides each hold at least ``min_support`` cases
  (numeric facts: ``fact <= v`` / ``fact > v`` at every observed value; other facts: ``fact == v``
  / ``fact != v``); ties break by fact name, then operator, then value;
- every leaf whose majority share (``confidence``) is at least ``min_confidence`` and whose case
  count (``support``) is at least ``min_support`` becomes a candidate; its conditions are tightened
  (one bound per fact and side) and then generalized: a condition is dropped (facts in name order)
  when the rule without it keeps at least its confidence minus ``tolerance`` over all cases;
- identical rules are merged; support, confidence and evidence (the decided trace ids) are counted
  over all cases for the final conditions. The result is sorted by outcome, then conditions.

:func:`propose` writes each mined heuristic as a ``:Heuristic {status: "proposed", enabled:
false}`` (id ``HEUR_<hash of goal, conditions and outcome>``) with ``MINED_FROM`` edges to its
evidence, through the store's schema-validated write; a heuristic already reviewed keeps its
status. :func:`review` approves (``enabled: true``, ``HAS_HEURISTIC`` from the goal's case states,
so the Procedure section's heuristic pattern sees it from the approval instant on) or rejects
one, recording who and when. Same traces, same settings => the same heuristics, ids and bytes.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from hopweave.errors import InputError, NotFoundError
from hopweave.graph.base import Edge, GraphStore, Node
from hopweave.models.common import check_tenant, to_datetime
from hopweave.models.filters import parse_filter
from hopweave.models.metagraph import GoalType

__all__ = ["Condition", "DecidedCase", "MinedHeuristic", "decided_cases", "heuristic_id", "mine", "propose",
           "proposals", "review", "DEFAULT_MIN_SUPPORT", "DEFAULT_MIN_CONFIDENCE"]

#: Defaults of :func:`mine`.
DEFAULT_MIN_SUPPORT = 20
DEFAULT_MIN_CONFIDENCE = 0.8
DEFAULT_PURITY = 0.9
DEFAULT_MAX_DEPTH = 4
DEFAULT_TOLERANCE = 0.02
#: Evidence ids stored on a heuristic node (the MINED_FROM edges hold them all).
MAX_EVIDENCE_PROP = 200
DECIDED_KINDS_EXCLUDED = ("retrieval", "outcome_version")
PROPOSER = "hopweave consolidate"

Op = Literal["==", "!=", "<=", ">"]


@dataclass(frozen=True, order=True)
class Condition:
    """``fact op value`` over a decided case's kept facts."""

    fact: str
    op: str
    value: Any

    def holds(self, facts: Mapping[str, Any]) -> bool:
        """Whether ``facts`` satisfy the condition (a missing fact never does)."""
        v = facts.get(self.fact)
        if v is None:
            return False
        if self.op == "==":
            return bool(v == self.value)
        if self.op == "!=":
            return bool(v != self.value)
        if not _numeric(v):
            return False
        return bool(v <= self.value) if self.op == "<=" else bool(v > self.value)

    def text(self) -> str:
        return f"{self.fact} {self.op} {json.dumps(self.value) if isinstance(self.value, str) else self.value}"

    def key(self) -> tuple[str, str, str]:
        return (self.fact, self.op, json.dumps(self.value, sort_keys=True))


@dataclass(frozen=True)
class DecidedCase:
    """One decided trace: its id, kept facts and outcome."""

    trace_id: str
    facts: Mapping[str, Any]
    outcome: str
    decided_at: datetime | None = None


class MinedHeuristic(BaseModel):
    """A mined rule: conditions -> outcome, with support (cases), confidence and evidence."""

    model_config = ConfigDict(frozen=True)

    goal: str
    conditions: tuple[tuple[str, str, Any], ...]
    outcome: str
    support: int
    confidence: float
    evidence: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return heuristic_id(self.goal, self.conditions, self.outcome)

    def text(self) -> str:
        conds = " and ".join(Condition(*c).text() for c in self.conditions) or "always"
        return f"If {conds} then {self.outcome}"

    def covers(self, facts: Mapping[str, Any]) -> bool:
        return all(Condition(*c).holds(facts) for c in self.conditions)


def heuristic_id(goal: str, conditions: Iterable[tuple[str, str, Any]], outcome: str) -> str:
    """The proposal's node id (deterministic from goal, conditions and outcome)."""
    blob = json.dumps([goal, [list(c) for c in conditions], outcome], sort_keys=True, default=str)
    return "HEUR_" + hashlib.sha256(blob.encode()).hexdigest()[:16]


def _numeric(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _entropy(counts: Mapping[str, int]) -> float:
    n = sum(counts.values())
    return -sum((c / n) * math.log2(c / n) for c in counts.values() if c) if n else 0.0


def _counts(cases: Sequence[DecidedCase]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in cases:
        out[c.outcome] = out.get(c.outcome, 0) + 1
    return out


def _majority(cases: Sequence[DecidedCase]) -> tuple[str, float]:
    counts = _counts(cases)
    best = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    return best[0], best[1] / len(cases)


def _splits(cases: Sequence[DecidedCase], facts: Sequence[str]) -> Iterable[tuple[Condition, Condition]]:
    for f in facts:
        values: set[Any] = {c.facts.get(f) for c in cases} - {None}
        if len(values) < 2:
            continue
        if all(_numeric(v) for v in values):
            for v in sorted(values)[:-1]:
                yield Condition(f, "<=", v), Condition(f, ">", v)
        else:
            for v in sorted(values, key=lambda x: json.dumps(x, sort_keys=True)):
                yield Condition(f, "==", v), Condition(f, "!=", v)


def _grow(cases: Sequence[DecidedCase], facts: Sequence[str], conds: list[Condition], depth: int,
          min_support: int, purity: float, max_depth: int, out: list[list[Condition]]) -> None:
    _, share = _majority(cases)
    if share >= purity or len(cases) < 2 * min_support or depth >= max_depth:
        out.append(conds)
        return
    base = _entropy(_counts(cases))
    best: tuple[float, tuple[str, str, str], Condition, Condition] | None = None
    n = len(cases)
    for left, right in _splits(cases, facts):
        lc = [c for c in cases if left.holds(c.facts)]
        rc = [c for c in cases if right.holds(c.facts)]
        if len(lc) < min_support or len(rc) < min_support:
            continue
        gain = round(base - (len(lc) / n) * _entropy(_counts(lc)) - (len(rc) / n) * _entropy(_counts(rc)), 12)
        if gain <= 1e-9:
            continue
        if best is None or gain > best[0] or (gain == best[0] and left.key() < best[1]):
            best = (gain, left.key(), left, right)
    if best is None:
        out.append(conds)
        return
    _, _, left, right = best
    _grow([c for c in cases if left.holds(c.facts)], facts, [*conds, left], depth + 1, min_support, purity,
          max_depth, out)
    _grow([c for c in cases if right.holds(c.facts)], facts, [*conds, right], depth + 1, min_support, purity,
          max_depth, out)


def _tighten(conds: Sequence[Condition]) -> list[Condition]:
    """One condition per fact and side: the tightest ``<=`` and ``>`` bound, every ``==`` / ``!=``
    (an ``==`` makes the fact's ``!=`` conditions redundant)."""
    out: list[Condition] = []
    by_fact: dict[str, list[Condition]] = {}
    for c in conds:
        by_fact.setdefault(c.fact, []).append(c)
    for f in sorted(by_fact):
        cs = by_fact[f]
        le = [c.value for c in cs if c.op == "<="]
        gt = [c.value for c in cs if c.op == ">"]
        eq = sorted({c.key(): c for c in cs if c.op == "=="}.values())
        if le:
            out.append(Condition(f, "<=", min(le)))
        if gt:
            out.append(Condition(f, ">", max(gt)))
        out += eq
        if not eq:
            out += sorted({c.key(): c for c in cs if c.op == "!="}.values())
    return out


def _positive(conds: Sequence[Condition], cases: Sequence[DecidedCase]) -> list[Condition]:
    """``fact != v`` conditions that leave one value of the fact (over all ``cases``) as
    ``fact == w`` (the same cases, said the way a reviewer reads it)."""
    out = []
    for c in conds:
        if c.op == "!=":
            left = {json.dumps(k.facts.get(c.fact), sort_keys=True) for k in cases if c.fact in k.facts}
            excluded = {json.dumps(x.value, sort_keys=True) for x in conds if x.fact == c.fact and x.op == "!="}
            rest = sorted(left - excluded)
            if len(rest) == 1:
                out.append(Condition(c.fact, "==", json.loads(rest[0])))
                continue
        out.append(c)
    return _tighten(out)


def _stats(cases: Sequence[DecidedCase], conds: Sequence[Condition], outcome: str) -> tuple[list[DecidedCase], float]:
    covered = [c for c in cases if all(k.holds(c.facts) for k in conds)]
    if not covered:
        return covered, 0.0
    return covered, sum(c.outcome == outcome for c in covered) / len(covered)


def mine(cases: Sequence[DecidedCase], goal: str, facts: Sequence[str], *, min_support: int = DEFAULT_MIN_SUPPORT,
         min_confidence: float = DEFAULT_MIN_CONFIDENCE, purity: float = DEFAULT_PURITY,
         max_depth: int = DEFAULT_MAX_DEPTH, tolerance: float = DEFAULT_TOLERANCE) -> list[MinedHeuristic]:
    """Mine heuristics from ``cases`` over the kept ``facts`` (the module docstring). Raises
    InputError for settings out of range. Returns [] for no cases."""
    if min_support < 1:
        raise InputError(f"min_support must be at least 1, not {min_support}")
    if not 0.0 < min_confidence <= 1.0 or not 0.0 < purity <= 1.0:
        raise InputError("min_confidence and purity must be in (0, 1]")
    if max_depth < 1:
        raise InputError(f"max_depth must be at least 1, not {max_depth}")
    cases = sorted(cases, key=lambda c: c.trace_id)
    if not cases:
        return []
    facts = sorted(set(facts))
    leaves: list[list[Condition]] = []
    _grow(cases, facts, [], 0, min_support, purity, max_depth, leaves)
    found: dict[tuple[Any, ...], MinedHeuristic] = {}
    for leaf in leaves:
        covered, _ = _stats(cases, leaf, "")
        if len(covered) < min_support:
            continue
        outcome, conf = _majority(covered)
        if conf < min_confidence:
            continue
        conds = _positive(_tighten(leaf), cases)
        for c in sorted(conds):
            trial = [k for k in conds if k != c]
            _, trial_conf = _stats(cases, trial, outcome)
            if trial and trial_conf >= max(conf - tolerance, min_confidence):
                conds = trial
        covered, conf = _stats(cases, conds, outcome)
        key = (tuple(c.key() for c in conds), outcome)
        if key in found or len(covered) < min_support:
            continue
        found[key] = MinedHeuristic(
            goal=goal, conditions=tuple((c.fact, c.op, c.value) for c in conds), outcome=outcome,
            support=len(covered), confidence=round(conf, 4),
            evidence=tuple(c.trace_id for c in covered if c.outcome == outcome))
    return [found[k] for k in sorted(found, key=lambda k: (k[1], k[0]))]


# ---- the graph ------------------------------------------------------------------------------
def decided_cases(graph: GraphStore, tenant_id: str, goal: GoalType) -> list[DecidedCase]:
    """The decided traces of ``goal`` in ``tenant_id`` (current outcome, kept facts), by id.
    Raises InputError when the goal declares no outcomes."""
    check_tenant(tenant_id)
    if goal.outcomes is None:
        raise InputError(f"goal {goal.name} declares no outcomes; nothing is decided under it")
    keep = sorted(goal.outcomes.keep)
    where = parse_filter({"op": "eq", "field": "goal", "value": goal.name})
    out = []
    for n in graph.find_nodes(tenant_id, "DecisionTrace", where):
        p = n.props
        if p.get("kind") in DECIDED_KINDS_EXCLUDED or not p.get("retrieval_id") or not p.get("outcome"):
            continue
        out.append(DecidedCase(n.id, {k: p[k] for k in keep if p.get(k) is not None}, str(p["outcome"]),
                               to_datetime(str(p.get("decided_at")))))
    return sorted(out, key=lambda c: c.trace_id)


def _states(graph: GraphStore, tenant_id: str, goal: GoalType) -> list[Node]:
    names = set()
    if goal.case is not None:
        names.add(goal.case.default_state)
        names.update(s.name for s in goal.case.states)
    out = []
    for name in sorted(n for n in names if n):
        out += graph.find_nodes(tenant_id, "CaseState", parse_filter({"op": "eq", "field": "name", "value": name}))
    return out


def propose(graph: GraphStore, write: Any, tenant_id: str, mined: Sequence[MinedHeuristic], *,
            at: datetime) -> list[dict[str, Any]]:
    """Write ``mined`` as proposed heuristics at the instant ``at`` through ``write(tenant, nodes,
    edges)`` (a schema-validated store write). A heuristic already reviewed (approved or rejected)
    keeps its status and review; its support, confidence and evidence are updated. Returns one
    summary per heuristic (id, status, text, support, confidence, evidence count)."""
    nodes: list[Node] = []
    edges: list[Edge] = []
    out = []
    for h in mined:
        current = graph.get_node(tenant_id, h.id)
        status = str(current.props.get("status")) if current is not None else "proposed"
        keep_review = current is not None and status != "proposed"
        text = f"{h.text()} (support {h.support}, confidence {h.confidence:.2f})"
        props: dict[str, Any] = {
            "text": text, "summary": f"Heuristic ({status}, confidence {h.confidence:.2f}): {text}",
            "confidence": h.confidence, "goal": h.goal, "outcome": h.outcome,
            "conditions_json": [list(c) for c in h.conditions], "support": h.support,
            "evidence": list(h.evidence[:MAX_EVIDENCE_PROP]),
        }
        if not keep_review:
            props.update({"status": "proposed", "enabled": False, "proposed_by": PROPOSER, "proposed_at": at,
                          "recorded_at": at})
        nodes.append(Node(h.id, "Heuristic", props))
        edges += [Edge(h.id, t, "MINED_FROM", {"recorded_at": at}) for t in h.evidence]
        out.append({"id": h.id, "status": status, "text": h.text(), "outcome": h.outcome, "support": h.support,
                    "confidence": h.confidence, "evidence": len(h.evidence)})
    if nodes:
        write(tenant_id, nodes, edges)
    return out


def proposals(graph: GraphStore, tenant_id: str, goal: str | None = None,
              status: str | None = None) -> list[dict[str, Any]]:
    """The mined heuristics of ``tenant_id`` (of ``goal`` / with ``status`` when given), by id."""
    check_tenant(tenant_id)
    out = []
    for n in graph.find_nodes(tenant_id, "Heuristic"):
        p = n.props
        if not p.get("proposed_by") or (goal and p.get("goal") != goal) or (status and p.get("status") != status):
            continue
        out.append({"id": n.id, "status": p.get("status"), "goal": p.get("goal"), "outcome": p.get("outcome"),
                    "text": p.get("text"), "support": p.get("support"), "confidence": p.get("confidence"),
                    "evidence": list(p.get("evidence") or ()), "proposed_at": _iso(p.get("proposed_at")),
                    "reviewed_by": p.get("reviewed_by"), "reviewed_at": _iso(p.get("reviewed_at")),
                    "review_note": p.get("review_note")})
    return out


def _iso(v: Any) -> str | None:
    return v.isoformat() if isinstance(v, datetime) else (None if v is None else str(v))


def review(graph: GraphStore, write: Any, tenant_id: str, goals: Mapping[str, GoalType], heuristic_id_: str, *,
           decision: Literal["approve", "reject"], by: str, at: datetime, note: str | None = None) -> dict[str, Any]:
    """Approve or reject the proposal ``heuristic_id_`` as ``by`` at ``at``. Approving enables it
    and links it ``HAS_HEURISTIC`` from its goal's case states (recorded at ``at``). The same
    review again writes nothing: the first reviewer and instant stand, so an approval is never
    moved later (a request at an as_of between the two still sees the heuristic). Returns the
    reviewed proposal. Raises NotFoundError (no such proposal in the tenant) or InputError (an
    empty reviewer, an unknown decision, a proposal already reviewed the other way)."""
    check_tenant(tenant_id)
    if decision not in ("approve", "reject"):
        raise InputError(f"decision must be approve or reject, not {decision!r}")
    if not isinstance(by, str) or not by.strip() or len(by) > 200:
        raise InputError("the reviewer (--by) must name who reviews (1-200 characters)")
    node = graph.get_node(tenant_id, heuristic_id_)
    if node is None or node.label != "Heuristic" or not node.props.get("proposed_by"):
        raise NotFoundError(f"no proposed heuristic {heuristic_id_!r} in tenant {tenant_id!r}; "
                            "list them with `hopweave review --tenant T`")
    status = "approved" if decision == "approve" else "rejected"
    if node.props.get("status") not in ("proposed", status):
        raise InputError(f"{heuristic_id_} is already {node.props.get('status')}; a reviewed proposal is not "
                         "reversed (consolidate again to propose it anew)")
    if node.props.get("status") == status:  # the same review again: the first one stands (its instant is
        return next(p for p in proposals(graph, tenant_id) if p["id"] == heuristic_id_)  # when it took effect)
    goal = goals.get(str(node.props.get("goal")))
    if goal is None:
        raise NotFoundError(f"goal {node.props.get('goal')!r} of {heuristic_id_} is not in the store")
    props = {**node.props, "status": status, "enabled": status == "approved", "reviewed_by": by, "reviewed_at": at,
             "review_note": note, "summary": str(node.props.get("summary", "")).replace("(proposed", f"({status}", 1)}
    if status == "approved":
        props["recorded_at"] = at
    edges = [Edge(s.id, heuristic_id_, "HAS_HEURISTIC", {"recorded_at": at})
             for s in _states(graph, tenant_id, goal)] if status == "approved" else []
    write(tenant_id, [Node(heuristic_id_, "Heuristic", {k: v for k, v in props.items() if v is not None})], edges)
    return next(p for p in proposals(graph, tenant_id) if p["id"] == heuristic_id_)
