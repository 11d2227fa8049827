"""The engine commands: retrieve --json, replay, trace show|diff|used-by after a pattern edit, demo."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from engine_store import EXAMPLE, SCENARIOS
from typer.testing import CliRunner

from hopweave.cli import app

RUN = CliRunner()
MARIA_FILE = str(EXAMPLE / "sessions" / "maria.json")
UTT = "I want to dispute this $39 late fee on my Platinum card."


def _ok(args: list[str]):
    res = RUN.invoke(app, args)
    assert res.exit_code == 0, res.output
    return res


def _retrieve(store: Path) -> dict:
    res = _ok(["retrieve", UTT, "--session", MARIA_FILE, "--as-of", "2026-05-12", "--store", str(store), "--json"])
    return json.loads(res.stdout)


@pytest.mark.slow  # several seconds (processes, CLI runs): the slow suite, which CI also runs
def test_retrieve_replay_and_trace_diff_after_a_pattern_edit(cli_store: Path, tmp_path: Path) -> None:
    # a copy of the session's store: the pattern edit below must not reach the other tests using it
    cli_store = Path(shutil.copytree(cli_store, tmp_path / "store"))
    before = _retrieve(cli_store)
    for key in ("trace_id", "goal", "confidence", "entities", "filter", "chunks", "facts", "context", "tokens",
                "degraded", "timings_ms"):
        assert key in before
    assert before["goal"] == "LateFeeDispute" and "Waiver of the $39 late fee on 2024-09-12" in before["context"]

    res = _ok(["replay", str(SCENARIOS / "01_maria_late_fee.yaml"), str(SCENARIOS / "24_search_store_down.yaml"),
               "--store", str(cli_store), "--twice"])
    assert "2/2 scenarios passed (each replayed twice, byte-identical)" in res.stdout
    same = _ok(["trace", "replay", before["trace_id"], "--tenant", "deltabank", "--store", str(cli_store)]).stdout
    assert "identical context and plan" in same

    # Edit a pattern (a new version through the write gates): waivers of the last year only.
    from hopweave.graph import open_graph_store
    from hopweave.graph.metagraph_io import write_metagraph
    from hopweave.models.metagraph import Predicate, RelativeTime

    g = open_graph_store(cli_store)
    old = next(p for p in g.patterns("LateFeeDispute") if p.name == "waiver_history")
    preds = tuple(Predicate(on="target", property="timestamp", op="gte",
                            value=RelativeTime(amount=-1, unit="years", start_of="year"))
                  if p.property == "timestamp" else p for p in old.predicates)
    write_metagraph(g, [], [old.model_copy(update={"predicates": preds, "version": 2})])
    g.close()

    res = RUN.invoke(app, ["trace", "replay", before["trace_id"], "--tenant", "deltabank", "--store", str(cli_store)])
    assert res.exit_code == 1, res.output  # the recorded run no longer reproduces: show why
    assert "patterns: ~ waiver_history@1 -> @2" in res.stdout

    after = _retrieve(cli_store)
    assert after["trace_id"] != before["trace_id"]
    assert "Waiver of the $39 late fee on 2024-09-12" not in after["context"]

    diff = _ok(["trace", "diff", before["trace_id"], after["trace_id"], "--tenant", "deltabank",
                "--store", str(cli_store)]).stdout
    assert "patterns: ~ waiver_history@1 -> @2" in diff
    assert "-Waiver of the $39 late fee on 2024-09-12" in diff
    assert "fact_ids: - EVT_4421_WAIVER_20240912" in diff

    used = _ok(["trace", "used-by", "waiver_history", "--version", "2", "--tenant", "deltabank",
                "--store", str(cli_store)]).stdout
    assert after["trace_id"] in used and before["trace_id"] not in used

    show = _ok(["trace", "show", after["trace_id"], "--tenant", "deltabank", "--store", str(cli_store)]).stdout
    assert "<redacted: derived from the utterance>" in show and "waiver_history@2" in show and "[Customer]" in show

    res = RUN.invoke(app, ["trace", "show", after["trace_id"], "--tenant", "northbank", "--store", str(cli_store)])
    assert res.exit_code == 2 and "NotFoundError" in res.output  # another tenant cannot see it


@pytest.mark.slow  # several seconds (processes, CLI runs): the slow suite, which CI also runs
def test_demo_loads_a_fresh_store_and_prints_the_block(tmp_path: Path) -> None:
    from generator.build import sized_pack  # the pack's generator step (engine_store puts it on sys.path)

    pack = sized_pack(tmp_path, nodes=1500, seed=4421)  # a small copy of the example pack
    res = _ok(["demo", str(pack), "--store", str(tmp_path / "store")])
    out = res.stdout
    for s in ("[Customer]", "[Event]", "[Payment history]", "[Waiver history]",
              "[Applicable policy — waiver-policy-v3.pdf, section 3.2]",
              "[Precedent — 3 past decision traces from similar cases]", "stage timings (ms)"):
        assert s in out, s
    assert "gold-waiver-policy" not in out and "waiver-policy-v2" not in out
