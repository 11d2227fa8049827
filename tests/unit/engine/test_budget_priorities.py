"""Budget priorities (issue 15, item 5): sections declare priority, min_share and required; under
pressure lower-priority sections shrink first and no required section disappears."""

from __future__ import annotations

import pytest
from domains import AS_OF as MARIA_AS_OF, MARIA, UTTERANCE
from pydantic import ValidationError
from test_assemble import AS_OF, SECTIONS, _chunks, _facts, _precedent  # noqa: E402

from hopweave.engine.assemble import assemble
from hopweave.models.metagraph import GoalType, SectionTemplate


def _with(name: str, **kw: object) -> list[SectionTemplate]:
    return [s.model_copy(update=kw) if s.name == name else s for s in SECTIONS]


def _sections_shown(a) -> set[str]:  # noqa: ANN001
    return {ln.section for ln in a.block.lines if ln.kind != "header"}


def _lines(a, section: str) -> list[str]:  # noqa: ANN001
    return [ln.text for ln in a.block.lines if ln.section == section and ln.kind != "header"]


def test_default_priorities_keep_round_robin() -> None:
    full = assemble(SECTIONS, _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=2000)
    small = assemble(SECTIONS, _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=full.block.tokens - 30)
    assert _sections_shown(small) == _sections_shown(full)


def test_lower_priority_section_shrinks_first() -> None:
    full = assemble(SECTIONS, _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=2000)
    budget = full.block.tokens - 25
    low_policy = _with("policy", priority=-10)
    a = assemble(low_policy, _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=budget)
    assert len(_lines(a, "precedent")) == len(_lines(full, "precedent"))  # the higher tier is whole
    assert len(_lines(a, "policy")) < len(_lines(full, "policy"))  # the lower tier paid
    high_policy = _with("policy", priority=10)
    b = assemble(high_policy, _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=budget)
    assert len(_lines(b, "policy")) == len(_lines(full, "policy"))
    assert len(_lines(b, "precedent")) < len(_lines(full, "precedent"))


def test_min_share_reserves_lines_before_higher_priority_sections() -> None:
    secs = [s.model_copy(update={"priority": 10}) if s.name != "policy" else
            s.model_copy(update={"priority": -10, "min_share": 0.5}) for s in SECTIONS]
    a = assemble(secs, _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=250)
    assert len(_lines(a, "policy")) >= 2
    b = assemble(_with("policy", priority=-10), _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=250)
    assert len(_lines(b, "policy")) < len(_lines(a, "policy"))


def test_required_section_is_clipped_rather_than_dropped() -> None:
    secs = _with("policy", required=True, priority=-50)
    for budget in (40, 60, 80):
        a = assemble(secs, _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=budget)
        assert a.block.tokens <= budget
        assert _lines(a, "policy"), budget
    a = assemble(secs, _facts(), _chunks(), _precedent(), as_of=AS_OF, budget_tokens=40)
    assert _lines(a, "policy")[0].endswith("…  (src: wp-3.2 v3 current)")  # cut before its provenance
    assert next(c for c in a.chunks if c.chunk_id == "wp-3.2").in_context


def test_min_shares_over_one_are_rejected() -> None:
    secs = [s.model_copy(update={"min_share": 0.6}) for s in SECTIONS[:2]]
    with pytest.raises(ValidationError, match="min_share"):
        GoalType(name="G", description="a goal", examples=("x",), version=1, sections=tuple(secs))


@pytest.mark.parametrize("budget", [250, 500, 1000])
def test_maria_every_required_section_keeps_a_line(engine, budget: int) -> None:  # noqa: ANN001
    r = engine.retrieve(UTTERANCE, session=MARIA, as_of=MARIA_AS_OF, token_budget=budget, record=False)
    goal = engine.goals().goals["LateFeeDispute"]
    required = [s.name for s in goal.sections if s.required]
    assert {"Customer", "Event", "Applicable policy", "Procedure"} <= set(required)
    assert r.context.tokens <= budget
    for name in required:
        assert any(ln.section == name and ln.kind != "header" for ln in r.context.lines), (budget, name)
    if budget >= 500:  # the waiver-policy passage itself, unclipped
        assert "up to $50, without escalation" in r.context.text
