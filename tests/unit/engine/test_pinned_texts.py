"""What was seen is kept: a trace pins the exact text of every chunk and fact line it showed
(content-addressed ``PinnedText`` nodes, one per distinct text), so ``replay --as-recorded``
rebuilds the context byte for byte after the cited passage is edited in place and re-ingested,
or deleted from the index; the re-run on today's store and ``audit --trace`` show the change."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Iterator, Mapping

import pytest
from domains import DELTABANK_REGISTRY, MARIA
from engine_store import EXAMPLE
from typer.testing import CliRunner

from hopweave.cli import app
from hopweave.engine import record as rec
from hopweave.engine.audit import audit_trace, word_diff
from hopweave.engine.engine import Engine
from hopweave.engine.pins import PIN_LABEL, SEP, full_hash, pin_id, rebuild, slots
from hopweave.engine.replay import REPLAY_CONFIG, as_recorded, replay_trace
from hopweave.models.common import parse_session
from hopweave.models.filters import FilterTree

TENANT = "deltabank"
QUESTION = "I want to dispute this $39 late fee, can you waive it?"
AT = "2026-05-12"  # waiver-policy v3 in force: section 3.2 says "up to $50, without escalation"
SEEN = "up to $50, without escalation"
EDITED = "up to $60, without escalation"


def _edited_v3(tmp: Path) -> Path:
    """waiver-policy v3 edited in place (same document, revision and section; other words)."""
    d = tmp / "edited"
    d.mkdir()
    v3 = (EXAMPLE / "corpus" / "waiver-policy-v3.md").read_text()
    assert SEEN in v3
    (d / "waiver-policy-v3.md").write_text(v3.replace(SEEN, EDITED))
    return d


@pytest.fixture(scope="module")
def edited(cli_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engine, str, Path]]:
    """A store copy with a trace recorded at AT, then v3 section 3.2 edited in place and
    re-ingested (the corpus step of ``hopweave load``). Yields (engine on it, trace id, store)."""
    from hopweave.pack.corpus import ingest_corpus, load_corpus

    tmp = tmp_path_factory.mktemp("pinned")
    store = tmp / "store"
    shutil.copytree(cli_store, store)
    eng = Engine.open(store, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG)
    before = eng.retrieve(QUESTION, session=MARIA, as_of=AT)
    assert before.recorded and SEEN in before.context.text
    ingest_corpus(eng.index, eng.embedder, load_corpus(_edited_v3(tmp), eng.graph.schema, TENANT))
    yield eng, before.trace_id, store
    eng.close()


def _pinned_ids(t: rec.RecordedTrace) -> set[str]:
    assert t.context_skeleton is not None
    ids = {s.removeprefix("text:") for s in slots(t.context_skeleton) if s.startswith("text:")}
    return ids | {p["text_id"] for p in t.pins["chunks"]}


def test_every_chunk_and_fact_line_is_pinned_once_by_content(edited: tuple[Engine, str, Path]) -> None:
    eng, tid, _ = edited
    t = rec.load(eng.graph, TENANT, tid)
    assert t.context_skeleton is not None
    assert "Maria Lopez" not in t.context_skeleton and SEEN not in t.context_skeleton  # fact line, passage: slots
    assert "[Customer]" in t.context_skeleton  # headers stay literal
    ids = _pinned_ids(t)
    assert len(ids) >= 10
    for pid in ids:
        node = eng.graph.get_node(TENANT, pid)
        assert node is not None and node.label == PIN_LABEL
        text = node.props["text"]
        assert pid == pin_id(TENANT, text) and node.props["sha256"] == full_hash(text) and SEP not in text
    assert eng.graph.get_node("northbank", next(iter(ids))) is None  # tenant-scoped like the trace
    # the pins of the passage as seen: the old words, though the index holds the new ones today
    pin = next(p for p in t.pins["chunks"] if p["document_id"] == "waiver-policy" and p["section"] == "3.2")
    assert SEEN in eng.graph.get_node(TENANT, pin["text_id"]).props["text"]  # type: ignore[union-attr]


def test_a_second_trace_reuses_the_texts_already_pinned(edited: tuple[Engine, str, Path]) -> None:
    eng, tid, _ = edited
    r = eng.retrieve("How much is the late fee on my card?", session=MARIA, as_of=AT, record=False)
    session = parse_session(MARIA, "maria")
    nodes, edges = rec.build(r, session, eng.graph, eng.settings_for(TENANT).subject)
    pinned_edges = {e.dst for e in edges if e.type == "PINNED"}
    new_pins = {n.id for n in nodes if n.label == PIN_LABEL}
    stored = _pinned_ids(rec.load(eng.graph, TENANT, tid))
    shared = pinned_edges & stored
    assert shared, "the customer's lines are the same texts: linked, not written again"
    assert not (new_pins & stored) and new_pins <= pinned_edges
    again = rec.build(r, session, eng.graph, eng.settings_for(TENANT).subject)
    assert again == (nodes, edges)  # same input, same store: the same nodes and edges


def test_as_recorded_is_byte_identical_after_an_in_place_edit(edited: tuple[Engine, str, Path]) -> None:
    eng, tid, _ = edited
    t = rec.load(eng.graph, TENANT, tid)
    r = as_recorded(eng, TENANT, tid)
    assert r.identical and r.text == t.context_text and r.rebuilt_hash == t.context_hash and r.lost == 0
    assert SEEN in r.text and EDITED not in r.text
    changed = [c for c in r.chunks if c.status != "same"]
    assert [c.status for c in changed] == ["changed"] and "waiver-policy-v3.pdf v3 §3.2" in changed[0].what
    assert "byte-identical" in r.render() and f"audit --trace {tid}" in r.render()


def test_the_re_run_on_today_s_store_shows_the_edit(edited: tuple[Engine, str, Path]) -> None:
    eng, tid, _ = edited
    result, d = replay_trace(eng, TENANT, tid, record=False, as_of=AT)
    assert EDITED in result.context.text and SEEN not in result.context.text
    assert not d.same_context


def test_audit_trace_shows_the_words_as_seen_against_today(edited: tuple[Engine, str, Path]) -> None:
    eng, tid, _ = edited
    a = audit_trace(eng, TENANT, tid)
    assert a.identical and a.as_of is not None and a.today_as_of == a.as_of
    changed = [c for c in a.chunks if c.status == "changed"]
    assert len(changed) == 1 and changed[0].as_seen and SEEN in changed[0].as_seen
    assert changed[0].today and EDITED in changed[0].today
    assert "[-$50,-] {+$60,+}" in changed[0].words
    assert any(ln.startswith("-") and SEEN in ln for ln in a.context_diff)
    assert any(ln.startswith("+") and EDITED in ln for ln in a.context_diff)
    out = a.render()
    assert "byte-identical" in out and "[-$50,-] {+$60,+}" in out
    assert audit_trace(eng, TENANT, tid) == a  # deterministic


class _Without:
    """The index with one document deleted (its chunks no longer fetched)."""

    def __init__(self, index: Any, document_id: str) -> None:
        self.index, self.document_id = index, document_id

    def fetch(self, tenant_id: str, where: FilterTree | Mapping[str, object] | None = None,
              current_only: bool = False, limit: int | None = None) -> list[dict[str, object]]:
        rows = self.index.fetch(tenant_id, where, current_only=current_only, limit=limit)
        return [p for p in rows if p.get("document_id") != self.document_id]


def test_as_recorded_survives_the_document_deleted_and_no_index(edited: tuple[Engine, str, Path]) -> None:
    eng, tid, _ = edited
    t = rec.load(eng.graph, TENANT, tid)
    gone = rebuild(t, _Without(eng.index, "waiver-policy"), eng.graph, TENANT)  # type: ignore[arg-type]
    assert gone.identical and gone.text == t.context_text and SEEN in gone.text
    assert {c.status for c in gone.chunks if "waiver-policy" in c.what} == {"missing"}
    assert "missing:" in gone.render()
    blind = rebuild(t, None, eng.graph, TENANT)
    assert blind.identical and blind.text == t.context_text


def test_a_trace_without_pinned_texts_still_falls_back_to_the_index(edited: tuple[Engine, str, Path]) -> None:
    """Traces recorded before texts were pinned fill chunk slots from the index, and an edit in
    place is then reported as lost (the old behaviour, named)."""
    eng, tid, _ = edited
    t = rec.load(eng.graph, TENANT, tid)
    assert t.context_skeleton is not None
    pieces = t.context_skeleton.split(SEP)
    for i in range(1, len(pieces), 2):
        if pieces[i].startswith("text:"):
            pieces[i] = eng.graph.get_node(TENANT, pieces[i][5:]).props["text"]  # type: ignore[union-attr]
        else:
            pieces[i] = SEP + pieces[i] + SEP
    legacy = t.model_copy(update={"context_skeleton": "".join(pieces), "pins": {
        **t.pins, "chunks": [{k: v for k, v in p.items() if k != "text_id"} for p in t.pins["chunks"]]}})
    r = rebuild(legacy, eng.index, eng.graph, TENANT)
    assert not r.identical and r.lost == 1 and "is no longer in the store as recorded" in r.text


def test_word_diff() -> None:
    assert word_diff("a b c", "a b c") == ""
    assert word_diff("one two three four five six seven eight nine ten", "one two three four five six "
                     "SEVEN eight nine ten", around=2) == "… five six [-seven-] {+SEVEN+} eight nine …"
    assert word_diff("x", "") == "[-x-]"


@pytest.mark.slow  # a CLI run opens its own engine (several seconds): the slow suite, which CI also runs
def test_cli_replay_as_recorded_and_audit_trace(edited: tuple[Engine, str, Path]) -> None:
    eng, tid, path = edited
    eng.close()  # the CLI opens the store itself (one opener of the shard at a time)
    store = str(path)
    run = CliRunner()
    res = run.invoke(app, ["replay", "--as-recorded", tid, "--tenant", TENANT, "--store", store])
    assert res.exit_code == 0, res.output
    assert "byte-identical" in res.stdout and SEEN in res.stdout and EDITED not in res.stdout
    res = run.invoke(app, ["replay", "--as-of-now", tid, "--as-of", AT, "--tenant", TENANT, "--store", store,
                           "--no-record"])
    assert res.exit_code == 1 and EDITED in res.stdout, res.output
    res = run.invoke(app, ["audit", "--trace", tid, "--tenant", TENANT, "--store", store])
    assert res.exit_code == 0, res.output
    assert "[-$50,-] {+$60,+}" in res.stdout
    res = run.invoke(app, ["audit", "--trace", tid, "--tenant", TENANT, "--store", store, "--json"])
    assert res.exit_code == 0 and '"identical": true' in res.stdout, res.output
    res = run.invoke(app, ["audit", "--trace", tid, "examples", "--tenant", TENANT, "--store", store])
    assert res.exit_code != 0 and "no scenario paths" in res.output
