"""The read cache through the engine (understand/read_cache.py): the turns of one conversation at
a pinned as_of are served from it, a fact written between two turns is seen by the second, and
every cached answer is the answer the engine gives with caching off. This module's engine is its
own, on a copy of the session store (it writes)."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest
from domains import DELTABANK_REGISTRY, MARIA, UTTERANCE

from hopweave.engine.engine import Engine
from hopweave.engine.replay import REPLAY_CONFIG
from hopweave.understand.read_cache import cache_of

#: A pinned instant after the facts this module writes (they are stamped now).
LATER = (datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0) + timedelta(days=1)).isoformat()
OTHER = {**MARIA, "customer_id": "CUST_100001"}


@pytest.fixture(scope="module")
def eng(cli_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    d = tmp_path_factory.mktemp("readcache") / "store"
    shutil.copytree(cli_store, d)
    e = Engine.open(d, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG)
    yield e
    e.close()


def _json(eng: Engine, session: dict[str, Any], as_of: str, utterance: str = UTTERANCE) -> str:
    r = eng.retrieve(utterance, session=session, as_of=as_of, record=False)
    d = r.model_dump(mode="json", exclude={"timings_ms", "trace_id"})
    for f in d["facts"]:
        f.pop("elapsed_ms")
    return json.dumps(d, sort_keys=True)


def _uncached(eng: Engine, monkeypatch: pytest.MonkeyPatch, session: dict[str, Any], as_of: str) -> str:
    with monkeypatch.context() as m:
        m.setattr(eng.graph, "change_token", lambda reads=None: None)
        return _json(eng, session, as_of)


def test_a_second_turn_is_served_from_the_cache_with_the_same_answer(eng: Engine,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    first = _json(eng, MARIA, LATER)
    cache = cache_of(eng.graph)
    hits = cache.hits
    assert _json(eng, MARIA, LATER) == first
    assert cache.hits > hits
    assert _uncached(eng, monkeypatch, MARIA, LATER) == first


def test_a_fact_written_between_two_turns_is_seen_by_the_second(eng: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _json(eng, MARIA, LATER)
    ts = (datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0) - timedelta(days=1)).isoformat()
    eng.write_facts("deltabank", [{"node": "EVT_TURN_1", "label": "Event", "properties": {
        "type": "LateFeeCharged", "amount": 17.0, "timestamp": ts, "status": "posted",
        "summary": f"LateFeeCharged $17 on {ts[:10]}"}}],
        [{"edge": "HAS_EVENT", "from": "ACCT_99812", "to": "EVT_TURN_1"}], source="billing")
    after = _json(eng, MARIA, LATER)
    assert after != before and "EVT_TURN_1" in after
    assert after == _uncached(eng, monkeypatch, MARIA, LATER)


def test_another_customer_or_instant_gets_its_own_answer(eng: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = _json(eng, MARIA, LATER)
    for session, as_of in ((OTHER, LATER), (MARIA, "2026-05-12")):
        got = _json(eng, session, as_of)
        assert got != mine and got == _uncached(eng, monkeypatch, session, as_of)
