"""The context assembler: sections from templates, aggregates, cliff, dedupe, diversity, budget."""

from __future__ import annotations

from datetime import datetime

import pytest

from hopweave.engine.assemble import assemble
from hopweave.engine.context_lines import jaccard, render
from hopweave.engine.result import ChunkItem, PrecedentItem
from hopweave.engine.tokens import count_tokens
from hopweave.models.common import PatternResult, Row
from hopweave.models.metagraph import SectionTemplate

AS_OF = datetime(2026, 5, 12, 23, 59, 59)

SECTIONS = [
    SectionTemplate(name="customer", title="Customer", source="facts", patterns=("customer",),
                    line="{name}, {id}, {tier} tier since {tier_since}"),
    SectionTemplate(
        name="payment_history", title="Payment history", source="facts", patterns=("payments",),
        row_patterns=(),
        aggregates=[{"line": "{on_time}/{total} months on-time (last 24 months), {missed} misses in 2 years",
                     "metrics": {"total": {"fn": "count"},
                                 "on_time": {"fn": "count", "where": {"op": "eq", "field": "on_time", "value": True}},
                                 "missed": {"fn": "count", "where": {"op": "eq", "field": "on_time", "value": False}}}}],
    ),
    SectionTemplate(name="waivers", title="Waiver history", source="facts", patterns=("waivers_this_year",),
                    aggregates=[{"line": "{n} waivers used in {as_of_year}", "metrics": {"n": {"fn": "count"}}}]),
    SectionTemplate(name="policy", title="Applicable policy — {document}, section {section}", source="chunks",
                    max_lines=3, min_score_ratio=0.5, cliff_min_items=1),
    SectionTemplate(name="precedent", title="Precedent — {count} past decision traces from similar cases",
                    source="precedent", patterns=("precedent",), max_lines=3),
]


def _row(i: str, label: str, **props: object) -> Row:
    return Row(node_id=i, label=label, properties={"id": i, "tenant_id": "deltabank", **props})


def _facts() -> list[PatternResult]:
    pays = [_row(f"EV_P{i:02d}", "Event", type="Transaction", on_time=i not in (3, 17)) for i in range(24)]
    return [
        PatternResult(pattern="customer", version=1, sub_question="who?", rows=(
            _row("CUST_4421", "Customer", name="Maria Lopez", tier="Platinum", tier_since="2023-08-12"),)),
        PatternResult(pattern="payments", version=1, sub_question="payments?", rows=tuple(pays)),
        PatternResult(pattern="waivers_this_year", version=2, sub_question="waivers?", rows=()),
    ]


def _chunk(cid: str, doc: str, score: float, text: str, section: str = "3.2") -> ChunkItem:
    return ChunkItem(chunk_id=cid, document_id=doc, document=f"{doc}-v3.pdf", revision="v3", version="current",
                     section=section, text=text, score=score, rank=1)


POLICY = ("Platinum customers in good standing may receive one fee waiver per calendar year at the discretion "
          "of the support agent, up to $50, without escalation.")


def _chunks() -> list[ChunkItem]:
    return [
        _chunk("wp-3.2", "waiver-policy", 0.95, POLICY),
        _chunk("wp-3.2-copy", "waiver-policy-copy", 0.94, POLICY + " Copy."),
        _chunk("wp-3.3", "waiver-policy", 0.90, "Requests outside section 3.2 are escalated to a supervisor.", "3.3"),
        _chunk("fs-2", "fee-schedule-platinum", 0.80, "A late payment fee of $39 is charged on the Platinum Card.", "2"),
        _chunk("wp-1", "waiver-policy", 0.20, "This policy governs discretionary waivers.", "1"),
    ]


def _precedent() -> list[PrecedentItem]:
    return [PrecedentItem(trace_id=t, summary=s, score=sc, rank=i + 1)
            for i, (t, s, sc) in enumerate([("TRACE_8514", "Platinum, 0/year, 95% on-time, $39 fee -> waived", 0.9),
                                             ("TRACE_8702", "Platinum, 0/year, 88% on-time, $45 fee -> waived", 0.8),
                                             ("TRACE_8108", "Platinum, 1/year, 76% on-time, $39 fee -> declined", 0.7)])]


def test_seed_004_block() -> None:
    a = assemble(SECTIONS, _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=2000)
    t = a.block.text
    assert "[Customer]\nMaria Lopez, CUST_4421, Platinum tier since 2023-08-12" in t
    assert "22/24 months on-time (last 24 months), 2 misses in 2 years" in t
    assert "0 waivers used in 2026" in t
    assert "[Applicable policy — waiver-policy-v3.pdf, section 3.2]" in t
    assert POLICY in t
    assert "[Precedent — 3 past decision traces from similar cases]" in t
    assert t.index("[Customer]") < t.index("[Payment history]") < t.index("[Waiver history]") < t.index(
        "[Applicable policy") < t.index("[Precedent")
    assert a.block.tokens == count_tokens(t) <= 2000
    status = {c.chunk_id: (c.in_context, c.omitted_reason) for c in a.chunks}
    assert status["wp-3.2-copy"] == (False, "near_duplicate_of:wp-3.2")
    assert status["wp-1"] == (False, "score_cliff")
    # diversity: the fee schedule (second document) comes before the second waiver-policy chunk
    assert t.index("fee-schedule-platinum-v3.pdf") < t.index("section 3.3]")
    # provenance on every non-header line
    for line in a.block.lines:
        if line.kind in ("fact", "aggregate", "chunk", "precedent"):
            assert line.sources, line


