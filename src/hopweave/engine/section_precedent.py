"""The ``precedent`` section kind: past decision traces ranked by similarity to the case. Its
row in :data:`hopweave.engine.section_kinds.SECTION_KINDS` names :func:`collect`."""

from __future__ import annotations

from hopweave.engine.context_lines import (
    Candidate,
    Collected,
    SectionDraft,
    SectionInputs,
    cut_ranked,
    pattern_notes,
    render,
)
from hopweave.engine.result import PrecedentItem


def trace_id(p: PrecedentItem) -> str:
    """A precedent item's id (what its lines cite and the omissions are keyed by)."""
    return p.trace_id


def collect(s: SectionDraft, si: int, inputs: SectionInputs) -> Collected:
    """Fill a precedent section from the ranked traces (``inputs.items["precedent"]``), with a
    note for each of its patterns that failed or was cut short (the candidate traces are then
    partial); returns {trace id: why it was dropped}."""
    tpl, precedent, facts_by_pattern = s.tpl, inputs.items["precedent"], inputs.facts_by_pattern
    pattern_notes(s, si, tpl.patterns, facts_by_pattern, len(precedent), not_run=False)
    kept, dropped = cut_ranked(sorted(precedent, key=lambda p: (-p.score, p.trace_id)), tpl, trace_id)
    for p in kept[tpl.max_lines :]:
        dropped[p.trace_id] = "max_lines"
    line_t = "{id}: {summary}" if tpl.line == "{summary}" else tpl.line
    for i, p in enumerate(kept[: tpl.max_lines]):
        vals = {**p.properties, "id": p.trace_id, "summary": p.summary, "score": p.score}
        text = render(line_t, vals, "{id}: {summary}", "{id}")
        s.cands.append(Candidate(si, i, i, "precedent", text, (p.trace_id,), item_id=p.trace_id))
    return Collected(dropped=dropped)
