"""Traces pin what was seen (issue 14): record, load a policy update (a document revision and the
rule revision that goes with it), replay --as-recorded byte-identically, --as-of-now shows the new
text and the new rule, trace diff names the changed chunks and facts."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterator

import pytest
from domains import DELTABANK_REGISTRY, MARIA
from engine_store import EXAMPLE
from typer.testing import CliRunner

from hopweave.cli import app
from hopweave.engine import record as rec
from hopweave.engine.engine import Engine
from hopweave.engine.replay import REPLAY_CONFIG, as_recorded, replay_trace
from hopweave.models.filters import And, Eq

QUESTION = "Can you waive the late fee on my Platinum card? What does your waiver policy allow per year?"
AT = "2026-10-05"  # waiver-policy v4 in force (2026-09-01 ..)
V5_TEXT = "one fee waiver in any rolling 12-month period at the discretion of the support agent, up to $100"
#: the courtesy-waiver rule as revised with v5 (the v4 revision, RULE_LateFeeDispute_1_v4, gets its valid_until)
RULE_V5 = "RULE_LateFeeDispute_1_v5"
RULE_V5_CONDITION = 'tier == "Platinum" and waivers_last_12_months == 0 and amount <= 100'


def _supersede_rule(graph) -> None:
    """The procedure side of the update: a rule revision in force from 2026-10-01, the v4 one
    closed on that day (a load keeps history: the old node stays, with its end date)."""
    from hopweave.graph.base import Edge, Node

    graph.write("deltabank", [
        Node(id="RULE_LateFeeDispute_1_v4", label="Rule", props={"valid_until": "2026-10-01"}),
        Node(id=RULE_V5, label="Rule", props={
            "name": "Platinum courtesy waiver", "condition": RULE_V5_CONDITION,
            "action": "waive at the agent's discretion without escalation", "enabled": True,
            "valid_from": "2026-10-01",
            "summary": f"Rule 'Platinum courtesy waiver': if {RULE_V5_CONDITION} then waive at the agent's discretion"}),
    ], [Edge("CASESTATE_LateFeeDispute_open", RULE_V5, "MATCHES")])


def _update(tmp: Path) -> Path:
    """A policy update: v5 back-dated to 2026-10-01 (a correction), v4 closed on that day."""
    d = tmp / "update"
    d.mkdir()
    v4 = (EXAMPLE / "corpus" / "waiver-policy-v4.md").read_text()
    closed = v4.replace("version: current", "version: superseded").replace(
        "valid_from: '2026-09-01'\n", "valid_from: '2026-09-01'\nvalid_until: '2026-10-01'\n")
    v5 = v4.replace("revision: v4", "revision: v5").replace("waiver-policy-v4.pdf", "waiver-policy-v5.pdf").replace(
        "valid_from: '2026-09-01'", "valid_from: '2026-10-01'").replace("supersedes: v3", "supersedes: v4").replace(
        "up to $75, without escalation", "up to $100, without escalation").replace("(US) (v4)", "(US) (v5)")
    (d / "waiver-policy-v4.md").write_text(closed)
    (d / "waiver-policy-v5.md").write_text(v5)
    return d


@pytest.fixture(scope="module")
def travelled(cli_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A store copy with a trace recorded at AT, then the policy update loaded. Yields
    (store, trace id)."""
    from hopweave.pack.corpus import ingest_corpus, load_corpus

    tmp = tmp_path_factory.mktemp("timetravel")
    store = tmp / "store"
    shutil.copytree(cli_store, store)
    eng = Engine.open(store, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG)
    try:
        before = eng.retrieve(QUESTION, session=MARIA, as_of=AT)
        assert before.recorded and "up to $75, without escalation" in before.context.text
        assert "amount <= 75" in before.context.text  # the v4 rule revision, in force at AT
        docs = load_corpus(_update(tmp), eng.graph.schema, "deltabank")
        ingest_corpus(eng.index, eng.embedder, docs)
        _supersede_rule(eng.graph)
    finally:
        eng.close()
    yield store, before.trace_id


@pytest.fixture(scope="module")
def eng(travelled: tuple[Path, str]) -> Iterator[Engine]:
    e = Engine.open(travelled[0], domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG)
    yield e
    e.close()


def test_the_trace_pins_what_was_seen(eng: Engine, travelled: tuple[Path, str]) -> None:
    t = rec.load(eng.graph, "deltabank", travelled[1])
    revs = {(p["document_id"], p["revision"]) for p in t.pins["chunks"]}
    assert ("waiver-policy", "v4") in revs and all(len(p["text_hash"]) == 32 for p in t.pins["chunks"])
    assert t.pins["facts"] and set(t.pins["facts"]) <= set(t.fact_ids)
    assert t.pins["embedding_space"] in (t.store_revision or "")
    assert t.context_skeleton is not None and "\x1fchunk:" in t.context_skeleton
    assert "up to $75" not in t.context_skeleton.split("[Applicable policy")[1].split("\n\n")[0]  # a slot
    assert t.patterns and t.ranking_profile and "@" in t.ranking_profile and t.metagraph_revision


