"""The section-kind table (engine/section_kinds.py): one row per ``SectionTemplate.source``, read
by the assembler and the pins; a new kind is one row plus its collector module, no assembler edit."""

from __future__ import annotations

from datetime import datetime
from typing import get_args

import pytest

from hopweave.engine import pins, section_kinds
from hopweave.engine.assemble import assemble
from hopweave.engine.context_lines import Candidate, Collected, SectionDraft, SectionInputs
from hopweave.engine.result import LineKind
from hopweave.engine.section_kinds import ITEM_LINES, PINNED_LINES, SECTION_KINDS, SectionKind
from hopweave.models.common import PatternResult, Row
from hopweave.models.metagraph import SectionSource, SectionTemplate

AS_OF = datetime(2026, 5, 12, 23, 59, 59)


def test_every_source_name_has_exactly_one_row() -> None:
    assert tuple(SECTION_KINDS) == get_args(SectionSource)
    assert all(name == kind.name for name, kind in SECTION_KINDS.items())


def test_rows_name_line_kinds_and_item_ids() -> None:
    lines = set(get_args(LineKind))
    for kind in SECTION_KINDS.values():
        assert kind.line_kind in lines and kind.pinned_lines <= lines, kind.name
        assert (kind.items is None) == (kind.item_id is None), kind.name
    assert set(ITEM_LINES) == {"chunk", "precedent"}
    assert pins.PINNED_KINDS == PINNED_LINES == {"fact", "aggregate", "chunk", "precedent"}


def _callouts(s: SectionDraft, si: int, inputs: SectionInputs) -> Collected:
    """A toy kind: one line per row of the section's patterns, upper-cased."""
    rows = [r for n in s.tpl.patterns for r in inputs.facts_by_pattern[n].rows]
    for i, r in enumerate(rows):
        s.cands.append(Candidate(si, i, i, "fact", str(r.properties["text"]).upper(), (r.node_id,)))
    return Collected()


def test_a_new_kind_is_one_row_and_its_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SECTION_KINDS, "callouts",
                        SectionKind(name="callouts", collect=_callouts, line_kind="fact",
                                    reads_patterns=True))
    tpl = SectionTemplate.model_construct(**{**SectionTemplate(name="c", title="Callouts", source="facts",
                                                               patterns=("alerts",)).__dict__, "source": "callouts"})
    rows = (Row(node_id="AL_1", label="Alert", properties={"text": "card frozen"}),)
    out = assemble([tpl], [PatternResult(pattern="alerts", version=1, sub_question="?", rows=rows)], [], [],
                   as_of=AS_OF, provenance=False)
    assert out.block.text == "[Callouts]\nCARD FROZEN"
    assert [ln.sources for ln in out.block.lines if ln.kind == "fact"] == [("AL_1",)]
    assert not out.block.omitted  # its patterns count as assigned (reads_patterns)
    assert section_kinds.section_kind("callouts").collect is _callouts
