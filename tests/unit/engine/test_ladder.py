"""The degradation ladder (engine/ladder.py, engine/admission.py): each rung forced through the
admission's clocks or an injected grant, what it answers with, what its ``degraded`` says, that
the same input on the same rung gives the same output, and that no rung carries another
tenant's or customer's data."""

from __future__ import annotations

import json
import time
from typing import Any, Iterator

import pytest
from busy import all_slots_held
from domains import AS_OF, DELTABANK, MARIA, UTTERANCE

from hopweave.engine.admission import LADDER_RUNG, REFUSED, Admission, Grant, HoldClock
from hopweave.engine.boundary import check_request
from hopweave.engine.config import EngineConfig, Run
from hopweave.engine.engine import Engine
from hopweave.engine.ladder import LADDER
from hopweave.engine.result import RetrievalResult
from hopweave.errors import OverloadedError

NORTH = {"tenant_id": "northbank", "customer_id": "NB_CUST_4421", "region": "US", "channel": "phone"}
#: Budget of the forced requests: a request slot's expected hold (5 s) is past it.
BUDGET_MS = 2_000


def _untimed(r: RetrievalResult) -> str:
    """The result's JSON without what measures the run (``timings_ms``, ``elapsed_ms``)."""
    def drop(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: drop(v) for k, v in x.items() if k not in ("timings_ms", "elapsed_ms")}
        return [drop(v) for v in x] if isinstance(x, list) else x

    return json.dumps(drop(r.to_json()), sort_keys=True, default=str)


@pytest.fixture(scope="module")
def busy(engine: Engine) -> Iterator[Engine]:
    """A sibling engine whose request slots are all held and whose last holds took 5 s: every
    request is told at once that the full pipeline does not fit its budget."""
    sib = engine.sibling(index=engine.index, understander=None)
    with all_slots_held(sib):
        yield sib
    sib.close_pools()


def _ask(eng: Engine, utterance: str = UTTERANCE, session: Any = MARIA, **kw: Any) -> RetrievalResult:
    return eng.retrieve(utterance, session=session, as_of=AS_OF, budget_ms=BUDGET_MS, **{"record": False, **kw})


@pytest.fixture(scope="module")
def full(engine: Engine) -> RetrievalResult:
    return engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)


@pytest.fixture(scope="module")
def lexical(busy: Engine) -> RetrievalResult:
    return _ask(busy)


def test_the_full_rung_says_nothing_and_its_json_has_no_rung(full: RetrievalResult) -> None:
    assert full.rung == "full" and "rung" not in full.to_json() and "rung" not in full.model_dump()
    assert not any(d.what == "request capacity" for d in full.degraded)
    assert "at capacity" not in full.context.text


def test_no_request_slot_answers_with_the_facts_and_a_lexical_only_search(full: RetrievalResult,
                                                                          lexical: RetrievalResult) -> None:
    assert lexical.rung == LADDER_RUNG == "facts_and_lexical" and lexical.to_json()["rung"] == "facts_and_lexical"
    # understanding, the filter and the customer's facts are the full path's
    assert lexical.goal == full.goal is not None and lexical.entities == full.entities
    assert lexical.filter == full.filter
    assert [(f.pattern, [r.node_id for r in f.rows]) for f in lexical.facts] == \
        [(f.pattern, [r.node_id for r in f.rows]) for f in full.facts]
    assert [p.trace_id for p in lexical.precedent] == [p.trace_id for p in full.precedent]
    # the policy search ranked by the lexical channel alone, over the same filtered set
    assert lexical.chunks and all({c.channel for c in ch.channels} == {"lexical"} for ch in lexical.chunks)
    assert {c.chunk_id for c in lexical.chunks if c.in_context} & {c.chunk_id for c in full.chunks if c.in_context}
    assert len(lexical.rounds) == 1


