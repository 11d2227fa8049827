"""Every shipped example pack validates clean; the telecom pack (a second field, so generality is
tested every run) loads into a fresh store and passes all its scenarios twice, byte-identically.
DeltaBank's scenarios run on a sized copy of its pack in tests/unit/engine."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hopweave.engine.engine import Engine
from hopweave.engine.replay import REPLAY_CONFIG, replay, scenario_paths
from hopweave.pack.loader import load_pack
from hopweave.pack.validate import validate_pack

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))  # tests/shared helpers
from two_requests import TELECOM_TWO, silent_drops, single_request_utterances  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
PACKS = sorted(p.parent for p in EXAMPLES.glob("*/hopweave.yaml"))


def test_both_example_packs_ship() -> None:
    assert {p.name for p in PACKS} >= {"deltabank", "telecom"}


@pytest.mark.parametrize("pack", PACKS, ids=[p.name for p in PACKS])
def test_shipped_pack_validates_clean(pack: Path) -> None:
    assert [str(p) for p in validate_pack(pack)] == []


@pytest.fixture(scope="module")
def telecom_engine(tmp_path_factory: pytest.TempPathFactory):
    store = tmp_path_factory.mktemp("telecom") / "store"
    load_pack(EXAMPLES / "telecom", store)
    engine = Engine.open(store, config=REPLAY_CONFIG)  # deterministic budgets: a busy machine cuts nothing
    yield engine
    engine.close()


def test_telecom_scenarios_pass_twice_byte_identically(telecom_engine: Engine) -> None:
    paths = scenario_paths([EXAMPLES / "telecom" / "scenarios"])
    assert len(paths) >= 12
    first = replay(telecom_engine, paths)
    failed = {o.scenario: o.failures for o in first if not o.passed}
    assert not failed, failed
    second = replay(telecom_engine, paths)
    assert [(o.scenario, o.context_hash, o.trace_id) for o in first] == \
        [(o.scenario, o.context_hash, o.trace_id) for o in second]


def test_server_batches_hold_the_documents_hopweave_load_writes(telecom_engine: Engine) -> None:
    """``pack_batches`` (``load-server``) writes each corpus document under its own tenant with
    the links ``hopweave load`` resolves against the store (issue 16: telecom's zephyr document
    was written under the corpus tenant)."""
    from hopweave.graph.base import Node
    from hopweave.pack.batches import pack_batches
    from hopweave.pack.loader import document_items, read_pack

    pack = EXAMPLES / "telecom"
    want, _ = document_items(read_pack(pack), telecom_engine.graph)
    doc_ids = {it.id for _, items in want for it in items if isinstance(it, Node)}

    def docs(batches) -> list[str]:  # noqa: ANN001
        return sorted(repr((t, it)) for t, items in batches for it in items
                      if (it.id if isinstance(it, Node) else it.src) in doc_ids)

    got = docs((t, list(items)) for t, items in pack_batches(pack))
    assert got == docs(want)
    assert {t for t, _ in want} == {"acme", "zephyr"}


def test_no_request_of_a_two_request_telecom_utterance_is_dropped(telecom_engine: Engine) -> None:
    """Each second request is a part or a named unhandled clause (telecom; DeltaBank's are in
    tests/unit/engine/test_multi_intent.py), and no single-request scenario is split."""
    import json

    from hopweave.engine.boundary import check_request
    from hopweave.engine.multi_intent import split_intents

    ana = json.loads((EXAMPLES / "telecom" / "sessions" / "ana.json").read_text())
    wrong = [w for u, goals, heard in TELECOM_TWO for w in silent_drops(telecom_engine, u, ana, goals, heard)]
    assert not wrong, wrong
    cases = single_request_utterances(EXAMPLES / "telecom" / "scenarios")
    assert len(cases) >= 14
    split = [u for u, s in cases if split_intents(telecom_engine.pipeline().deps, check_request(
        u, session=s, as_of="2026-05-12", budget_ms=None, profile=None, token_budget=None, record=False,
        pattern_overrides=None)) is not None]
    assert not split, split


@pytest.mark.parametrize("budget", [250, 300, 500, 1000])
def test_every_sourced_telecom_line_keeps_its_src_marker(telecom_engine: Engine, budget: int) -> None:
    """Provenance survives clipping on the second pack too (DeltaBank's: tests/unit/engine)."""
    import json

    ana = json.loads((EXAMPLES / "telecom" / "sessions" / "ana.json").read_text())
    r = telecom_engine.retrieve("I want to dispute this $84 roaming charge on my bill.", session=ana,
                                as_of="2026-05-12", token_budget=budget, record=False)
    assert r.context.tokens <= budget
    marked = [ln for ln in r.context.lines if ln.kind in ("fact", "aggregate", "chunk")]
    assert marked and all("(src: " in ln.text and ln.text.endswith(")") for ln in marked), r.context.text
