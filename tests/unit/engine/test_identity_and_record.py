"""End to end on the DeltaBank store: identity belongs to the session (the agent is told about
conflicting claims and other customers' ids in [Note]), the record stage has a deadline inside
the request budget, and redaction covers everything derived from the utterance."""

from __future__ import annotations

import html
import json
import threading
import time

import pytest
from domains import AS_OF, DELTABANK, DELTABANK_REGISTRY, MARIA

from hopweave.engine import record as trace_record
from hopweave.engine.engine import Engine, EngineConfig

GOLD = {"tenant_id": "deltabank", "customer_id": "CUST_4412", "region": "US", "channel": "phone"}
ANON = {"tenant_id": "deltabank", "region": "US", "channel": "web"}


def _tiers_in_context(r) -> set:  # type: ignore[no-untyped-def]
    return {c.metadata.get("tier") for c in r.chunks if c.in_context}


@pytest.mark.parametrize("text", ["My tier is Platinum, waive this $39 late fee.",
                                  "As a Platinum customer I want the $39 late fee removed."])
def test_gold_customer_claiming_platinum(engine: Engine, text: str) -> None:
    r = engine.retrieve(text, session=GOLD, as_of=AS_OF, record=False)
    assert r.filter_display["tier"] == "Gold"
    assert "Platinum" not in _tiers_in_context(r)
    assert "Platinum customers in good standing" not in r.context.text
    (claim,) = [m for m in r.mentions if m.type == "Tier"]
    assert claim.kind == "claim" and claim.record == "Gold"
    assert "[Note]" in r.context.text and "claims Platinum; record says Gold" in r.context.text


def test_maria_saying_gold_card_gets_no_gold_policy_or_precedent(engine: Engine) -> None:
    r = engine.retrieve("I want to dispute this $39 late fee on my Gold card.", session=MARIA, as_of=AS_OF,
                        record=False)
    assert r.filter_display["tier"] == "Platinum" and r.filter_display["product"] == "Platinum_Card"  # the record
    assert "Gold" not in _tiers_in_context(r)
    assert "TRACE_8333" not in {p.trace_id for p in r.precedent if p.in_context}  # Mario's Gold precedent
    assert {(m.type, m.value) for m in r.mentions} >= {("Tier", "Gold"), ("Product", "Gold_Card")}


def test_anonymous_session_gets_no_segment_specific_policy(engine: Engine) -> None:
    r = engine.retrieve("Can you waive the late fee on my Platinum card?", session=ANON, as_of=AS_OF, record=False)
    assert r.filter_display.get("tier", "missing") is None  # an is_empty clause
    assert _tiers_in_context(r) <= {None}
    assert any(m.type == "Tier" and m.record is None for m in r.mentions)


def test_other_customer_id_reaches_result_and_context(engine: Engine) -> None:
    r = engine.retrieve("Dispute the $39 late fee on CUST_4412's account instead of mine.", session=MARIA,
                        as_of=AS_OF, record=False)
    (m,) = r.mentions
    assert (m.type, m.value, m.kind) == ("Customer", "CUST_4412", "identifier")
    assert "CUST_4412 is not the authenticated customer (CUST_4421); not used" in r.context.text
    assert r.context.lines[0].section == "note" and "Mario Lopes" not in r.context.text
    assert r.notes == tuple(r.notes) and r.domain == "deltabank"


# ---- record deadline ---------------------------------------------------------------------------
class _StuckWrites:
    """The graph as another process holding its write lock: every write blocks (or fails)."""

    def __init__(self, inner, error: Exception | None = None) -> None:  # type: ignore[no-untyped-def]
        self._inner = inner
        self._error = error
        self.release = threading.Event()

    def write(self, *a, **k):  # type: ignore[no-untyped-def]
        if self._error is not None:
            raise self._error
        self.release.wait(10)
        return self._inner.write(*a, **k)

    def close(self) -> None:
        pass

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._inner, name)


def _engine_on(engine: Engine, graph, budget_ms: int = 1500) -> Engine:  # type: ignore[no-untyped-def]
    return Engine(graph, engine.index, domains=DELTABANK_REGISTRY, embedder=engine.embedder,
                  understander=engine.understander_for(DELTABANK), counter=engine.counter,
                  config=EngineConfig(budget_ms=budget_ms, record_min_ms=100))


def test_a_stuck_writer_cannot_hang_a_recording_request(engine: Engine) -> None:
    stuck = _StuckWrites(engine.graph)
    eng = _engine_on(engine, stuck)
    eng.warming.mark_warm()
    try:
        t = time.perf_counter()
        r = eng.retrieve("I want to dispute this $39 late fee on my Platinum card.", session=MARIA, as_of=AS_OF,
                         record=True)
        elapsed = time.perf_counter() - t
    finally:
        stuck.release.set()
        eng.close_pools()
    assert elapsed < 1.5 + 0.5, f"the request took {elapsed:.2f} s against a 1.5 s budget"
    assert r.recorded is False
    (d,) = [d for d in r.degraded if d.stage == "record"]
    assert "did not finish" in d.reason and "recorded=False" in d.fallback


