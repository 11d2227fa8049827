"""The audit of a scenario folder (issue 14): for every scenario, what the agent saw at its
as_of, which document revisions were in force then, whether the expectations held, and what
changed by the audit date (the same request as of that date: other revisions, other context).

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
        rows.append(AuditRow(
            scenario=sc.name, description=sc.description, utterance=sc.utterance, as_of=r.as_of.isoformat(),
            goal=r.goal, passed=not (fails := check(sc, r)), failures=tuple(fails), context=r.context.text,
            sections=_sections(r), documents=docs, audit_as_of=now.as_of.isoformat(), documents_at_audit=docs_now,
            context_changed=now.context.hash != r.context.hash, changes=_changes(docs, docs_now)))
    return rows


__all__ = ["AuditRow", "CitedRevision", "audit", "cited"]