def test_the_lexical_rung_says_what_it_left_out(lexical: RetrievalResult) -> None:
    items = [(d.stage, d.what) for d in lexical.degraded]
    assert items[:4] == [("engine", "request capacity"), ("search", "semantic channel"), ("search", "later rounds"),
                         ("search", "rerank")]
    assert lexical.degraded[0].fallback.startswith("rung facts_and_lexical: ")
    assert not any(d.stage == "understand" for d in lexical.degraded)
    note = LADDER["facts_and_lexical"].note()
    first = next(line for line in lexical.context.lines if line.kind == "note")  # it heads the [Note] section
    assert note in first.text and "left out: semantic channel, later rounds, rerank" in note


def test_the_same_input_on_the_same_rung_is_byte_identical(busy: Engine, lexical: RetrievalResult) -> None:
    assert _untimed(_ask(busy)) == _untimed(lexical)


def test_an_injected_grant_picks_the_rung(engine: Engine, lexical: RetrievalResult) -> None:
    """The pipeline runs the rung the grant names, whatever the engine's load: a ladder slot
    taken by hand gives the same answer as one handed over by admission."""
    sib = engine.sibling(index=engine.index, understander=None)
    try:
        sib.warmup()
        lane = sib.admission.ladder_slots
        assert lane is not None and lane.acquire(0)
        req = check_request(UTTERANCE, session=MARIA, as_of=AS_OF, budget_ms=BUDGET_MS, record=False)
        out = sib.pipeline().retrieve(req, grant=Grant(sib.admission.clock(), "facts_and_lexical"))
        assert not lane.full and not lane.busy  # the slot went back to the ladder's lane
        assert _untimed(out) == _untimed(lexical)
        # a request told it got no request slot steps down: the ladder's lane is free
        assert sib.pipeline().retrieve(req, grant=REFUSED).rung == "facts_and_lexical"
    finally:
        sib.close_pools()


def test_with_the_ladder_full_too_the_answer_is_nothing_and_says_so(busy: Engine) -> None:
    lane = busy.admission.ladder_slots
    assert lane is not None
    held = 0
    while lane.acquire(0):
        held += 1
    for _ in range(8):
        busy.admission.ladder_hold.add(5_000.0, True)
    try:
        out = _ask(busy, record=True)
        with pytest.raises(OverloadedError):
            busy.retrieve_request(check_request(UTTERANCE, session=MARIA, as_of=AS_OF, budget_ms=BUDGET_MS,
                                                record=False), time.perf_counter(), shed=True)
    finally:
        for _ in range(held):
            lane.release()
        busy.admission.ladder_hold = HoldClock()
    assert out.rung == "nothing" and out.to_json()["rung"] == "nothing"
    assert out.chunks == () and out.facts == () and out.goal is None and out.clarify
    assert out.degraded[0].what == "request capacity" and out.degraded[0].fallback.startswith("rung nothing: ")
    assert (out.degraded[1].stage, out.degraded[1].what) == ("record", "decision trace") and not out.recorded
    assert "search" in {d.stage for d in out.degraded}
    assert LADDER["nothing"].note() in out.context.text and "left out: every stage" in LADDER["nothing"].note()


def test_a_degraded_answer_carries_no_other_tenants_data(busy: Engine, engine: Engine) -> None:
    north = _ask(busy, session=NORTH)
    assert north.rung == "facts_and_lexical"
    assert north.chunks == ()  # northbank owns no documents in the index
    assert all(r.properties["tenant_id"] in ("northbank", "_global") for f in north.facts for r in f.rows)
    for leaked in ("Maria Lopez, CUST_4421", "ACCT_99812", "TRACE_8514", "waiver-policy-v3.pdf"):
        assert leaked not in north.context.text
    maria = _ask(busy)
    assert {c.metadata.get("tenant_id") for c in maria.chunks} == {"deltabank"}


def test_a_degraded_answer_carries_no_other_customers_data(busy: Engine, engine: Engine) -> None:
    """An utterance naming another customer's id gets, on the lexical rung, the session's
    customer's facts and the same filter as on the full path: the utterance does not decide who
    the customer is."""
    other = "I am CUST_100012, why was I charged a late fee on ACCT_99812? I paid on time."
    full = engine.retrieve(other, session=MARIA, as_of=AS_OF, record=False)
    low = _ask(busy, other)
    assert low.rung == "facts_and_lexical"
    assert low.filter == full.filter and low.entities == full.entities and low.mentions == full.mentions
    assert [(f.pattern, [r.node_id for r in f.rows]) for f in low.facts] == \
        [(f.pattern, [r.node_id for r in f.rows]) for f in full.facts]
    assert "CUST_100012" not in {str(e.value) for e in low.entities}
    assert all("CUST_100012" not in r.node_id for f in low.facts for r in f.rows)


