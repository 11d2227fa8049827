"""Patterns learned from decisions: how decided cases cite a goal's patterns, and proposals.

:func:`pattern_report` reads every decided trace of a goal (its ``cited`` provenance ids) and the
retrieval it decided (``pattern_rows_json``: the row ids each pattern returned) and counts, per
pattern: the cases in which it returned rows, the cases in which one of its rows was cited, and
those per outcome. A cited id that no pattern returned, no policy chunk and no precedent line
showed is *unretrieved*.

Proposals (:func:`propose_patterns`), stored as ``:PatternProposal {status: "proposed"}`` nodes of
the tenant (id ``PP_<hash>``), each holding a complete ``TraversalPattern`` definition that passed
the pattern gates (``gated_items``: schema, identifiers, PII, budgets, conflicts with the stored
patterns) without being written:

- ``retire``: a pattern that returned rows in at least ``min_cases`` decided cases and was never
  cited (the definition is the stored one, for the reviewer to see what would go);
- ``new``: when at least ``min_cases`` cases cite ids no pattern retrieved, the typed edge path
  from the goal's seed that reaches most of them, mined from the graph (every schema path of at
  most ``max_depth`` edges from the seed label to the cited nodes' label, tried from each case's
  seed, at most ``sample`` cases), with the equality predicates on the path's nodes that every
  cited target shares and that exclude uncited targets the same path reaches.

:func:`approve_pattern` writes an approved ``new`` proposal as the goal's pattern (version 1, or
the stored version + 1) with ``write_metagraph`` (the gates again, against the store then), so
the engine runs it from then on; an approved ``retire`` proposal writes the pattern's next version
with ``status: retired`` (still stored and shown, never run by its goal again; the pack owner may
remove it from the pack). :func:`reject_pattern` records a
rejection. Who and when are recorded on the proposal. Deterministic: same traces and graph, same
report and proposals.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from datetime import datetime
from typing import Any, Mapping, Sequence

from hopweave.engine.record import json_prop
from hopweave.errors import HopweaveError, InputError, NotFoundError
from hopweave.graph.base import GraphStore, Node
from hopweave.models.common import Bindings, Session, check_tenant, to_datetime
from hopweave.models.filters import parse_filter
from hopweave.models.internal_patterns import internal_pattern
from hopweave.models.metagraph import EdgeStep, GoalType, Literal_, Predicate, Seed, TraversalPattern

__all__ = ["approve_pattern", "pattern_proposals", "pattern_report", "propose_patterns", "reject_pattern"]

DEFAULT_MIN_CASES = 20
DEFAULT_MAX_DEPTH = 3
DEFAULT_SAMPLE = 100
PROPOSER = "hopweave pattern-report"
_SKIP_LABELS = frozenset({"DecisionTrace", "PinnedText", "TraceStep", "GoalType", "TraversalPattern",
                          "FilterMapping", "PatternProposal", "Heuristic"})


def _decided(graph: GraphStore, tenant_id: str, goal: str) -> list[tuple[Node, Node]]:
    out = []
    for n in graph.find_nodes(tenant_id, "DecisionTrace", parse_filter({"op": "eq", "field": "goal", "value": goal})):
        if n.props.get("kind") in ("retrieval", "outcome_version") or not n.props.get("retrieval_id"):
            continue
        r = graph.get_node(tenant_id, str(n.props["retrieval_id"]))
        if r is not None:
            out.append((n, r))
    return sorted(out, key=lambda x: x[0].id)


def pattern_report(graph: GraphStore, tenant_id: str, goal: GoalType, patterns: Sequence[TraversalPattern], *,
                   min_cases: int = DEFAULT_MIN_CASES) -> dict[str, Any]:
    """The per-pattern citation report of ``goal``'s decided cases in ``tenant_id`` (the module
    docstring): ``{goal, cases, outcomes, patterns: [{name, version, retrieved_in, cited_in,
    cited_share, cited_by_outcome, never_cited}], retired: [names], unretrieved: {cases, ids: {id:
    cases}}}``. Retired patterns are listed by name only (their goal no longer runs them); an id
    only a retired pattern retrieved counts as retrieved for the cases that saw it."""
    check_tenant(tenant_id)
    if min_cases < 1:
        raise InputError(f"min_cases must be at least 1, not {min_cases}")
    retired = sorted(p.name for p in patterns if p.goal == goal.name and p.status == "retired")
    patterns = [p for p in patterns if p.status != "retired"]
    names = sorted({p.name: p for p in patterns if p.goal == goal.name})
    version = {p.name: p.version for p in patterns if p.goal == goal.name}
    retrieved: Counter[str] = Counter()
    cited_in: Counter[str] = Counter()
    by_outcome: dict[str, Counter[str]] = {n: Counter() for n in names}
    outcomes: Counter[str] = Counter()
    unretrieved: Counter[str] = Counter()
    unretrieved_cases = 0
    pairs = _decided(graph, tenant_id, goal.name)
    for dec, ret in pairs:
        outcome = str(dec.props.get("outcome"))
        outcomes[outcome] += 1
        cited = set(dec.props.get("cited") or ())
        rows = json_prop(ret.props.get("pattern_rows_json"), {})
        seen: set[str] = set(ret.props.get("chunk_ids") or ()) | set(ret.props.get("precedent_ids") or ())
        for name in names:
            ids = set(rows.get(name) or ())
            seen |= ids
            if ids:
                retrieved[name] += 1
            if ids & cited:
                cited_in[name] += 1
                by_outcome[name][outcome] += 1
        for ids in rows.values():
            seen |= set(ids or ())
        missing = cited - seen
        if missing:
            unretrieved_cases += 1
            unretrieved.update(missing)
    report = []
    for name in names:
        r, c = retrieved[name], cited_in[name]
        report.append({"name": name, "version": version[name], "retrieved_in": r, "cited_in": c,
                       "cited_share": round(c / r, 4) if r else 0.0,
                       "cited_by_outcome": dict(sorted(by_outcome[name].items())),
                       "never_cited": r >= min_cases and c == 0})
    return {"goal": goal.name, "tenant": tenant_id, "cases": len(pairs), "outcomes": dict(sorted(outcomes.items())),
            "patterns": report, "retired": retired,
            "unretrieved": {"cases": unretrieved_cases, "ids": dict(sorted(unretrieved.items()))}}


# ---- mining a path --------------------------------------------------------------------------
def _label_paths(graph: GraphStore, start: str, end: str, max_depth: int) -> list[tuple[EdgeStep, ...]]:
    """Every schema path (edge types and directions) of at most ``max_depth`` edges from label
    ``start`` to label ``end`` that passes through data labels only, shortest first."""
    rels = []
    for name, rel in sorted(graph.schema.rel_map.items()):
        frm, to = tuple(rel.from_labels), tuple(rel.to_labels)
        if "*" in frm or "*" in to or set(frm) & _SKIP_LABELS or set(to) & _SKIP_LABELS:
            continue
        rels.append((name, frm, to))
    out: list[tuple[EdgeStep, ...]] = []
    frontier: list[tuple[str, tuple[EdgeStep, ...]]] = [(start, ())]
    for _ in range(max_depth):
        nxt = []
        for label, steps in frontier:
            for name, frm, to in rels:
                if label in frm:
                    nxt += [(t, (*steps, EdgeStep(type=name, direction="out"))) for t in to]
                if label in to:
                    nxt += [(f, (*steps, EdgeStep(type=name, direction="in"))) for f in frm]
        out += [steps for label, steps in nxt if label == end]
        frontier = nxt
    return out


def _run(graph: GraphStore, tenant_id: str, seed: Seed, steps: Sequence[EdgeStep], target: str,
         customer: str, at: datetime | None, predicates: Sequence[Predicate] = ()) -> list[Any]:
    q = internal_pattern("pattern_mining", owner="_pattern_learning", seed=seed, edges=list(steps), target=target,
                         predicates=predicates, limit=200, budget_ms=1_000)
    sess = Session(tenant_id=tenant_id, customer_id=customer)
    try:
        return list(graph.run_pattern(tenant_id, q, Bindings(session=sess, as_of=at)).rows)
    except HopweaveError:
        return []


def _subject_seed(patterns: Sequence[TraversalPattern], goal: str) -> Seed | None:
    for p in sorted(patterns, key=lambda p: p.name):
        v = p.seed.value
        if p.goal == goal and getattr(v, "ref", None) == "session.customer_id":
            return p.seed
    return None


def _mine_path(graph: GraphStore, tenant_id: str, pairs: Sequence[tuple[Node, Node]], missing: Mapping[str, set[str]],
               seed: Seed, max_depth: int, sample: int) -> dict[str, Any] | None:
    labels: Counter[str] = Counter()
    for ids in missing.values():
        for i in ids:
            n = graph.get_node(tenant_id, i)
            if n is not None:
                labels[n.label] += 1
    if not labels:
        return None
    target = sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    cases = [(d, r) for d, r in pairs if d.id in missing][:sample]
    best: tuple[int, int, str, tuple[EdgeStep, ...]] | None = None
    for steps in _label_paths(graph, seed.type, target, max_depth):
        hits = 0
        for dec, _ret in cases:
            at = to_datetime(str(dec.props.get("decided_at")))
            rows = _run(graph, tenant_id, Seed(type=seed.type, key=seed.key, value=Literal_(
                value=str(dec.props.get("customer_id")))), steps, target, str(dec.props.get("customer_id")), at)
            hits += any(r.node_id in missing[dec.id] for r in rows)
        key = json.dumps([[s.type, s.direction] for s in steps])
        if hits and (best is None or (hits, -len(steps), key) > (best[0], -len(best[3]), best[2])):
            best = (hits, len(steps), key, steps)
    if best is None:
        return None
    steps = best[3]
    cited_pos: list[list[dict[str, Any]]] = []
    uncited_pos: list[list[dict[str, Any]]] = []
    for dec, _ret in cases:
        cust = str(dec.props.get("customer_id"))
        rows = _run(graph, tenant_id, Seed(type=seed.type, key=seed.key, value=Literal_(value=cust)), steps, target,
                    cust, to_datetime(str(dec.props.get("decided_at"))))
        for r in rows:
            nodes = [graph.get_node(tenant_id, nid) for nid in r.path[1:]]
            props = [dict(n.props) if n is not None else {} for n in nodes]
            (cited_pos if r.node_id in missing[dec.id] else uncited_pos).append(props)
    predicates: list[Predicate] = []
    remaining = list(uncited_pos)
    for _ in range(2):
        if not remaining or not cited_pos:
            break
        choice: tuple[int, int, str, Any] | None = None
        for pos in range(len(steps)):
            keys = sorted(set.intersection(*[set(c[pos]) for c in cited_pos])) if cited_pos else []
            for prop in keys:
                if prop in ("summary", "recorded_at", "recorded_by", "tenant_id", "id"):
                    continue
                vals = {json.dumps(c[pos][prop], sort_keys=True, default=str) for c in cited_pos}
                if len(vals) != 1:
                    continue
                value = cited_pos[0][pos][prop]
                if not isinstance(value, (str, int, bool)):
                    continue
                excluded = sum(u[pos].get(prop) != value for u in remaining)
                if excluded and (choice is None or excluded > choice[0]):
                    choice = (excluded, pos, prop, value)
        if choice is None:
            break
        _, pos, prop, value = choice
        on: Any = "target" if pos == len(steps) - 1 else pos + 1
        predicates.append(Predicate(on=on, property=prop, op="eq", value=Literal_(value=value)))
        remaining = [u for u in remaining if u[pos].get(prop) == value]
    return {"target": target, "steps": steps, "predicates": predicates, "explains": best[0], "tried": len(cases),
            "cited_targets": len(cited_pos), "uncited_targets": len(uncited_pos),
            "uncited_after_predicates": len(remaining)}


def _proposal_id(tenant_id: str, kind: str, definition: str) -> str:
    return "PP_" + hashlib.sha256(f"{tenant_id}\0{kind}\0{definition}".encode()).hexdigest()[:16]


def propose_patterns(graph: GraphStore, write: Any, tenant_id: str, goal: GoalType,
                     patterns: Sequence[TraversalPattern], *, at: datetime, domain: str | None = None,
                     min_cases: int = DEFAULT_MIN_CASES, max_depth: int = DEFAULT_MAX_DEPTH,
                     sample: int = DEFAULT_SAMPLE, dry_run: bool = False) -> dict[str, Any]:
    """The report plus proposals (the module docstring), written through ``write(tenant, nodes,
    edges)`` unless ``dry_run`` (a proposal already reviewed keeps its review). Returns
    ``{report, proposals: [{id, kind, pattern, status, reason, definition}]}``. Raises the pattern
    gates' errors for a candidate that does not pass them (nothing written then)."""
    from hopweave.graph.metagraph_io import gated_items, to_json

    report = pattern_report(graph, tenant_id, goal, patterns, min_cases=min_cases)
    every = {p.name: p for p in patterns if p.goal == goal.name}  # a retired name keeps its version line
    mine = [p for p in every.values() if p.status != "retired"]
    by_name = {p.name: p for p in mine}
    proposals: list[dict[str, Any]] = []
    for row in report["patterns"]:
        if row["never_cited"]:
            p = by_name[row["name"]]
            proposals.append({"kind": "retire", "pattern": p.name, "definition": to_json(p),
                              "reason": f"returned rows in {row['retrieved_in']} decided cases, cited in none"})
    if report["unretrieved"]["cases"] >= min_cases:
        pairs = _decided(graph, tenant_id, goal.name)
        missing: dict[str, set[str]] = {}
        for dec, ret in pairs:
            rows = json_prop(ret.props.get("pattern_rows_json"), {})
            seen = set(ret.props.get("chunk_ids") or ()) | set(ret.props.get("precedent_ids") or ())
            for ids in rows.values():
                seen |= set(ids or ())
            m = set(dec.props.get("cited") or ()) - seen
            if m:
                missing[dec.id] = m
        seed = _subject_seed(mine, goal.name)
        mined = _mine_path(graph, tenant_id, pairs, missing, seed, max_depth, sample) if seed else None
        if mined is not None and seed is not None:
            name = f"cited_{mined['target'].lower()}"
            section = next((s.name for s in goal.sections if s.source == "facts"), None)
            returns = sorted(p.name for p in graph.schema.label(mined["target"]).properties
                             if not p.pii and p.name not in ("recorded_at", "recorded_by"))[:8]
            cand = TraversalPattern(
                name=name, goal=goal.name, sub_question=f"Which {mined['target']} do decisions on this case cite?",
                seed=seed, edge_sequence=mined["steps"], target_type=mined["target"],
                predicates=tuple(mined["predicates"]), depth=len(mined["steps"]), returns=tuple(returns),
                section=section, limit=10, version=every[name].version + 1 if name in every else 1,
                author=PROPOSER, created_at=at,
                description=f"Mined from {report['unretrieved']['cases']} decided cases citing {mined['target']} "
                            "nodes no pattern retrieved.")
            gated_items(graph.schema, [], [cand], stored=graph.patterns(), stored_goals=graph.goal_types(),
                        domain=domain)
            proposals.append({"kind": "new", "pattern": name, "definition": to_json(cand),
                              "reason": f"explains {mined['explains']} of {mined['tried']} sampled cases with "
                                        f"unretrieved citations; {mined['uncited_targets']} uncited targets on the "
                                        f"path, {mined['uncited_after_predicates']} after its predicates"})
    nodes = []
    for prop in proposals:
        pid = _proposal_id(tenant_id, prop["kind"], prop["definition"])
        current = graph.get_node(tenant_id, pid)
        prop["id"] = pid
        prop["status"] = str(current.props.get("status")) if current is not None else "proposed"
        if current is None or prop["status"] == "proposed":
            nodes.append(Node(pid, "PatternProposal", {
                "kind": prop["kind"], "goal": goal.name, "pattern": prop["pattern"], "status": "proposed",
                "definition": prop["definition"], "reason": prop["reason"], "proposed_by": PROPOSER,
                "proposed_at": at, "summary": f"Pattern proposal ({prop['kind']}) {prop['pattern']}: {prop['reason']}"}))
    if nodes and not dry_run:
        write(tenant_id, nodes, [])
    return {"report": report, "proposals": proposals}