def test_a_disk_full_write_is_a_flagged_result(engine: Engine) -> None:
    eng = _engine_on(engine, _StuckWrites(engine.graph, OSError(28, "No space left on device")))
    eng.warming.mark_warm()
    try:
        r = eng.retrieve("I want to dispute this $39 late fee on my Platinum card.", session=MARIA, as_of=AS_OF)
    finally:
        eng.close_pools()
    assert r.recorded is False
    assert any(d.stage == "record" and "OSError" in d.reason and "No space" in d.reason for d in r.degraded)


def test_recorded_flag_is_true_only_when_written(engine: Engine, maria) -> None:  # type: ignore[no-untyped-def]
    assert maria.recorded is True
    assert trace_record.load(engine.graph, "deltabank", maria.trace_id).trace_id == maria.trace_id
    r = engine.retrieve("I want to dispute this $39 late fee on my Platinum card.", session=MARIA, as_of=AS_OF,
                        record=False)
    assert r.recorded is False and not any(d.stage == "record" for d in r.degraded)


# ---- redaction ---------------------------------------------------------------------------------
def test_redaction_covers_everything_derived_from_the_utterance(engine: Engine) -> None:
    from hopweave.cli.trace_html import collect, render

    text = "Dispute the $39 late fee on CUST_4412's account instead of mine, my email is m@x.example"
    r = engine.retrieve(text, session=MARIA, as_of=AS_OF)
    assert r.recorded
    full = trace_record.load(engine.graph, "deltabank", r.trace_id)
    assert "instead of mine" in (full.search_query or "") and "CUST_4412" in full.context_text
    red = json.dumps(full.redacted().model_dump(mode="json"))
    page = render(collect(engine.graph, "deltabank", r.trace_id), DELTABANK.styles)
    for leaked in ("instead of mine", "m@x.example", "CUST_4412"):
        assert leaked not in red, leaked
        assert leaked not in page, leaked
    assert trace_record.REDACTED in red and html.escape(trace_record.REDACTED) in page


def test_no_view_without_pii_shows_a_part_header_span_or_a_pii_property(engine: Engine) -> None:
    """A multi-intent request's part headers quote the utterance, and the facts name the
    customer: neither reaches trace show (its text and --json views print this redacted trace)
    nor the HTML page."""
    from hopweave.cli.trace_html import collect, render

    text = ("I want the late fee waived, my email is maria.lopez@example.com and SSN 123-45-6789, card "
            "4111 1111 1111 1111, I am Maria Lopez, and also what is my credit limit increase policy?")
    r = engine.retrieve(text, session=MARIA, as_of=AS_OF, budget_ms=20_000)
    assert r.recorded and len(r.parts) == 2, (r.parts, r.unhandled)
    leaks = ("maria.lopez@example.com", "123-45-6789", "4111 1111", "Maria Lopez", "+1-555-0142")
    for tid in (r.trace_id, *(p.trace_id for p in r.parts)):
        full = trace_record.load(engine.graph, "deltabank", tid)
        seen = trace_record.trace_pii_values(engine.graph, "deltabank", full.fact_ids, full.customer_id)
        assert "Maria Lopez" in seen
        views = [json.dumps(full.redacted(seen).model_dump(mode="json"), ensure_ascii=False),
                 render(collect(engine.graph, "deltabank", tid), DELTABANK.styles)]
        for view in views:
            for leaked in leaks:
                assert leaked not in view, (tid, leaked)
    combined = trace_record.load(engine.graph, "deltabank", r.trace_id)
    assert "Maria Lopez" in combined.context_text  # what the agent saw is recorded in full
    shown = combined.redacted(trace_record.trace_pii_values(engine.graph, "deltabank", combined.fact_ids,
                                                            combined.customer_id)).context_text
    assert f'— LateFeeDispute: "{trace_record.REDACTED}"]' in shown and trace_record.PII_REDACTED in shown


def test_redact_context_blanks_part_header_spans_and_pii_values() -> None:
    text = ('[Request part 1 of 2 — LateFeeDispute: "my SSN is 123-45-6789"]\n\n[Customer]\n'
            'Maria Lopez, CUST_4421  (src: CUST_4421)\n\n[Request part 2 of 2 — no goal: "due "date""]\n\n'
            '[Note]\nthe utterance named CUST_4412')
    out = trace_record.redact_context(text, ("Maria Lopez", "Maria"))
    assert out == (f'[Request part 1 of 2 — LateFeeDispute: "{trace_record.REDACTED}"]\n\n[Customer]\n'
                   f'{trace_record.PII_REDACTED}, CUST_4421  (src: CUST_4421)\n\n'
                   f'[Request part 2 of 2 — no goal: "{trace_record.REDACTED}"]\n\n[Note]\n{trace_record.REDACTED}')
    assert trace_record.redact_context("[Customer]\nplain") == "[Customer]\nplain"
