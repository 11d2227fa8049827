"""A pack is read only from inside its folder, within size limits, as UTF-8; ``validate`` and
``load`` refuse the same packs (load runs validate's checks first), each problem naming its
file and the fix. Loads here are refused before anything is written, so no embedding runs."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hopweave.cli import app
from hopweave.errors import PackError
from hopweave.pack import files as pack_files
from hopweave.pack.init import init_pack
from hopweave.pack.loader import PackInvalidError, load_pack
from hopweave.pack.validate import validate_pack


@pytest.fixture()
def pack(tmp_path: Path) -> Path:
    d = tmp_path / "shop"
    init_pack(d, name="shop", tenant="shop-co")
    return d


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _refused(pack: Path, tmp_path: Path, *needles: str) -> list[str]:
    """validate reports problems containing every needle; load refuses with the same problems."""
    probs = [str(p) for p in validate_pack(pack)]
    for n in needles:
        assert any(n in p for p in probs), (n, probs)
    with pytest.raises(PackInvalidError) as exc:
        load_pack(pack, tmp_path / "store", with_vectors=False)
    assert [str(p) for p in exc.value.problems] == probs
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").iterdir())
    return probs


def test_starter_pack_validates_clean(pack: Path) -> None:
    assert validate_pack(pack) == []


@pytest.mark.parametrize("target", ["/etc/passwd", "outside"])
def test_a_corpus_symlink_out_of_the_pack_is_refused_by_validate_and_load(pack: Path, tmp_path: Path,
                                                                          target: str) -> None:
    if target == "outside":
        out = tmp_path / "elsewhere"
        out.mkdir()
        src = pack / "corpus" / "refund-policy-basic-v2.md"
        (out / "secret.md").write_text(src.read_text(encoding="utf-8").replace("refund-policy-basic",
                                                                               "secret-doc"), encoding="utf-8")
        dest = out / "secret.md"
    else:
        dest = Path(target)
    os.symlink(dest, pack / "corpus" / "linked.md")
    _refused(pack, tmp_path, "corpus/linked.md", "outside the pack folder")


def test_manifest_paths_outside_the_pack_are_refused(pack: Path, tmp_path: Path) -> None:
    _edit(pack / "hopweave.yaml", "utterances: utterances/", "utterances: /etc/")
    _edit(pack / "hopweave.yaml", "sessions: sessions/", "sessions: ../")
    _refused(pack, tmp_path, "[utterances]", "[sessions]")


def test_a_goal_folder_symlinked_out_is_refused(pack: Path, tmp_path: Path) -> None:
    out = tmp_path / "goals_elsewhere"
    (pack / "goals").rename(out)
    os.symlink(out, pack / "goals")
    _refused(pack, tmp_path, "outside the pack folder")


@pytest.mark.parametrize("tenant", ["../../etc", "_global"])
def test_a_tenant_the_store_cannot_hold_is_refused(pack: Path, tmp_path: Path, tenant: str) -> None:
    text = (pack / "hopweave.yaml").read_text(encoding="utf-8").replace("shop-co", tenant)
    (pack / "hopweave.yaml").write_text(text, encoding="utf-8")
    _refused(pack, tmp_path, "tenant")


def test_a_goal_defined_in_two_files_is_refused(pack: Path, tmp_path: Path) -> None:
    (pack / "goals" / "copy.yaml").write_text((pack / "goals" / "refund_request.yaml").read_text(encoding="utf-8"),
                                              encoding="utf-8")
    _refused(pack, tmp_path, "goal 'RefundRequest' is also defined in goals/copy.yaml")


def test_an_unknown_link_value_is_refused(pack: Path, tmp_path: Path) -> None:
    _edit(pack / "corpus" / "refund-policy-basic-v2.md", "plan: Basic", "plan: Platinum")
    _refused(pack, tmp_path, "plan 'Platinum' matches no Plan node")


def test_unknown_domain_settings_are_refused_by_load_too(pack: Path, tmp_path: Path) -> None:
    _edit(pack / "hopweave.yaml", "subject: {label: Member,", "subject: {label: Memberz,")
    _edit(pack / "hopweave.yaml", "- {entity: Plan, subject_property: plan}", "- {entity: Plan, subject_property: plam}")
    _refused(pack, tmp_path, "label 'Memberz' is not in the schema")


@pytest.mark.parametrize(("old", "new", "needle"), [
    ("top_k: 3", "top_k: lots", "top_k"),
    ("clause_separators: \"[.?!;]+|,", "clause_separators: \"([a-z|,", "valid regular expression"),
])
def test_classifier_settings_that_break_every_request_are_refused(pack: Path, tmp_path: Path, old: str, new: str,
                                                                  needle: str) -> None:
    _edit(pack / "classifier.yaml", old, new)
    _refused(pack, tmp_path, needle)


def test_bad_sessions_and_scenarios_are_refused_by_load_too(pack: Path, tmp_path: Path) -> None:
    (pack / "sessions" / "broken.json").write_text("{not json", encoding="utf-8")
    _edit(pack / "scenarios" / "01_refund_pro.yaml", "facts:", "fact:")
    _refused(pack, tmp_path, "sessions/broken.json", "scenarios/01_refund_pro.yaml")


def test_validate_reports_every_scenario_problem_in_one_run(pack: Path) -> None:
    sc = (pack / "scenarios" / "01_refund_pro.yaml").read_text(encoding="utf-8")
    (pack / "scenarios" / "02_missing_session.yaml").write_text(
        sc.replace("name: refund_pro", "name: missing").replace("alex.json", "nobody.json"), encoding="utf-8")
    (pack / "scenarios" / "03_unknown_goal.yaml").write_text(
        sc.replace("name: refund_pro", "name: unknown").replace("goal: RefundRequest", "goal: RefundRequset"),
        encoding="utf-8")
    result = CliRunner().invoke(app, ["validate", str(pack)])
    assert result.exit_code == 2
    assert "scenarios/02_missing_session.yaml [session_file]" in result.output, result.output
    assert "does not exist" in result.output
    assert "scenarios/03_unknown_goal.yaml [expect.goal]: goal 'RefundRequset'" in result.output


def test_every_base_label_conflict_is_reported(pack: Path) -> None:
    _edit(pack / "schema.yaml", "labels:\n", "labels:\n  - {name: Document, subgraph: semantic}\n"
          "  - {name: GoalType, subgraph: semantic}\n")
    msgs = [p.message for p in validate_pack(pack)]
    assert any("'Document' is defined by the base schema" in m for m in msgs), msgs
    assert any("'GoalType' is defined by the base schema" in m for m in msgs), msgs


def test_a_file_over_its_size_limit_is_refused_quickly(pack: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(pack_files.FILE_LIMITS, "goal", 1024)
    _refused(pack, tmp_path, "goals/refund_request.yaml: goal file is", "over the 1 KB limit")


def test_a_section_over_its_size_limit_is_refused(pack: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(pack_files.SECTION_LIMITS, "corpus", 1000)
    _refused(pack, tmp_path, "limit of the corpus section")


def test_schema_labels_not_a_list_is_a_typed_problem(pack: Path, tmp_path: Path) -> None:
    (pack / "schema.yaml").write_text("extends: base\nlabels: 5\n", encoding="utf-8")
    _refused(pack, tmp_path, "schema.yaml: schema `labels:` must be a list of mappings")


def test_non_utf8_and_corrupt_graph_files_name_the_file(pack: Path, tmp_path: Path) -> None:
    with open(pack / "graph" / "vocabulary.jsonl", "ab") as fh:
        fh.write(b'{"node": "PLAN_X", "label": "Plan", "properties": {"name": "\xff\xfe"}}\n')
    (pack / "graph" / "extra.jsonl.gz").write_bytes(gzip.compress(b'{"node": "X"}\n' * 100)[:40])
    _edit(pack / "hopweave.yaml", "files: [graph/vocabulary.jsonl]", "files: [graph/vocabulary.jsonl, graph/extra.jsonl.gz]")
    _refused(pack, tmp_path, "graph/vocabulary.jsonl: graph file is not UTF-8 text",
             "graph/extra.jsonl.gz: graph file is not a readable gzip file")


def test_a_binary_corpus_file_names_the_file(pack: Path, tmp_path: Path) -> None:
    (pack / "corpus" / "scan.md").write_bytes(b"%PDF-1.7\n\x00\xff\xfe\x80binary")
    _refused(pack, tmp_path, "corpus/scan.md: corpus document is not UTF-8 text")


def test_pack_files_refuse_an_absolute_or_escaping_path(tmp_path: Path) -> None:
    pf = pack_files.PackFiles(tmp_path)
    for rel in ("/etc", "../x", "a/../../x"):
        with pytest.raises(PackError):
            pf.path(rel, "corpus")
    (tmp_path / "ok.txt").write_text("fine", encoding="utf-8")
    assert pf.read_text("ok.txt", "corpus") == "fine"


def test_init_into_an_unwritable_place_is_a_typed_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["init", "/proc/hopweave-pack"])
    assert result.exit_code == 2 and "cannot write" in result.output and "Traceback" not in result.output, \
        result.output


def test_validate_json_names_the_pack_and_its_folder(pack: Path) -> None:
    import json

    result = CliRunner().invoke(app, ["validate", str(pack), "--json"])
    out = json.loads(result.output)
    assert (out["pack"], out["folder"], out["ok"]) == ("shop", str(pack), True)


def test_a_case_fact_naming_a_missing_pattern_is_a_problem(pack: Path) -> None:
    import yaml

    f = pack / "goals" / "refund_request.yaml"
    raw = yaml.safe_load(f.read_text(encoding="utf-8"))
    raw["goal"]["case"] = {"facts": {"amount": {"pattern": "refund_invoicez", "property": "amount"}}}
    f.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    probs = [str(p) for p in validate_pack(pack)]
    assert any("case.facts.amount]: names pattern 'refund_invoicez'" in p for p in probs), probs