def pattern_proposals(graph: GraphStore, tenant_id: str, goal: str | None = None) -> list[dict[str, Any]]:
    """The pattern proposals of ``tenant_id`` (of ``goal`` when given), by id."""
    check_tenant(tenant_id)
    out = []
    for n in graph.find_nodes(tenant_id, "PatternProposal"):
        p = n.props
        if goal and p.get("goal") != goal:
            continue
        out.append({"id": n.id, **{k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in sorted(p.items())
                                   if k != "definition"}})
    return out


def _review(graph: GraphStore, write: Any, tenant_id: str, pid: str, status: str, by: str, at: datetime,
            note: str | None) -> Node:
    check_tenant(tenant_id)
    if not isinstance(by, str) or not by.strip() or len(by) > 200:
        raise InputError("the reviewer (--by) must name who reviews (1-200 characters)")
    node = graph.get_node(tenant_id, pid)
    if node is None or node.label != "PatternProposal":
        raise NotFoundError(f"no pattern proposal {pid!r} in tenant {tenant_id!r}")
    if node.props.get("status") not in ("proposed", status):
        raise InputError(f"{pid} is already {node.props.get('status')}; propose it anew to review it again")
    if node.props.get("status") == status:  # the same review again: the first one stands, nothing written
        return node
    props = {**node.props, "status": status, "reviewed_by": by, "reviewed_at": at, "review_note": note}
    write(tenant_id, [Node(pid, "PatternProposal", {k: v for k, v in props.items() if v is not None})], [])
    return node