def test_as_recorded_is_byte_identical_after_the_update(eng: Engine, travelled: tuple[Path, str]) -> None:
    r = as_recorded(eng, "deltabank", travelled[1])
    t = rec.load(eng.graph, "deltabank", travelled[1])
    assert r.identical and r.text == t.context_text and r.rebuilt_hash == t.context_hash
    assert r.chunks and all(c.status == "same" for c in r.chunks)
    # the superseded rule is named (its valid_until was set since); every other fact is unchanged
    assert [(c.id, c.status) for c in r.facts if c.status != "same"] == [("RULE_LateFeeDispute_1_v4", "changed")]
    assert "up to $75, without escalation" in r.text and "up to $100" not in r.text
    assert "amount <= 75" in r.text and "amount <= 100" not in r.text


def test_as_of_now_shows_the_new_text_and_diff_names_the_chunks(eng: Engine, travelled: tuple[Path, str]) -> None:
    result, d = replay_trace(eng, "deltabank", travelled[1], record=False, as_of=AT)
    assert V5_TEXT in result.context.text and "up to $75, without escalation" not in result.context.text
    assert "amount <= 100" in result.context.text and "amount <= 75" not in result.context.text
    assert not d.same_context
    assert "RULE_LateFeeDispute_1_v4" in d.changes["fact_ids"]["removed"]
    assert RULE_V5 in d.changes["fact_ids"]["added"]
    assert d.changes["documents"] == {"removed": ["waiver-policy@v4"], "added": ["waiver-policy@v5"]}
    assert any(x.startswith("waiver-policy-v5.pdf v5 section 3.2 (") for x in d.changes["chunks"]["added"])
    assert any(x.startswith("waiver-policy-v4.pdf v4 section 3.2 (") for x in d.changes["chunks"]["removed"])
    assert "chunks: + waiver-policy-v5.pdf v5 section 3.2" in d.render()


def test_a_chunk_edited_in_place_is_named_and_the_words_as_seen_kept(eng: Engine, travelled: tuple[Path, str],
                                                                     tmp_path: Path) -> None:
    t = rec.load(eng.graph, "deltabank", travelled[1])
    pin = next(p for p in t.pins["chunks"] if p["section"] == "3.2")
    where = And(clauses=(Eq(field="chunk_id", value=pin["chunk_id"]),))
    original = eng.index.fetch("deltabank", where)[0]["text"]
    eng.index.set_payload("deltabank", {"text": original.replace("$75", "$80")}, where)
    try:
        r = as_recorded(eng, "deltabank", travelled[1])
        assert r.identical and r.rebuilt_hash == t.context_hash  # the pinned text, not today's
        assert [c.status for c in r.chunks if c.id == pin["chunk_id"]] == ["changed"]
        assert "up to $75, without escalation" in r.text and "$80" not in r.text
    finally:
        eng.index.set_payload("deltabank", {"text": original}, where)
    assert as_recorded(eng, "deltabank", travelled[1]).identical


@pytest.mark.slow  # several seconds (processes, CLI runs): the slow suite, which CI also runs
def test_cli_replay_as_recorded_and_as_of_now(travelled: tuple[Path, str], eng: Engine) -> None:
    eng.close()  # the CLI opens the store itself (one opener of the shard at a time)
    store, trace = travelled
    run = CliRunner()
    res = run.invoke(app, ["replay", "--as-recorded", trace, "--tenant", "deltabank", "--store", str(store)])
    assert res.exit_code == 0, res.output
    assert "byte-identical" in res.stdout and "up to $75, without escalation" in res.stdout
    res = run.invoke(app, ["replay", "--as-of-now", trace, "--as-of", AT, "--tenant", "deltabank",
                           "--store", str(store), "--no-record"])
    assert res.exit_code == 1, res.output  # the context differs from the recording
    assert "waiver-policy@v5" in res.stdout and "waiver-policy-v5.pdf v5 section 3.2" in res.stdout
    # recorded, the re-run is a trace of its own; `trace diff` names the changed chunks and facts
    res = run.invoke(app, ["replay", "--as-of-now", trace, "--as-of", AT, "--tenant", "deltabank",
                           "--store", str(store), "--json"])
    assert res.exit_code == 1, res.output
    import json

    now = json.loads(res.stdout)
    new_trace = now["trace_id"]
    res = run.invoke(app, ["trace", "diff", trace, new_trace, "--tenant", "deltabank", "--store", str(store)])
    assert res.exit_code == 0, res.output
    assert "chunks: + waiver-policy-v5.pdf v5 section 3.2" in res.stdout
    assert "chunks: - waiver-policy-v4.pdf v4 section 3.2" in res.stdout
    assert f"fact_ids: + {RULE_V5}" in res.stdout and "fact_ids: - RULE_LateFeeDispute_1_v4" in res.stdout
    res = run.invoke(app, ["replay", "--as-recorded", trace, "--store", str(store)], env={"HOPWEAVE_TENANT": ""})
    assert res.exit_code != 0 and "--tenant" in res.output