def _policy_only(min_items: int | None = None) -> list[SectionTemplate]:
    extra = {} if min_items is None else {"cliff_min_items": min_items}
    return [SectionTemplate(name="policy", title="Applicable policy", source="chunks", max_lines=5,
                            min_score_ratio=0.6, **extra)]


def _status(chunks: list[ChunkItem], sections: list[SectionTemplate]) -> dict[str, tuple[bool, str | None]]:
    a = assemble(sections, [], chunks, [], as_of=AS_OF, budget_tokens=2000)
    return {c.chunk_id: (c.in_context, c.omitted_reason) for c in a.chunks}


def test_the_score_cliff_waits_for_enough_candidates() -> None:
    # Three eligible passages: min-max fusion rescales the third to about 0 however close it
    # was, so by default the cliff does not apply to so few candidates.
    few = [_chunk("a", "doc-a", 1.0, "Tariff A applies to residential meters."),
           _chunk("b", "doc-b", 0.7, "Tariff B applies to small business meters."),
           _chunk("c", "doc-c", 0.02, "General terms for every customer of the utility.")]
    assert all(kept for kept, _ in _status(few, _policy_only()).values())
    # The same three with the cliff forced on lose the third ...
    assert _status(few, _policy_only(min_items=1))["c"] == (False, "score_cliff")
    # ... and with enough candidates the default applies it.
    many = few + [_chunk(f"d{i}", f"doc-d{i}", 0.01, f"Unrelated passage number {i} about meters.")
                  for i in range(3)]
    status = _status(many, _policy_only())
    assert status["c"] == (False, "score_cliff") and status["a"][0] and status["b"][0]


def test_budget_leaves_lines_out_whole_and_counts_them() -> None:
    full = assemble(SECTIONS, _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=2000)
    small = assemble(SECTIONS, _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=full.block.tokens - 30)
    assert small.block.tokens <= full.block.tokens - 30
    assert any(o.reason == "token_budget" for o in small.block.omitted)
    kept = {ln.text for ln in small.block.lines}
    # every kept line is a whole line of the full block
    assert kept <= {ln.text for ln in full.block.lines} | {ln.text for ln in small.block.lines if ln.kind == "header"}
    # round-robin: every section still has its first line
    for name in ("customer", "payment_history", "waivers", "policy", "precedent"):
        assert name in small.block.sections


def test_truncated_pattern_is_visible_and_empty_section_says_so() -> None:
    facts = _facts()
    facts[0] = facts[0].model_copy(update={"truncated": True, "truncated_reason": "max_visited"})
    a = assemble(SECTIONS, facts, [], [], as_of=AS_OF)
    assert "(incomplete: pattern customer truncated by max_visited)" in a.block.text
    assert "[Precedent — 0 past decision traces from similar cases]\nnone found" in a.block.text or \
        "none found" in a.block.text


def test_a_cut_or_failed_precedent_pattern_is_visible_in_its_section() -> None:
    """The precedent section's pattern narrows the candidate traces: when it was cut short by
    its budget or failed, the section says so (a pattern that did not run adds no note there)."""
    whole = PatternResult(pattern="precedent", version=1, sub_question="like cases?", rows=())
    cut = whole.model_copy(update={"truncated": True, "truncated_reason": "budget_ms"})
    failed = whole.model_copy(update={"error": "QueryTimeoutError"})
    limited = whole.model_copy(update={"truncated": True, "truncated_reason": "limit"})
    for result, note in ((cut, "(incomplete: pattern precedent truncated by budget_ms)"),
                         (failed, "(unavailable: pattern precedent failed: QueryTimeoutError)")):
        text = assemble(SECTIONS, [*_facts(), result], [], _precedent(), as_of=AS_OF).block.text
        assert note in text[text.index("[Precedent"):]  # in the section, as a facts section shows its own
    for result in (whole, limited, None):
        facts = _facts() + ([result] if result is not None else [])
        assert "pattern precedent" not in assemble(SECTIONS, facts, [], _precedent(), as_of=AS_OF).block.text


def test_deterministic_bytes() -> None:
    a = assemble(SECTIONS, _facts(), _chunks(), _precedent(), as_of=AS_OF)
    b = assemble(SECTIONS, list(reversed(_facts())), list(reversed(_chunks())), list(reversed(_precedent())),
                 as_of=AS_OF)
    assert a.block.text == b.block.text


def test_render_fallbacks() -> None:
    assert render("{name} ${amount:,.0f}", {"name": "x", "amount": 4250.0}) == "x $4,250"
    assert render("{missing}", {"summary": "s"}, "{summary}") == "s"
    assert render("{amount:,.0f}", {"amount": "oops"}, "{amount}") == "oops"
    assert jaccard("a b c d", "a b c d") == 1.0


@pytest.mark.parametrize("budget", [0, 5])
def test_tiny_budget_never_exceeded(budget: int) -> None:
    a = assemble(SECTIONS, _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=budget)
    assert a.block.tokens <= budget


def test_a_clipped_line_keeps_its_provenance_marker() -> None:
    """A required line cut to fit ends in "…" and then its whole ``(src: ...)`` marker."""
    required = [s.model_copy(update={"required": True}) for s in SECTIONS]
    full = assemble(required, _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=2000)
    for budget in range(40, full.block.tokens, 7):
        a = assemble(required, _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=budget)
        assert a.block.tokens <= budget
        for ln in a.block.lines:
            if ln.kind in ("fact", "aggregate", "chunk"):
                assert "(src: " in ln.text and ln.text.endswith(")"), (budget, ln.text)
    tight = assemble(required, _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=80)
    clipped = [ln.text for ln in tight.block.lines if " …  (src: " in ln.text]
    assert clipped, tight.block.text
