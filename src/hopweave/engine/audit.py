"""The audit of a scenario folder, and of one recorded trace.

Scenarios: for every scenario, what the agent saw at its
as_of, which document revisions and which procedure revisions (workflows, rules, heuristics:
graph nodes whose label declares a validity interval) were in force then, whether the
expectations held, and what changed by the audit date (the same request as of that date: other
revisions, other context).

:func:`audit` returns :class:`AuditRow` s; ``hopweave audit SCENARIOS --as-of DATE --html FILE``
renders them (``hopweave.cli.audit_cmds``). Nothing is recorded; same store + same dates ->
the same rows.

One trace: :func:`audit_trace` (``hopweave audit --trace ID``) sets what the agent saw, rebuilt
from the trace's pinned texts, against today: per chunk the words as seen and today's words in
the index (or that the chunk is gone), the fact nodes changed since, and the context of the same
request re-run on today's store (at the trace's as_of unless another is given), line by line.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict

from hopweave.engine import record as trace_record
from hopweave.engine.engine import Engine
from hopweave.engine.pins import PinCheck, PinStatus, pinned_texts
from hopweave.engine.replay import as_recorded, check, replay_trace, run_scenario, scenario_paths
from hopweave.engine.result import RetrievalResult
from hopweave.models.filters import In
from hopweave.models.scenario import load_scenario


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


class TextChange(BaseModel):
    """A chunk the trace showed: its words as seen (pinned) and today's words in the index."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    what: str
    status: PinStatus
    as_seen: str | None
    today: str | None
    #: the words that differ, as ``[-as seen-]{+today+}`` with a few words around them
    words: str = ""


class TraceAudit(BaseModel):
    """What trace ``trace_id`` showed against today's store (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    as_of: str | None
    #: the as-seen context rebuilt byte for byte from the pins (its hash matches the recording)
    identical: bool
    recorded_hash: str
    today_as_of: str
    today_hash: str
    chunks: tuple[TextChange, ...]
    facts: tuple[PinCheck, ...]
    #: the context as seen -> the same request on today's store, unified diff lines
    context_diff: tuple[str, ...]

    def render(self) -> str:
        """The human report: verdict, changed chunks with their words, changed facts, context diff."""
        verdict = "byte-identical" if self.identical else "NOT reproducible from its pins"
        out = [f"trace {self.trace_id} (as_of {self.as_of}): as seen, rebuilt from its pins: {verdict}"]
        changed = [c for c in self.chunks if c.status != "same"]
        out.append(f"chunks: {len(self.chunks) - len(changed)}/{len(self.chunks)} unchanged today")
        for c in changed:
            out.append(f"  {c.status}: {c.chunk_id} {c.what}".rstrip())
            out.append(f"    {c.words}" if c.status == "changed" else "    (no longer in the index: the words as seen "
                       "are kept in the trace's pins)")
        facts = [f for f in self.facts if f.status != "same"]
        out.append(f"facts: {len(self.facts) - len(facts)}/{len(self.facts)} unchanged today")
        out += [f"  {f.status}: {f.id} {f.what}".rstrip() for f in facts]
        if self.context_diff:
            out.append(f"context as seen -> the same request on today's store as of {self.today_as_of}:")
            out += [f"  {ln}" for ln in self.context_diff]
        else:
            out.append(f"context: the same request on today's store as of {self.today_as_of} gives the same text")
        return "\n".join(out)


def word_diff(a: str, b: str, around: int = 5) -> str:
    """The words of ``b`` that differ from ``a`` as ``[-old-]{+new+}``, with ``around`` words of
    context on each side (``…`` where words are left out); "" when they are the same."""
    wa, wb = a.split(), b.split()
    out: list[str] = []
    ops = difflib.SequenceMatcher(a=wa, b=wb, autojunk=False).get_opcodes()
    for k, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "equal":
            seg = wa[i1:i2]
            head = seg[:around] if k > 0 else []
            tail = seg[-around:] if k < len(ops) - 1 else []
            out += seg if len(seg) <= len(head) + len(tail) else head + ["…"] + tail
            continue
        if i2 > i1:
            out.append("[-" + " ".join(wa[i1:i2]) + "-]")
        if j2 > j1:
            out.append("{+" + " ".join(wb[j1:j2]) + "+}")
    return "" if len(ops) <= 1 and (not ops or ops[0][0] == "equal") else " ".join(out)


def audit_trace(engine: Engine, tenant_id: str, trace_id: str, *, as_of: Any = None,
                pii: bool = False) -> TraceAudit:
    """What trace ``trace_id`` of ``tenant_id`` showed against today: its as-seen context rebuilt
    from its pins, each chunk's pinned words against today's index, the fact nodes changed since,
    and the context of the same request re-run on today's store at ``as_of`` (default the
    trace's own), nothing recorded. The context diff has the trace's [Note] lines (they quote
    the utterance) redacted unless ``pii``.

    Raises:
        NotFoundError: unknown trace (or another tenant's). InputError: a trace without pins.
        StoreError: a store cannot be read.
    """
    rebuilt = as_recorded(engine, tenant_id, trace_id)
    trace = trace_record.load(engine.graph, tenant_id, trace_id)
    pins = trace.pins.get("chunks", [])
    kept = pinned_texts(engine.graph, tenant_id, [p["text_id"] for p in pins if p.get("text_id")])
    today: dict[str, str] = {}
    if engine.index is not None and pins:
        ids = tuple(sorted(p["chunk_id"] for p in pins))
        for row in engine.index.fetch(tenant_id, In(field="chunk_id", values=ids), current_only=False):
            today[str(row.get("chunk_id"))] = str(row.get("text") or "")
    status = {c.id: c for c in rebuilt.chunks}
    chunks = []
    for p in pins:
        seen, now = kept.get(p.get("text_id") or ""), today.get(p["chunk_id"])
        check_ = status[p["chunk_id"]]
        words = word_diff(seen, now) if seen is not None and now is not None and check_.status == "changed" else ""
        chunks.append(TextChange(chunk_id=p["chunk_id"], what=check_.what, status=check_.status,
                                 as_seen=seen, today=now, words=words))
    result, _ = replay_trace(engine, tenant_id, trace_id, record=False, as_of=as_of if as_of is not None else trace.as_of)
    then_text, now_text = rebuilt.text, result.context.text
    if not pii:
        then_text, now_text = trace_record.redact_context(then_text), trace_record.redact_context(now_text)
    diff = list(difflib.unified_diff(then_text.splitlines(), now_text.splitlines(), "as seen", "today",
                                     lineterm="", n=0))[2:]
    return TraceAudit(trace_id=trace_id, as_of=trace.as_of, identical=rebuilt.identical,
                      recorded_hash=rebuilt.recorded_hash, today_as_of=result.as_of.isoformat(),
                      today_hash=result.context.hash, chunks=tuple(chunks), facts=rebuilt.facts,
                      context_diff=tuple(diff))


__all__ = ["AuditRow", "CitedRevision", "ProcedureRevision", "TextChange", "TraceAudit", "audit", "audit_trace",
           "cited", "procedure", "word_diff"]
