"""``hopweave audit SCENARIOS --as-of DATE --html report.html`` (issue 14): every scenario, what
the agent saw, the revisions in force, pass/fail, what changed by the audit date; readable HTML."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from engine_store import SCENARIOS
from typer.testing import CliRunner

from hopweave.cli import app
from hopweave.cli.audit_cmds import render_audit
from hopweave.engine.audit import audit

PICK = ["43_waiver_policy_before_v3.yaml", "45_waiver_policy_after_v4.yaml", "05_retired_promo_trap.yaml"]
AUDIT_DATE = "2026-11-30"


class _Tags(HTMLParser):
    VOID = {"meta", "br"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):  # type: ignore[no-untyped-def]
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)

    def handle_data(self, data):  # type: ignore[no-untyped-def]
        self.text.append(data)


@pytest.fixture(scope="module")
def rows(engine, tmp_path_factory):  # type: ignore[no-untyped-def]
    d = tmp_path_factory.mktemp("audit")
    for name in PICK:
        shutil.copy(SCENARIOS / name, d / name)
    src = (SCENARIOS / "05_retired_promo_trap.yaml").read_text()
    (d / "99_markup.yaml").write_text(src.replace("name: retired_promo_trap", "name: markup_in_utterance").replace(
        "utterance: I heard", "utterance: <script>alert(1)</script> I heard"))
    for p in d.glob("*.yaml"):
        p.write_text(p.read_text().replace("session_file: ../sessions/", f"session_file: {SCENARIOS.parent}/sessions/"))
    return audit(engine, [d], AUDIT_DATE)


def test_rows_say_what_was_in_force_and_what_changed(rows) -> None:  # type: ignore[no-untyped-def]
    by = {r.scenario: r for r in rows}
    before = by["waiver_policy_in_force_before_v3"]
    assert before.passed and before.as_of.startswith("2025-06-10")
    wp = next(d for d in before.documents if d.document_id == "waiver-policy")
    assert (wp.revision, wp.valid_from, wp.valid_until) == ("v2", "2024-01-01", "2026-01-01") and "3.2" in wp.sections
    assert "waiver-policy: v2 -> v4" in before.changes and before.context_changed
    assert "Applicable policy" in before.sections
    # the procedure in force then, with its validity, and what replaced it by the audit date
    wf = next(p for p in before.procedure if p.label == "Workflow")
    assert (wf.id, wf.valid_from, wf.valid_until) == ("WF_LateFeeDispute_v1", "2021-03-01", "2026-01-01")
    assert {p.id for p in before.procedure if p.label == "Rule"} >= {"RULE_LateFeeDispute_1_v2",
                                                                      "RULE_LateFeeDispute_3_v2"}
    assert "Workflow 'LateFeeDispute workflow': WF_LateFeeDispute_v1 -> WF_LateFeeDispute_v3" in before.procedure_changes
    assert ("Rule 'Platinum courtesy waiver': RULE_LateFeeDispute_1_v2 -> RULE_LateFeeDispute_1_v4"
            in before.procedure_changes)
    after = by["waiver_policy_in_force_after_v4"]
    assert not any(c.startswith("waiver-policy") for c in after.changes)  # v4 is still in force on the audit date
    assert after.procedure_changes == ()  # and so are workflow v3 and the v4 rules
    assert all(r.passed for r in rows)


def test_the_html_is_readable_escaped_and_deterministic(rows) -> None:  # type: ignore[no-untyped-def]
    page = render_audit(rows, AUDIT_DATE, "scenarios")
    assert page == render_audit(rows, AUDIT_DATE, "scenarios")
    p = _Tags()
    p.feed(page)
    assert p.errors == [] and p.stack == []
    text = " ".join(p.text)
    assert "4/4 scenarios passed" in text and "Documents in force and cited" in text
    assert "waiver-policy: v2 -> v4" in text and "in force 2024-01-01 .. 2026-01-01" in text
    assert "Procedure in force (workflows, rules)" in text and "WF_LateFeeDispute_v1" in text
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_cli_writes_the_report(cli_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["audit", str(SCENARIOS / PICK[0]), "--as-of", AUDIT_DATE, "--html", str(out),
                                   "--store", str(cli_store)])
    assert res.exit_code == 0, res.output
    assert "waiver-policy: v2 -> v4" in res.stdout and out.read_text().startswith("<!DOCTYPE html>")
    bad = CliRunner().invoke(app, ["audit", str(SCENARIOS / PICK[0]), "--as-of", "yesterday", "--store", str(cli_store)])
    assert bad.exit_code != 0


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed (Debian: apt-get install chromium)")
def test_the_report_renders_in_headless_chromium(rows, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = tmp_path / "report.html"
    page.write_text(render_audit(rows, AUDIT_DATE, "scenarios"), encoding="utf-8")
    base = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--window-size=1280,1600", f"--user-data-dir={tmp_path / 'profile'}"]
    shot = tmp_path / "report.png"
    subprocess.run([*base, f"--screenshot={shot}", page.as_uri()], check=True, capture_output=True, timeout=120)
    dom = subprocess.run([*base, "--dump-dom", page.as_uri()], check=True, capture_output=True, text=True,
                         timeout=120).stdout
    assert shot.stat().st_size > 10_000
    assert len(re.findall(r"<tr", dom)) == 1 + len(rows) and "waiver-policy: v2 -&gt; v4" in dom
