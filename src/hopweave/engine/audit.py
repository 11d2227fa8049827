"""The audit of a scenario folder (issue 14): for every scenario, what the agent saw at its
as_of, which document revisions and which procedure revisions (workflows, rules, heuristics:
graph nodes whose label declares a validity interval) were in force then, whether the
expectations held, and what changed by the audit date (the same request as of that date: other
revisions, other context).

:func:`audit` returns :class:`AuditRow` s; ``hopweave audit SCENARIOS --as-of DATE --html FILE``
renders them (``hopweave.cli.audit_cmds``). Nothing is recorded; same store + same dates ->
the same rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict

from hopweave.engine.engine import Engine
from hopweave.engine.replay import check, load_scenario, run_scenario, scenario_paths
from hopweave.engine.result import RetrievalResult


class CitedRevision(BaseModel):
    """A document revision the context cited, with its validity interval."""

    model_config = ConfigDict(frozen=True)

    document: str
    document_id: str
    revision: str
    sections: tuple[str, ...]
    valid_from: str | None = None
    valid_until: str | None = None


class ProcedureRevision(BaseModel):
    """A graph node with a validity interval (a workflow, rule or heuristic revision) the patterns
    returned: in force at the request's as_of (docs/engine.md, "Time")."""

    model_config = ConfigDict(frozen=True)

    label: str
    id: str
    name: str
    valid_from: str | None = None
    valid_until: str | None = None


class AuditRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    scenario: str
    description: str
    utterance: str
    as_of: str
    goal: str | None
    passed: bool
    failures: tuple[str, ...]
    context: str
    sections: dict[str, tuple[str, ...]]
    documents: tuple[CitedRevision, ...]
    audit_as_of: str
    documents_at_audit: tuple[CitedRevision, ...]
    context_changed: bool
    changes: tuple[str, ...]
    procedure: tuple[ProcedureRevision, ...] = ()
    procedure_at_audit: tuple[ProcedureRevision, ...] = ()
    #: per workflow / rule name, the revision in force then -> at the audit date
    procedure_changes: tuple[str, ...] = ()


def cited(r: RetrievalResult) -> tuple[CitedRevision, ...]:
    """The document revisions in the context, sorted by document."""
    by: dict[tuple[str, str], list[Any]] = {}
    for c in r.chunks:
        if c.in_context:
            by.setdefault((c.document or c.document_id, c.revision), []).append(c)
    return tuple(CitedRevision(document=doc, document_id=cs[0].document_id, revision=rev,
                               sections=tuple(sorted({c.section for c in cs})),
                               valid_from=cs[0].metadata.get("valid_from"), valid_until=cs[0].metadata.get("valid_until"))
                 for (doc, rev), cs in sorted(by.items()))


def procedure(engine: Engine, r: RetrievalResult) -> tuple[ProcedureRevision, ...]:
    """The rows of ``r``'s patterns whose label declares a validity interval, sorted by label,
    name and id (the node's own properties give the interval: a pattern need not return it)."""
    schema = engine.graph.schema
    out: dict[str, ProcedureRevision] = {}
    for pr in r.facts:
        for row in pr.rows:
            spec = schema.label_map.get(row.label)
            t = spec.time if spec is not None else None
            if t is None or (t.valid_from is None and t.valid_until is None) or row.node_id in out:
                continue
            node = engine.graph.get_node(r.tenant_id, row.node_id)
            props = dict(node.props) if node is not None else dict(row.properties)
            name = props.get("name") or props.get("text") or row.node_id
            out[row.node_id] = ProcedureRevision(
                label=row.label, id=row.node_id, name=str(name),
                valid_from=_text(props.get(t.valid_from or "")), valid_until=_text(props.get(t.valid_until or "")))
    return tuple(sorted(out.values(), key=lambda p: (p.label, p.name, p.id)))


def _text(v: Any) -> str | None:
    return None if v is None else str(v)


def _procedure_changes(then: tuple[ProcedureRevision, ...], now: tuple[ProcedureRevision, ...]) -> list[str]:
    """Per (label, name): the revision in force then -> at the audit date."""
    a: dict[tuple[str, str], list[str]] = {}
    b: dict[tuple[str, str], list[str]] = {}
    for src, dst in ((then, a), (now, b)):
        for p in src:
            dst.setdefault((p.label, p.name), []).append(p.id)
    out = []
    for key in sorted(set(a) | set(b)):
        label, name = key
        ia, ib = ", ".join(a.get(key, [])), ", ".join(b.get(key, []))
        if ia == ib:
            continue
        if not ia:
            out.append(f"{label} '{name}': {ib} now in force")
        elif not ib:
            out.append(f"{label} '{name}': {ia} no longer in force")
        else:
            out.append(f"{label} '{name}': {ia} -> {ib}")
    return out


def _sections(r: RetrievalResult) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for ln in r.context.lines:
        if ln.kind != "header":
            out.setdefault(ln.section, []).append(ln.text)
    return {k: tuple(v) for k, v in out.items()}


def _changes(then: tuple[CitedRevision, ...], now: tuple[CitedRevision, ...]) -> tuple[str, ...]:
    a = {d.document_id: d.revision for d in then}
    b = {d.document_id: d.revision for d in now}
    out = [f"{k}: {a[k]} -> {b[k]}" for k in sorted(set(a) & set(b)) if a[k] != b[k]]
    out += [f"{k}: {a[k]} no longer cited" for k in sorted(set(a) - set(b))]
    out += [f"{k}: {b[k]} now cited" for k in sorted(set(b) - set(a))]
    return tuple(out)


def audit(engine: Engine, paths: Iterable[str | Path], as_of: str) -> list[AuditRow]:
    """Every scenario under ``paths`` at its own as_of (checked) and again at ``as_of`` (the
    audit date). Raises what the engine raises (InputError for a bad scenario or date)."""
    rows = []
    for p in scenario_paths(paths):
        sc = load_scenario(p)
        r = run_scenario(engine, sc, record=False)
        now = run_scenario(engine, sc.model_copy(update={"as_of": as_of}), record=False)
        docs, docs_now = cited(r), cited(now)
        proc, proc_now = procedure(engine, r), procedure(engine, now)
        rows.append(AuditRow(
            scenario=sc.name, description=sc.description, utterance=sc.utterance, as_of=r.as_of.isoformat(),
            goal=r.goal, passed=not (fails := check(sc, r)), failures=tuple(fails), context=r.context.text,
            sections=_sections(r), documents=docs, audit_as_of=now.as_of.isoformat(), documents_at_audit=docs_now,
            context_changed=now.context.hash != r.context.hash,
            changes=_changes(docs, docs_now), procedure=proc, procedure_at_audit=proc_now,
            procedure_changes=tuple(_procedure_changes(proc, proc_now))))
    return rows


__all__ = ["AuditRow", "CitedRevision", "ProcedureRevision", "audit", "cited", "procedure"]
