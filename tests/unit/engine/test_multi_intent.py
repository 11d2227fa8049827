"""Multi-intent requests: split on spans, one goal per part, one budget; a request no goal
takes is named (``unhandled`` and the context), never dropped."""

from __future__ import annotations

import re

from domains import AS_OF, MARIA, UTTERANCE
from engine_store import SCENARIOS
from two_requests import DELTABANK_TWO, silent_drops, single_request_utterances  # tests/shared

from hopweave.engine.multi_intent import clause_spans

SEPS = re.compile(r"[.?!;]+|,|\b(?:and also|also|but|then|by the way|besides)\b", re.IGNORECASE)
ASK = "I want the late fee waived and can you also tell me my due date?"
#: Two requests, each of a goal.
TWO = "Please remove the late fee, and also what is my credit limit increase policy?"


def test_clause_spans_point_into_the_utterance() -> None:
    spans = clause_spans(ASK, SEPS, 2)
    assert [s.text for s in spans] == ["I want the late fee waived", "tell me my due date"]
    assert all(ASK[s.start:s.end] == s.text for s in spans)
    assert [s.additive for s in spans] == [False, True]
    assert clause_spans("remove the late fee pls", SEPS, 2) == []
    short = clause_spans("Hi, I want the late fee removed", SEPS, 2)
    assert short == []  # "Hi" is under min_words: joined, one clause


def test_engine_splits_two_intents_with_one_budget(engine) -> None:  # noqa: ANN001
    r = engine.retrieve(TWO, session=MARIA, as_of=AS_OF, token_budget=900, record=False)
    assert [p.goal for p in r.parts] == ["LateFeeDispute", "CreditLimitIncrease"] and r.unhandled == ()
    assert [TWO[p.start:p.end] for p in r.parts] == [p.text for p in r.parts]
    assert r.context.tokens <= 900 and r.context.budget == 900
    assert r.context.tokens == engine.counter.count(r.context.text)  # counted from its lines, exactly
    text = r.context.text
    assert text.index('[Request part 1 of 2 — LateFeeDispute: "Please remove the late fee"]') < \
        text.index('[Request part 2 of 2 — CreditLimitIncrease: "what is my credit limit increase policy"]')
    assert sum(p.tokens for p in r.parts) <= 900
    assert r.trace_id.startswith("RT_") and r.trace_id not in {p.trace_id for p in r.parts}
    again = engine.retrieve(TWO, session=MARIA, as_of=AS_OF, token_budget=900, record=False)
    assert again.context.text == r.context.text and again.trace_id == r.trace_id


def test_a_request_no_goal_takes_is_named_with_its_span(engine) -> None:  # noqa: ANN001
    for u, heard in ((ASK, "tell me my due date"),
                     ("I want to dispute this $39 late fee and also change my address", "change my address")):
        r = engine.retrieve(u, session=MARIA, as_of=AS_OF, token_budget=900, record=False)
        assert r.goal == "LateFeeDispute" and [p.goal for p in r.parts] == ["LateFeeDispute"], u
        assert [(x.text, x.reason) for x in r.unhandled] == [(heard, "no goal matched")]
        x = r.unhandled[0]
        assert u[x.start:x.end] == heard
        line = f'heard but not handled: "{heard}" (characters {x.start}-{x.end}) — no goal matched'
        assert r.context.text.startswith(f"[Not handled]\n{line}\n\n")
        assert [ln.text for ln in r.context.lines if ln.section == "not handled" and ln.kind == "note"] == [line]
        assert "[Request part" not in r.context.text  # one part: its context as it is
        assert "[Applicable policy" in r.context.text and r.context.tokens <= 900
        assert r.context.tokens == engine.counter.count(r.context.text)


def test_two_goals_each_get_their_own_sections(engine) -> None:  # noqa: ANN001
    ask = "My card was stolen and there are charges I did not make. Also, I got married and need to change my name"
    r = engine.retrieve(ask, session=MARIA, as_of=AS_OF, record=False)
    assert [p.goal for p in r.parts] == ["FraudClaim", "NameChange"]
    assert any(f.pattern.startswith("fraud_") for f in r.facts)
    assert any(f.pattern.startswith("name_change_") for f in r.facts)
    assert "marriage certificate" in r.context.text