def test_a_recorded_degraded_answer_names_its_rung_on_the_trace(busy: Engine) -> None:
    out = _ask(busy, "Why was I charged a late fee on my card? I always pay on time.", record=True)
    assert out.rung == "facts_and_lexical" and out.recorded
    node = busy.graph.get_node("deltabank", out.trace_id)
    assert node is not None and node.props["rung"] == "facts_and_lexical"
    assert any(d["what"] == "semantic channel" for d in json.loads(node.props["degraded_json"]))


# ---- admission alone, on an injected clock ------------------------------------------------------
def _admission(ladder: int = 1) -> tuple[Admission, list[float]]:
    now = [50.0]
    return Admission(EngineConfig(max_active=1, ladder_max_active=ladder, deadline_reserve_ms=40),
                     clock=lambda: now[0]), now


def _run(t_start: float, budget_ms: int = 800) -> Run:
    req = check_request(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    return Run(req, DELTABANK, t_start, budget_ms, [], {})


def test_admission_steps_down_to_a_ladder_slot_then_to_nothing() -> None:
    adm, now = _admission()
    held = adm.take(now[0] + 5.0)
    for _ in range(HoldClock.MIN_BUSY):
        adm.hold_clock.add(2_000.0, busy=True)
    run = _run(now[0])
    grant = adm.admit(run)  # a 2 s hold does not fit in 800 ms: told at once, a ladder slot instead
    assert grant.granted and grant.rung == "facts_and_lexical" and adm.ladder_slots is not None
    assert adm.ladder_slots.full and adm.slots.waiting == 0
    assert [d.what for d in adm.degradations(grant.rung)] == ["request capacity", "semantic channel",
                                                              "later rounds", "rerank"]
    assert run.budget_ms == 800  # its stages keep the budget
    for _ in range(HoldClock.MIN_BUSY):
        adm.ladder_hold.add(2_000.0, busy=True)
    late = _run(now[0])
    assert adm.admit(late) is REFUSED and late.budget_ms == 0  # nothing: its budget ends now
    assert [d.what for d in adm.degradations("nothing")] == ["request capacity", "decision trace"]
    assert adm.degradations("full") == []
    with pytest.raises(OverloadedError):
        adm.admit(_run(now[0]), shed=True)
    now[0] += 0.1
    adm.release(grant)  # back to the ladder's lane, its hold timed there
    assert not adm.ladder_slots.full and 100.0 in adm.ladder_hold._all._ms
    assert adm.slots.full  # the request slot is still held
    adm.release(held)
    assert not adm.slots.full


def test_without_ladder_slots_a_refused_request_answers_with_nothing() -> None:
    adm, now = _admission(ladder=0)
    assert adm.ladder_slots is None
    held = adm.take(now[0] + 5.0)
    for _ in range(HoldClock.MIN_BUSY):
        adm.hold_clock.add(2_000.0, busy=True)
    with pytest.raises(OverloadedError, match="expected wait"):
        adm.take(now[0] + 1.0, shed=True)  # no ladder: shed as before
    run = _run(now[0])
    assert adm.admit(run) is REFUSED and run.budget_ms == 0
    adm.release(held)


def test_the_rung_crosses_the_engine_pools_json_wire(lexical: RetrievalResult, full: RetrievalResult) -> None:
    """An engine pool's worker sends ``model_dump_json()`` and the parent reads it back with
    ``model_validate_json``: a lower rung arrives as sent, a full answer (no ``rung`` key) as full."""
    assert RetrievalResult.model_validate_json(lexical.model_dump_json()).rung == "facts_and_lexical"
    wire = full.model_dump_json()
    assert '"rung"' not in wire and RetrievalResult.model_validate_json(wire).rung == "full"
