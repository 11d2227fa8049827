"""``hopweave audit SCENARIOS --as-of DATE --html report.html``: the audit report, and
``hopweave audit --trace ID --tenant T``: what one recorded trace showed against today.

One page a person reads without JSON: a summary table (scenario, as_of, goal, pass/fail,
document revisions in force and cited, what changed by the audit date), then per scenario the
utterance, the failures, the document and procedure (workflow, rule) revisions with their
validity, the context sections the agent saw and the changes. Self-contained HTML (no scripts, no external assets), every value escaped,
deterministic for the same store and dates.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

import typer

from hopweave.cli import app
from hopweave.cli.common import GraphOpt, VectorsOpt, emit_json, handle_errors, write_output

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.audit import AuditRow, CitedRevision, ProcedureRevision

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#1d2330;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2.2rem;border-top:1px solid #d5d9e0;
padding-top:1rem}h3{font-size:1rem;margin:1rem 0 .3rem}
table{border-collapse:collapse;width:100%;font-size:.9rem}th,td{border:1px solid #d5d9e0;padding:.35rem .5rem;
text-align:left;vertical-align:top}th{background:#f1f3f7}
.pass{color:#1b7f3b;font-weight:600}.fail{color:#b3261e;font-weight:600}.muted{color:#5b6475}
.changed{background:#fff6dc}.ctx{background:#f7f8fa;border:1px solid #e1e4ea;padding:.6rem;white-space:pre-wrap;
font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.82rem}
.utt{font-style:italic}ul{margin:.2rem 0 .6rem 1.2rem;padding:0}
"""


def _rev(d: CitedRevision) -> str:
    until = d.valid_until or "open"
    return (f"{escape(d.document)} <b>{escape(d.revision)}</b> §{escape(', '.join(d.sections))} "
            f"<span class='muted'>(in force {escape(d.valid_from or 'always')} .. {escape(until)})</span>")


def _proc(p: ProcedureRevision) -> str:
    return (f"{escape(p.label)} {escape(p.name)} <b>{escape(p.id)}</b> "
            f"<span class='muted'>(in force {escape(p.valid_from or 'always')} .. {escape(p.valid_until or 'open')})"
            "</span>")


def _summary(rows: Sequence[AuditRow]) -> str:
    body = []
    for r in rows:
        verdict = "<span class='pass'>pass</span>" if r.passed else "<span class='fail'>FAIL</span>"
        docs = "<br>".join(_rev(d) for d in r.documents) or "<span class='muted'>none</span>"
        lines = [escape(c) for c in r.changes]
        if r.procedure_changes:
            n = len(r.procedure_changes)
            lines.append(f"<a href='#{escape(r.scenario)}'>{n} workflow/rule revision{'s' if n > 1 else ''}</a>")
        changed = "<br>".join(lines) or (
            "context differs" if r.context_changed else "<span class='muted'>unchanged</span>")
        cls = " class='changed'" if r.changes or r.procedure_changes or r.context_changed else ""
        body.append(f"<tr{cls}><td><a href='#{escape(r.scenario)}'>{escape(r.scenario)}</a></td>"
                    f"<td>{escape(r.as_of[:10])}</td><td>{escape(r.goal or '-')}</td><td>{verdict}</td>"
                    f"<td>{docs}</td><td>{changed}</td></tr>")
    return ("<table><tr><th>Scenario</th><th>as of</th><th>Goal</th><th>Result</th>"
            "<th>Documents in force and cited</th><th>Changed by the audit date</th></tr>"
            + "".join(body) + "</table>")


