"""A decided case is precedent for a similar customer (engine/outcomes.py, engine/precedent.py) on
Acme Mobile's pack (examples/telecom, loaded with its vectors), as its README walks through:
billing writes a roaming charge for Grace Lee (SUB_2001, Unlimited Plus, 0 credits this year),
her agent retrieves and records ``credited``; Ana Ruiz's next retrieval (her profile is
``SIMILAR_TO`` Grace's) ranks Grace's decided case among the top 3 of its precedent, and the
decided trace's texts read the plan as the shipped precedent does ("Unlimited Plus")."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Iterator

import pytest
from engine_store import REPO

from hopweave.engine.engine import Engine
from hopweave.pack.loader import load_pack

TELECOM = REPO / "examples" / "telecom"
CHARGE = "CHG_2001_20260601"


def _session(name: str) -> dict:
    return json.loads((TELECOM / "sessions" / f"{name}.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def eng(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    store = tmp_path_factory.mktemp("decided_precedent") / "store"
    load_pack(TELECOM, store)
    e = Engine.open(store)
    yield e
    e.close()


def _grace_decided(eng: Engine) -> str:
    """The README's steps 1-2: the charge written (dated 3 days back: a written fact is known from
    the moment it was written), Grace's retrieval as of now, ``credited`` recorded on it."""
    day = (datetime.now(timezone.utc) - timedelta(days=3)).date().isoformat()
    text = (TELECOM / "facts" / "new-roaming-charge.jsonl").read_text(encoding="utf-8")
    recs = [json.loads(line.replace("2026-06-01T", f"{day}T")) for line in text.splitlines()
            if line.strip() and not line.startswith("#")]
    eng.write_facts("acme", [r for r in recs if "node" in r], [r for r in recs if "edge" in r], source="billing")
    grace = _session("grace")
    res = eng.retrieve("I want to dispute this $72 roaming charge on my bill", session=grace)
    assert CHARGE in json.dumps(res.model_dump(mode="json"))  # the written charge reached the context
    rec = eng.record_outcome(res.trace_id, session=grace, outcome="credited", decided_by="Sam", cited=[CHARGE])
    assert rec.kept == {"amount": 72.0, "credits_this_year": 0, "plan": "Unlimited_Plus"}
    return rec.decided_id


def test_a_similar_customers_decided_case_is_in_the_top_3_precedent(eng: Engine) -> None:
    dec = _grace_decided(eng)
    node = eng.graph.get_node("acme", dec)
    assert node is not None
    assert node.props["plan"] == "Unlimited_Plus"  # the kept fact as the graph holds it (consolidation reads it)
    assert node.props["summary"].startswith("Unlimited Plus, 0 credits this year, $72 roaming charge → credited")
    assert node.props["text"].startswith("Roaming charge dispute case: Unlimited Plus,")
    res = eng.retrieve("I want to dispute this $84 roaming charge on my bill", session=_session("ana"))
    ranked = [p.trace_id for p in res.precedent]
    assert dec in ranked, ranked
    assert ranked.index(dec) < 3, [(p.trace_id, p.score, p.text) for p in res.precedent]