def test_single_intent_requests_are_not_split(engine) -> None:  # noqa: ANN001
    for u in (UTTERANCE, "My autopay failed and now there's a late fee, can you take it off?",
              "I was charged a late fee but I paid on time"):
        r = engine.retrieve(u, session=MARIA, as_of=AS_OF, record=False)
        assert r.parts == () and len(r.rounds) >= 1, u


class _SlowWrites:
    """The session graph behind a store whose writes take 0.3 s (a busy server)."""

    def __init__(self, inner) -> None:  # noqa: ANN001
        self.inner = inner

    def write(self, *a, **k) -> None:  # noqa: ANN002, ANN003
        import time

        time.sleep(0.3)
        self.inner.write(*a, **k)

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self.inner, name)


def test_the_combined_trace_is_recorded_within_the_request_budget_not_100_ms(engine) -> None:  # noqa: ANN001
    """The combined trace of a multi-intent request waits for what is left of the request's
    budget (at least record_min_ms), like any trace: a store slower than 100 ms must not make
    ``recorded`` depend on timing under a 60 s budget."""
    from domains import (  # tests/shared: a late `from conftest` may find another folder's
        DELTABANK,
        DELTABANK_REGISTRY,
    )

    from hopweave.engine import record as trace_record
    from hopweave.engine.config import EngineConfig
    from hopweave.engine.engine import Engine

    eng = Engine(_SlowWrites(engine.graph), engine.index, domains=DELTABANK_REGISTRY, embedder=engine.embedder,  # type: ignore[arg-type]
                 understander=engine.understander_for(DELTABANK), counter=engine.counter,
                 config=EngineConfig(budget_ms=60_000, pattern_budget_scale=100.0, record_min_ms=100))
    eng.warming.mark_warm()
    try:
        r = eng.retrieve(TWO, session=MARIA, as_of=AS_OF, token_budget=900, record=True)
    finally:
        eng.close_pools()
    assert len(r.parts) == 2 and r.recorded, r.degraded
    assert trace_record.load(engine.graph, "deltabank", r.trace_id).context_hash == r.context.hash


def test_the_parts_share_the_requests_one_wall_clock_budget(engine, monkeypatch) -> None:  # noqa: ANN001
    """Each part runs within the time left of the request's budget (from the call), never a
    fresh budget of its own: a two-part request is not allowed twice the budget."""
    import time

    from hopweave.engine.pipeline import Pipeline

    seen: list[tuple[float, int]] = []
    real = Pipeline.retrieve

    def spy(self, req, t0=None, shed=False, grant=None):  # noqa: ANN001, ANN202
        seen.append((t0, req.budget_ms))
        return real(self, req, t0, shed, grant)

    monkeypatch.setattr(Pipeline, "retrieve", spy)
    start = time.perf_counter()
    engine.retrieve(TWO, session=MARIA, as_of=AS_OF, budget_ms=50_000, record=False)
    assert len(seen) == 2
    deadline = start + 50.0
    for part_start, part_ms in seen:
        assert part_start is not None and part_start >= start
        assert part_start + part_ms / 1000.0 <= deadline + 0.002  # ends by the request's deadline
    assert seen[0][1] <= 25_000 + 1  # the first part gets an equal share of what was left


def test_no_request_of_a_two_request_utterance_is_dropped(engine) -> None:  # noqa: ANN001
    """Each second request is a part or a named unhandled clause (DeltaBank; telecom's are in
    tests/unit/pack/test_shipped_packs.py): 0 silent drops."""
    wrong = [w for u, goals, heard in DELTABANK_TWO for w in silent_drops(engine, u, MARIA, goals, heard)]
    assert not wrong, wrong


def test_the_single_request_scenarios_are_not_split(engine) -> None:  # noqa: ANN001
    from hopweave.engine.boundary import check_request
    from hopweave.engine.multi_intent import split_intents

    cases = single_request_utterances(SCENARIOS)
    assert len(cases) >= 40
    split = []
    for u, session in cases:
        req = check_request(u, session=session, as_of=AS_OF, budget_ms=None, profile=None, token_budget=None,
                            record=False, pattern_overrides=None)
        if split_intents(engine.pipeline().deps, req) is not None:
            split.append(u)
    assert not split, split
