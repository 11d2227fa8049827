"""`hopweave validate` on a pack with planted mistakes reports each one, with its file and a fix,
and exits 2; the untouched starter pack validates clean."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hopweave.cli import app
from hopweave.pack.init import init_pack
from hopweave.pack.validate import validate_pack


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


@pytest.fixture()
def pack(tmp_path: Path) -> Path:
    d = tmp_path / "shop"
    init_pack(d, name="shop", tenant="shop-co")
    return d


def test_starter_pack_is_clean(pack: Path) -> None:
    assert validate_pack(pack) == []
    result = CliRunner().invoke(app, ["validate", str(pack)])
    assert result.exit_code == 0, result.output


#: (file the problem must name, a regex its message or record must match)
PLANTED: list[tuple[str, str]] = []


def _plant(d: Path) -> list[tuple[str, str]]:
    m = d / "hopweave.yaml"
    out = []
    _edit(m, "default_tenant: shop-co", "default_tenant: nobody")
    out.append(("hopweave.yaml", r"default_tenant 'nobody'"))
    _edit(m, "trace_relationship: FOR_MEMBER}", "trace_relationship: FOR_MEMBR}")
    out.append(("hopweave.yaml", r"FOR_MEMBR"))
    _edit(m, "owner_path: [{type: BILLED,", "owner_path: [{type: BILLS,")
    out.append(("hopweave.yaml", r"BILLS"))
    _edit(m, "{entity: Plan, subject_property: plan}", "{entity: Plan, subject_property: tier}")
    out.append(("hopweave.yaml", r"no property 'tier'"))
    _edit(m, "{field: plan, relationship: FOR_PLAN", "{field: plann, relationship: FOR_PLAN")
    out.append(("hopweave.yaml", r"plann"))
    _append(m, "")
    g = d / "goals" / "refund_request.yaml"
    _edit(g, "edge_sequence: [{type: BILLED, direction: out}]", "edge_sequence: [{type: PAID_BY, direction: out}]")
    out.append(("goals/refund_request.yaml", r"PAID_BY"))
    _edit(g, "returns: [plan, summary]", "returns: [plan, summary, name]")
    out.append(("goals/refund_request.yaml", r"(?i)pii|name"))
    (d / "goals" / "broken.yaml").write_text("goal: [this is: not a mapping\n", encoding="utf-8")
    out.append(("goals/broken.yaml", r"."))
    _edit(d / "filters.yaml", "{entity: Plan, field: plan}", "{entity: Plan, field: colour}")
    out.append(("filters.yaml", r"colour"))
    _edit(d / "classifier.yaml", "calibration_file: classifier_calibration.json", "calibration_file: missing.json")
    out.append(("classifier.yaml", r"missing\.json"))
    v = d / "graph" / "vocabulary.jsonl"
    _append(v, '{"node": "PLAN_Gold", "label": "Tierr", "properties": {"name": "Gold"}}\n')
    out.append(("graph/vocabulary.jsonl", r"Tierr"))
    t = d / "graph" / "shop-co.jsonl"
    _append(t, '{"node": "INV_9", "label": "Invoice", "properties": {"amount": "lots"}}\n')
    out.append(("graph/shop-co.jsonl", r"amount"))
    _append(t, '{"edge": "BILLED", "from": "MEM_1001", "to": "INV_404"}\n')
    out.append(("graph/shop-co.jsonl", r"INV_404"))
    _append(t, '{"node": "MEM_7", "label": "Member", "properties": {"plan": "Pro"}\n')
    out.append(("graph/shop-co.jsonl", r"(?i)json"))
    _append(t, '{"node": "MEM_1001", "label": "Member", "properties": {"plan": "Pro"}}\n')
    out.append(("graph/shop-co.jsonl", r"MEM_1001"))
    _append(t, '{"node": "MEM_8", "label": "Member", "properties": {"shoe_size": 9}}\n')
    out.append(("graph/shop-co.jsonl", r"shoe_size"))
    c = d / "corpus" / "refund-policy-basic-v2.md"
    _edit(c, "plan: Basic\n", "plan: Basic\ncolour: red\n")
    out.append(("corpus/refund-policy-basic-v2.md", r"colour"))
    (d / "corpus" / "no-front-matter.md").write_text("# Just a heading\n\n## 1 Section\ntext\n", encoding="utf-8")
    out.append(("corpus/no-front-matter.md", r"."))
    (d / "sessions" / "stranger.json").write_text('{"tenant_id": "acme", "customer_id": "MEM_1"}', encoding="utf-8")
    out.append(("sessions/stranger.json", r"acme"))
    _edit(d / "scenarios" / "01_refund_pro.yaml", "goal: RefundRequest", "goal: Refund")
    out.append(("scenarios/01_refund_pro.yaml", r"Refund"))
    return out


def test_every_planted_mistake_is_reported_with_file_and_fix(pack: Path) -> None:
    planted = _plant(pack)
    assert len(planted) >= 20
    problems = validate_pack(pack)
    missing = []
    for file, rx in planted:
        hits = [p for p in problems if p.file == file and re.search(rx, f"{p.record or ''} {p.message}")]
        if not hits:
            missing.append((file, rx))
        for p in hits:
            assert p.fix, f"no fix for {p}"
    assert not missing, "not reported: " + repr(missing) + "\nreported:\n" + "\n".join(map(str, problems))
    result = CliRunner().invoke(app, ["validate", str(pack)])
    assert result.exit_code == 2
    assert "problem(s)" in result.output


def test_schema_mistake_is_reported_and_stops_dependent_checks(pack: Path) -> None:
    _edit(pack / "schema.yaml", "labels:\n", "labels:\n  - name: Document\n    subgraph: semantic\n")
    problems = validate_pack(pack)
    assert problems[0].file == "schema.yaml" and "Document" in problems[0].message
    assert any("skipped" in p.message for p in problems)


def test_a_folder_that_is_not_a_pack(tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    problems = validate_pack(tmp_path)
    assert [p.file for p in problems] == ["hopweave.yaml"] and "not a domain pack" in problems[0].message
    result = CliRunner().invoke(app, ["load", str(tmp_path), "--store", str(tmp_path / "store")])
    assert result.exit_code == 2 and "not a hopweave domain pack" in result.output
    assert not (tmp_path / "store").exists()