def _detail(r: AuditRow) -> str:
    out = [f"<h2 id='{escape(r.scenario)}'>{escape(r.scenario)} "
           f"{'<span class=pass>pass</span>' if r.passed else '<span class=fail>FAIL</span>'}</h2>",
           f"<p>{escape(r.description)}</p>",
           f"<p>Asked <span class='utt'>“{escape(r.utterance)}”</span> as of <b>{escape(r.as_of)}</b>; "
           f"goal {escape(r.goal or 'unclear (clarify)')}.</p>"]
    if r.failures:
        out.append("<h3>Expectations not met</h3><ul>" + "".join(f"<li>{escape(f)}</li>" for f in r.failures)
                   + "</ul>")
    out.append("<h3>Documents in force and cited</h3><ul>"
               + ("".join(f"<li>{_rev(d)}</li>" for d in r.documents) or "<li class='muted'>none</li>") + "</ul>")
    out.append("<h3>Procedure in force (workflows, rules)</h3><ul>"
               + ("".join(f"<li>{_proc(p)}</li>" for p in r.procedure) or "<li class='muted'>none</li>") + "</ul>")
    out.append(f"<h3>As of the audit date ({escape(r.audit_as_of[:10])})</h3><ul>"
               + ("".join(f"<li>{_rev(d)}</li>" for d in r.documents_at_audit) or "<li class='muted'>none</li>")
               + "".join(f"<li>{_proc(p)}</li>" for p in r.procedure_at_audit)
               + "</ul>")
    if r.changes or r.procedure_changes or r.context_changed:
        out.append("<p class='changed'>Changed: "
                   + (escape("; ".join(r.changes + r.procedure_changes)) or "the context differs") + "</p>")
    out.append("<h3>What the agent saw</h3>")
    for name, lines in r.sections.items():
        out.append(f"<p><b>{escape(name)}</b></p><ul>" + "".join(f"<li>{escape(x)}</li>" for x in lines) + "</ul>")
    out.append(f"<details><summary>Context block as sent</summary><div class='ctx'>{escape(r.context)}</div></details>")
    return "\n".join(out)


def render_audit(rows: Sequence[AuditRow], audit_as_of: str, source: str) -> str:
    """The audit report as one self-contained HTML page."""
    passed = sum(1 for r in rows if r.passed)
    changed = sum(1 for r in rows if r.changes or r.procedure_changes or r.context_changed)
    head = (f"<h1>hopweave audit</h1><p class='muted'>{escape(source)} · audit date {escape(audit_as_of)} · "
            f"{passed}/{len(rows)} scenarios passed · {changed} changed by the audit date</p>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>hopweave audit</title>"
            f"<style>{_CSS}</style></head><body>{head}{_summary(rows)}"
            + "".join(_detail(r) for r in rows) + "</body></html>\n")