def approve_pattern(graph: GraphStore, write: Any, tenant_id: str, pid: str, *, by: str, at: datetime,
                    note: str | None = None, domain: str | None = None) -> dict[str, Any]:
    """Approve the proposal ``pid``: a ``new`` pattern is written (gated) as its goal's pattern and
    runs from then on; a ``retire`` proposal writes the stored pattern's next version with
    ``status: retired`` (gated; author ``by``, created ``at``): it stays in the metagraph (the
    audit, the Browser queries, the traces that ran it replay as recorded) and its goal no longer
    runs it. Approving an approved proposal again writes nothing (the first review's reviewer
    and instant stand). Returns the proposal. Raises NotFoundError (no such proposal, or the pattern to
    retire is gone), InputError (a bad reviewer, a proposal already reviewed, a pattern changed
    since the retire proposal) or the gates' errors; nothing is approved then."""
    from hopweave.graph.metagraph_io import write_metagraph

    if not isinstance(by, str) or not by.strip() or len(by) > 200:
        raise InputError("the reviewer (--by) must name who reviews (1-200 characters)")
    node = graph.get_node(tenant_id, pid)
    if node is not None and node.label == "PatternProposal" and node.props.get("status") == "proposed":
        raw = node.props.get("definition")
        cand = TraversalPattern.model_validate_json(raw if isinstance(raw, str) else json.dumps(raw))
        if node.props.get("kind") == "new":
            write_metagraph(graph, [], [cand], domain=domain)
        elif node.props.get("kind") == "retire":
            retired = _retired_version(graph, cand, pid, by, at)
            if retired is not None:
                write_metagraph(graph, [], [retired], domain=domain)
    _review(graph, write, tenant_id, pid, "approved", by, at, note)
    return next(p for p in pattern_proposals(graph, tenant_id) if p["id"] == pid)


