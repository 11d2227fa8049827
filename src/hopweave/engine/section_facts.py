"""The ``facts`` section kind: pattern rows rendered with the section's line templates, preceded
by its aggregates ("22/24 months on-time"), with a note when a pattern failed or was cut short.
Its row in :data:`hopweave.engine.section_kinds.SECTION_KINDS` names :func:`collect`."""

from __future__ import annotations

from hopweave.engine.context_lines import (
    Candidate,
    Collected,
    SectionDraft,
    SectionInputs,
    aggregate_line,
    pattern_notes,
    render,
    row_values,
    src_suffix,
)
from hopweave.engine.result import OmittedLine
from hopweave.models.common import Row
from hopweave.models.filters import matches, parse_filter_cached
from hopweave.models.metagraph import pattern_node_id


def collect(s: SectionDraft, si: int, inputs: SectionInputs) -> Collected:
    """Fill a facts section: its aggregates (derived lines over its patterns' rows), then one
    line per row (the section's ``row_patterns``, ``row_where`` and ``max_lines``), then a note
    for each of its patterns that failed, was cut short or did not run. Returns the row lines
    left out (``max_lines``)."""
    tpl, facts_by_pattern, base, provenance = s.tpl, inputs.facts_by_pattern, inputs.base, inputs.provenance
    names = list(tpl.patterns)
    rows_by_pattern = {n: facts_by_pattern[n].rows for n in names if n in facts_by_pattern}
    order = 0
    omitted: list[OmittedLine] = []
    for agg in tpl.aggregates:
        used = {m.pattern for m in agg.metrics.values() if m.pattern} or set(rows_by_pattern)
        pats = sorted(p for p in used if p in rows_by_pattern)
        # Provenance of a derived line: the pattern(s) that produced the rows, then the rows.
        srcs = tuple(pattern_node_id(p) for p in pats) + tuple(
            sorted({r.node_id for p in pats for r in rows_by_pattern[p]})
        )
        text = aggregate_line(agg, rows_by_pattern, base)
        if not text:
            continue
        shown = [f"{p}: {len(rows_by_pattern[p])} row{'' if len(rows_by_pattern[p]) == 1 else 's'}" for p in pats]
        src = src_suffix(shown, provenance)
        s.cands.append(Candidate(si, order, order, "aggregate", text + src, srcs, citation="; ".join(shown), src=src))
        order += 1
    row_names = names if tpl.row_patterns is None else [n for n in tpl.row_patterns if n in names]
    where = parse_filter_cached(tpl.row_where) if tpl.row_where else None
    rows: list[tuple[str, Row]] = []
    seen: set[str] = set()
    for n in row_names:
        for r in rows_by_pattern.get(n, ()):
            if r.node_id not in seen and matches(where, r.properties):
                seen.add(r.node_id)
                rows.append((n, r))
    for i, (n, r) in enumerate(rows):
        if i >= tpl.max_lines:
            omitted.append(OmittedLine(section=tpl.name, kind="fact", tokens=0, reason="max_lines", sources=(r.node_id,)))
            continue
        text = render(tpl.pattern_lines.get(n, tpl.line), row_values(r), tpl.line, "{summary}", "{label} {id}")
        src = src_suffix((r.node_id,), provenance)
        s.cands.append(Candidate(si, order, order, "fact", text + src, (r.node_id,), src=src))
        order += 1
    pattern_notes(s, si, names, facts_by_pattern, order)
    return Collected(omitted=omitted)