@app.command()
@handle_errors
def audit(
    paths: Optional[list[Path]] = typer.Argument(None, help="Scenario files or folders."),
    as_of: Optional[str] = typer.Option(
        None, "--as-of", help="The audit date: what changed by then is shown (for one recorded retrieval: the "
        "as_of to re-run its request at, default its own)."),
    caller: Optional[str] = typer.Option(None, "--caller", help="Instead of scenarios: list the recorded retrievals "
                                         "this caller asked for through the service (jwt:<sub>, key:<id>, gateway...)."),
    html: Optional[Path] = typer.Option(None, "--html", help="Write the report as HTML to this file."),
    store: Optional[str] = GraphOpt,
    vectors: Optional[str] = VectorsOpt,
    as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
    trace: Optional[str] = typer.Option(
        None, "--trace", help="Audit one recorded trace: the words it showed (pinned) against today's store."),
    tenant: Optional[str] = typer.Option(None, "--tenant",
                                         help="Tenant of the trace, or of --caller (or $HOPWEAVE_TENANT)."),
    pii: bool = typer.Option(False, "--pii", help="With --trace: show the [Note] lines quoting the utterance."),
) -> None:
    """Audit scenarios: what the agent saw at each as_of, the documents and procedure (workflow,
    rule) revisions in force, pass/fail, and what changed by --as-of (exit 1 when a scenario fails).
    With --trace ID: the chunks and context lines the trace showed, as pinned, against today's
    index and today's store (exit 1 when the pins no longer rebuild the recorded context).
    With --caller ID: who saw which customer's data when (the caller's recorded retrievals in
    --tenant, the latest first: ``asked_at`` is when the request arrived, ``as_of`` the instant
    it asked about; traces recorded before ``asked_at`` was kept show ``-`` and come last)."""
    if caller is not None:
        _audit_caller(store, caller, tenant, as_json)
        return
    from hopweave.cli.engine_cmds import _open_engine
    from hopweave.engine.audit import audit as run
    from hopweave.engine.boundary import check_as_of
    from hopweave.engine.replay import REPLAY_CONFIG
    from hopweave.errors import InputError

    if trace is not None:
        if paths or html is not None:
            raise InputError("--trace audits one recorded trace: give no scenario paths and no --html")
        _audit_trace(trace, tenant, as_of, store, vectors, as_json, pii)
        return
    if not paths or as_of is None:
        raise InputError("give scenario files or folders and --as-of DATE (or --trace ID --tenant TENANT)")
    check_as_of(as_of)
    engine = _open_engine(store, vectors, **REPLAY_CONFIG.__dict__)
    try:
        rows = run(engine, paths, as_of)
    finally:
        engine.close()
    if html is not None:
        write_output(html, render_audit(rows, as_of, ", ".join(str(p) for p in paths)), "audit report")
    if as_json:
        emit_json([r.model_dump(mode="json") for r in rows])
    else:
        for r in rows:
            what = r.changes + ((f"{len(r.procedure_changes)} workflow/rule revisions changed",)
                                if r.procedure_changes else ())
            typer.echo(f"{'PASS' if r.passed else 'FAIL'}  {r.scenario:40s} as_of={r.as_of[:10]} "
                       f"{'; '.join(what) or ('context differs' if r.context_changed else 'unchanged')}")
        typer.echo(f"\n{sum(r.passed for r in rows)}/{len(rows)} scenarios passed"
                   + (f"; report written to {html}" if html else ""))
    if not all(r.passed for r in rows):
        raise typer.Exit(code=1)


def _audit_trace(trace: str, tenant: Optional[str], as_of: Optional[str], store: Optional[str],
                 vectors: Optional[str], as_json: bool, pii: bool) -> None:
    from hopweave.cli.engine_cmds import _open_engine, _tenant
    from hopweave.engine.audit import audit_trace
    from hopweave.engine.boundary import check_as_of
    from hopweave.engine.replay import REPLAY_CONFIG

    if as_of is not None:
        check_as_of(as_of)
    who = _tenant(tenant)
    engine = _open_engine(store, vectors, **REPLAY_CONFIG.__dict__)
    try:
        report = audit_trace(engine, who, trace, as_of=as_of, pii=pii)
    finally:
        engine.close()
    emit_json(report.model_dump(mode="json")) if as_json else typer.echo(report.render())
    if not report.identical:
        raise typer.Exit(code=1)


def _audit_caller(store: Optional[str], caller: str, tenant: Optional[str], as_json: bool) -> None:
    """``audit --caller``: the caller's recorded retrievals in the tenant (no utterances: PII)."""
    from hopweave.cli.engine_cmds import _open_graph, _tenant
    from hopweave.engine.record import traces_by_caller

    who = _tenant(tenant)
    with _open_graph(store) as graph:
        rows = [{"trace_id": t.trace_id, "asked_at": t.asked_at, "as_of": t.as_of, "customer_id": t.customer_id,
                 "goal": t.goal, "caller": t.caller} for t in traces_by_caller(graph, who, caller)]
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        typer.echo(f"asked_at={r['asked_at'] or '-'}  as_of={r['as_of']}  {r['trace_id']}  "
                   f"customer={r['customer_id']}  goal={r['goal']}")
    typer.echo(f"{len(rows)} recorded retrievals by {caller} in {who}")