def _retired_version(graph: GraphStore, proposed: TraversalPattern, pid: str, by: str,
                     at: datetime) -> TraversalPattern | None:
    """The stored pattern ``proposed`` names, as its next version with status ``retired``; None
    when it is retired already. Raises NotFoundError when it is no longer stored, InputError when
    its stored definition is not the one the proposal was made for."""
    from hopweave.graph.metagraph_io import to_json

    stored = next((p for p in graph.patterns(proposed.goal) if p.name == proposed.name), None)
    if stored is None:
        raise NotFoundError(f"pattern {proposed.name!r} of goal {proposed.goal} is no longer stored; "
                            f"reject {pid} instead")
    if stored.status == "retired":
        return None
    if to_json(stored) != to_json(proposed):
        raise InputError(f"pattern {proposed.name} changed since {pid} proposed retiring version {proposed.version} "
                         f"(stored: version {stored.version}); run `hopweave pattern-report --propose` again")
    data = stored.model_dump(mode="json")
    data.update(status="retired", version=stored.version + 1, author=by, created_at=at.isoformat(),
                description=(f"Retired by {by} ({pid}). " + stored.description).strip())
    return TraversalPattern.model_validate(data)


def reject_pattern(graph: GraphStore, write: Any, tenant_id: str, pid: str, *, by: str, at: datetime,
                   note: str | None = None) -> dict[str, Any]:
    """Reject the proposal ``pid`` (recorded; nothing else changes). Returns the proposal."""
    _review(graph, write, tenant_id, pid, "rejected", by, at, note)
    return next(p for p in pattern_proposals(graph, tenant_id) if p["id"] == pid)

