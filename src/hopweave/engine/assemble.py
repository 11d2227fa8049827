"""The context assembler: a sectioned working set under one token budget, with provenance.

Sections and their order come from the goal's ``SectionTemplate`` list (data, not code):

- ``facts`` sections render pattern rows with the section's ``line`` template, preceded by
  ``aggregates`` (derived lines such as "22/24 months on-time"), and say so when a pattern was
  truncated or failed;
- ``chunks`` sections render policy chunks: ranked by fused score, cut at a score cliff,
  near-duplicates dropped, the best chunk of each source document first (diversity);
- ``precedent`` sections render past decision traces ranked by similarity.

One budget covers everything (headers included), counted with a real tokenizer
(:mod:`hopweave.engine.tokens`). Sections declare (data) a ``priority``, a ``min_share`` of the
budget and whether they are ``required``. Selection is greedy: notes and "none found" lines first,
then the first line of every required section (clipped with "…" if nothing else makes room), then
each section's reserved share, then the rest tier by tier from the highest priority down,
round-robin within a tier (the first line of every section, then the second, ...). So under
pressure lower-priority sections shrink first and a required section never disappears (unless
the budget cannot hold its header and one word). A line that does not fit is left out whole and
recorded in ``ContextBlock.omitted``. The rendered text keeps template order. Everything here is
a pure function of its inputs: same inputs, same bytes.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from functools import lru_cache
from datetime import datetime
from typing import Any, Iterable, Mapping, Sequence, TypeVar

from hopweave.engine.result import (
    ChunkItem,
    ContextBlock,
    ContextLine,
    OmittedLine,
    PrecedentItem,
)
from hopweave.engine.tokens import TokenCounter, count_joined, default_counter
from hopweave.models.common import PatternResult, Row
from hopweave.models.filters import matches, parse_filter_cached
from hopweave.models.metagraph import Aggregate, Metric, SectionTemplate, pattern_node_id, template_problem

#: Jaccard similarity of word 3-shingles above which a chunk is a near-duplicate of a kept one.
NEAR_DUPLICATE = 0.8
_WORD = re.compile(r"[a-z0-9$€%.]+")


# ---------------------------------------------------------------------------- formatting
class _Formatter(string.Formatter):
    """str.format over named values only: a placeholder that is not a plain field name
    (``{x.attr}``, ``{x[0]}``, ``{0}``) or asks for ``!r`` / ``!a`` is treated as a missing value
    (the next fallback template is used), so no template can render a Python object's insides."""

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        if template_problem("{" + field_name + "}") is not None:
            raise KeyError(field_name)
        return super().get_field(field_name, args, kwargs)

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion not in (None, "s"):
            raise ValueError(f"conversion !{conversion} is not allowed in a template")
        return super().convert_field(value, conversion)

    def get_value(self, key: Any, args: Any, kwargs: Any) -> Any:
        v = super().get_value(key, args, kwargs)
        if v is None:
            raise KeyError(key)
        return v


_FMT = _Formatter()


def render(template: str, values: Mapping[str, Any], *fallbacks: str) -> str:
    """``template`` formatted over ``values``; on a missing value or bad format spec, the first
    fallback template that works; the last resort is ``""``."""
    for t in (template, *fallbacks):
        try:
            return " ".join(_FMT.vformat(t, (), dict(values)).split())
        except (KeyError, IndexError, ValueError, TypeError, AttributeError):
            continue
    return ""


def plain_title(title: str) -> str:
    """A title template without its placeholders: the text before the first ``{``, without
    trailing separators ("Applicable policy — {document}" -> "Applicable policy")."""
    return title.split("{", 1)[0].rstrip(" —–-:,;(") or title


def _row_values(row: Row) -> dict[str, Any]:
    d = dict(row.properties)
    d.setdefault("id", row.node_id)
    d.setdefault("label", row.label)
    return d


@lru_cache(maxsize=4096)  # pure; _chunk_order compares every pair of chunks
def shingles(text: str) -> frozenset[tuple[str, ...]]:
    """The word 3-grams of a text (lower-cased; the whole text when it has fewer than 3 words)."""
    words = _WORD.findall(text.lower())
    if len(words) < 3:
        return frozenset({tuple(words)})
    return frozenset(tuple(words[i : i + 3]) for i in range(len(words) - 2))


def jaccard(a: str, b: str) -> float:
    sa, sb = shingles(a), shingles(b)
    if not sa or not sb:
        return 0.0
    both = len(sa & sb)  # |a ∪ b| = |a| + |b| - |a ∩ b|: no union set built
    return both / (len(sa) + len(sb) - both)


# ---------------------------------------------------------------------------- aggregates
def _metric(metric: Metric, rows: Sequence[Row]) -> float | int | None:
    return metric_value(metric.fn, metric.property, metric.where, rows)


def metric_value(fn: str, prop: str | None, where_data: Mapping[str, Any] | None,
                 rows: Sequence[Row]) -> float | int | None:
    """A :class:`Metric`'s value over ``rows`` (``fn``, ``property``, ``where``), without
    building the model (case facts compute one per fact per request)."""
    where = parse_filter_cached(where_data) if where_data else None
    picked = [r for r in rows if matches(where, r.properties)]
    if fn == "count":
        return len(picked)
    if fn == "percent":
        return round(100 * len(picked) / len(rows)) if rows else None
    vals = [
        float(r.properties[prop])  # type: ignore[index]
        for r in picked
        if isinstance(r.properties.get(prop or ""), (int, float))
        and not isinstance(r.properties.get(prop or ""), bool)
    ]
    if not vals:
        return None
    if fn == "sum":
        return sum(vals)
    if fn == "min":
        return min(vals)
    if fn == "max":
        return max(vals)
    return sum(vals) / len(vals)


def aggregate_line(
    agg: Aggregate, rows_by_pattern: Mapping[str, Sequence[Row]], base: Mapping[str, Any]
) -> str:
    """Render one aggregate over the section's rows (``rows_by_pattern``)."""
    values = dict(base)
    all_rows = [r for rows in rows_by_pattern.values() for r in rows]
    for name, metric in agg.metrics.items():
        rows = rows_by_pattern.get(metric.pattern, ()) if metric.pattern else all_rows
        v = _metric(metric, rows)
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        values[name] = v
        values[f"{name}_s"] = "" if v == 1 else "s"
        values[f"{name}_es"] = "" if v == 1 else "es"
    return render(agg.line, values)


# ---------------------------------------------------------------------------- candidates
@dataclass
class _Cand:
    section: int
    order: int  # position in the rendered section
    rank: int  # selection priority within the section (0 first)
    kind: str
    text: str
    sources: tuple[str, ...] = ()
    citation: str = ""
    header: str | None = None  # per-item header (chunk sections with a templated title)
    item_id: str | None = None  # chunk id / trace id
    tokens: int = 0
    #: The provenance marker ``text`` ends with ("" if none): clipping shortens the text before it, never it.
    src: str = ""

    @property
    def body(self) -> str:
        """The text without its provenance marker."""
        return self.text[: len(self.text) - len(self.src)] if self.src else self.text

    def clipped(self, words: int) -> str:
        """The text cut to its first ``words`` words, "…", then its provenance marker."""
        return " ".join(self.body.split()[:words]) + " …" + self.src


@dataclass
class _Section:
    tpl: SectionTemplate
    header: str
    cands: list[_Cand] = field(default_factory=list)


@dataclass(frozen=True)
class Assembly:
    block: ContextBlock
    chunks: tuple[ChunkItem, ...]
    precedent: tuple[PrecedentItem, ...]


_Ranked = TypeVar("_Ranked", ChunkItem, PrecedentItem)


def _item_id(it: ChunkItem | PrecedentItem) -> str:
    return it.chunk_id if isinstance(it, ChunkItem) else it.trace_id


def _cut_ranked(items: Sequence[_Ranked], tpl: SectionTemplate) -> tuple[list[_Ranked], dict[str, str]]:
    """Score-cliff cut over items sorted by score desc; returns kept and {id: reason}.

    The cliff applies only when there are at least ``tpl.cliff_min_items`` items: fused scores
    are rescaled over the candidates, so among a few the last one rescales to about 0 however
    close its evidence is to the first's."""
    kept: list[_Ranked] = []
    dropped: dict[str, str] = {}
    if len(items) < tpl.cliff_min_items:
        return list(items), dropped
    best = items[0].score if items else 0.0
    prev = None
    stopped = False
    for it in items:
        key = _item_id(it)
        if stopped:
            dropped[key] = "score_cliff"
            continue
        if best > 0 and it.score < tpl.min_score_ratio * best:
            stopped = True
        elif prev is not None and prev > 0 and (prev - it.score) / prev > tpl.cliff_drop:
            stopped = True
        if stopped:
            dropped[key] = "score_cliff"
            continue
        kept.append(it)
        prev = it.score
    return kept, dropped


def _chunk_order(chunks: Sequence[ChunkItem], tpl: SectionTemplate) -> tuple[list[ChunkItem], dict[str, str]]:
    ranked = sorted(chunks, key=lambda c: (-c.score, c.chunk_id))
    kept, dropped = _cut_ranked(ranked, tpl)
    unique: list[ChunkItem] = []
    for c in kept:
        dup = next((u for u in unique if jaccard(u.text, c.text) >= NEAR_DUPLICATE), None)
        if dup is not None:
            dropped[c.chunk_id] = f"near_duplicate_of:{dup.chunk_id}"
        else:
            unique.append(c)
    # Diversity: greedy by score, each chunk's score decayed by ``document_decay`` per chunk
    # already taken from its document (1.0 = pure score order; 0 = one per document first).
    ordered: list[ChunkItem] = []
    taken: dict[str, int] = {}
    pool = list(unique)
    while pool:  # the best decayed score; ties: the earliest in the pool (by position, no model __eq__)
        at = max(range(len(pool)), key=lambda i: (
            pool[i].score * tpl.document_decay ** taken.get(f"{pool[i].document_id}@{pool[i].revision}", 0), -i))
        best = pool.pop(at)
        ordered.append(best)
        key = f"{best.document_id}@{best.revision}"
        taken[key] = taken.get(key, 0) + 1
    for c in ordered[tpl.max_lines :]:
        dropped[c.chunk_id] = "max_lines"
    return ordered[: tpl.max_lines], dropped


def _citation(c: ChunkItem) -> str:
    parts = [c.chunk_id, c.document or c.document_id]
    if c.revision:
        parts.append(c.revision)
    if c.version:
        parts.append(c.version)
    if c.section:
        parts.append(f"section {c.section}")
    return ", ".join(parts)


def _src_suffix(sources: Iterable[str], provenance: bool) -> str:
    """The compact inline provenance marker a line ends with ("  (src: a, b, c +2)"; the full
    list stays on the line's ``sources``), or "" without provenance or sources."""
    src = list(sources)
    if not provenance or not src:
        return ""
    shown = ", ".join(src[:3]) + (f" +{len(src) - 3}" if len(src) > 3 else "")
    return f"  (src: {shown})"


def _facts_section(
    s: _Section, si: int, facts_by_pattern: Mapping[str, PatternResult], base: Mapping[str, Any], provenance: bool
) -> list[OmittedLine]:
    tpl = s.tpl
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
        src = _src_suffix(shown, provenance)
        s.cands.append(_Cand(si, order, order, "aggregate", text + src, srcs, citation="; ".join(shown), src=src))
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
        text = render(tpl.pattern_lines.get(n, tpl.line), _row_values(r), tpl.line, "{summary}", "{label} {id}")
        src = _src_suffix((r.node_id,), provenance)
        s.cands.append(_Cand(si, order, order, "fact", text + src, (r.node_id,), src=src))
        order += 1
    _pattern_notes(s, si, names, facts_by_pattern, order)
    return omitted


def _pattern_notes(s: _Section, si: int, names: Sequence[str], facts_by_pattern: Mapping[str, PatternResult],
                   order: int, not_run: bool = True) -> None:
    """A note line for each of the section's patterns that failed, was cut short (not by its
    own limit) or, with ``not_run``, did not run: a partial answer is never silent."""
    for n in names:
        pr = facts_by_pattern.get(n)
        if pr is None:
            if not not_run:
                continue
            note = f"(not run: pattern {n})"
        elif pr.error:
            note = f"(unavailable: pattern {n} failed: {pr.error})"
        elif pr.truncated and pr.truncated_reason != "limit":  # a limit is the pattern's design
            note = f"(incomplete: pattern {n} truncated by {pr.truncated_reason or 'budget'})"
        else:
            continue
        # Notes rank first: an incomplete answer must be visible before its partial rows.
        s.cands.append(_Cand(si, 10_000 + order, -1, "note", note, (n,)))
        order += 1


@dataclass
class _Omissions:
    """What the assembler left out: lines, and why each chunk / precedent item was dropped."""

    lines: list[OmittedLine] = field(default_factory=list)
    chunks: dict[str, str] = field(default_factory=dict)
    precedent: dict[str, str] = field(default_factory=dict)

    def over_budget(self, s: _Section, c: _Cand) -> None:
        self.lines.append(OmittedLine(section=s.tpl.name, kind=c.kind, tokens=c.tokens, reason="token_budget",
                                      sources=c.sources))
        if c.item_id:
            (self.chunks if c.kind == "chunk" else self.precedent)[c.item_id] = "token_budget"


def assemble(
    sections: Sequence[SectionTemplate],
    facts: Sequence[PatternResult],
    chunks: Sequence[ChunkItem],
    precedent: Sequence[PrecedentItem],
    *,
    as_of: datetime,
    entities: Mapping[str, Any] | None = None,
    budget_tokens: int = 2000,
    counter: TokenCounter | None = None,
    provenance: bool = True,
    notes: Sequence[str] = (),
) -> Assembly:
    """Build the context block: a [Note] section (when there are notes), then the goal's
    sections, selected greedily and round-robin under one token budget.

    Returns an :class:`Assembly`: the block plus the chunks and precedent items marked
    ``in_context`` / ``omitted_reason``. Never raises for content; a budget too small even for
    the notes yields an empty block with everything listed as omitted.
    """
    counter = counter or default_counter()
    base = _base_values(as_of, entities)
    out = _Omissions()
    secs = [_note_section(notes)] if notes else []
    assigned: set[str] = set()
    facts_by_pattern = {f.pattern: f for f in facts}
    for tpl in sections:
        tpl = _with_extra_patterns(tpl, facts)
        s = _Section(tpl, "" if "{" in tpl.title and tpl.source == "chunks" else f"[{tpl.title}]")
        if tpl.source == "facts":
            assigned.update(tpl.patterns)
            out.lines += _facts_section(s, len(secs), facts_by_pattern, base, provenance)
        elif tpl.source == "chunks":
            out.chunks.update(_chunks_section(s, len(secs), chunks, provenance))
        else:
            assigned.update(tpl.patterns)
            out.precedent.update(_precedent_section(s, len(secs), precedent, facts_by_pattern))
        _mark_empty(s, len(secs))
        secs.append(s)
    out.lines += _unassigned(facts, assigned)
    chosen = _select(secs, budget_tokens, counter, out)
    text, lines, total = _fit(secs, chosen, budget_tokens, counter, out)
    in_ctx = {c.item_id for c in chosen if c.item_id}
    block = ContextBlock(
        text=text, tokens=total, budget=budget_tokens, tokenizer=counter.name,
        sections=tuple(secs[i].tpl.name for i in sorted({c.section for c in chosen})),
        lines=tuple(lines), omitted=tuple(out.lines),
    )
    return Assembly(block=block, chunks=_mark_chunks(chunks, in_ctx, out.chunks),
                    precedent=_mark_precedent(precedent, in_ctx, out.precedent))


def _base_values(as_of: datetime, entities: Mapping[str, Any] | None) -> dict[str, Any]:
    """Values every template may use: ``as_of_year``, ``as_of_date``, ``entity_<Type>``."""
    base: dict[str, Any] = {"as_of_year": as_of.year, "as_of_date": as_of.date().isoformat()}
    for k, v in (entities or {}).items():
        base[f"entity_{k}"] = v
    return base


def _note_section(notes: Sequence[str]) -> _Section:
    """The [Note] section: ranked first, so a tight budget keeps what the agent must know."""
    s = _Section(SectionTemplate(name="note", title="Note", source="facts", priority=100, required=True), "[Note]")
    s.cands.extend(_Cand(0, i, -1, "note", n) for i, n in enumerate(notes))
    return s


def _with_extra_patterns(tpl: SectionTemplate, facts: Sequence[PatternResult]) -> SectionTemplate:
    """The template plus the patterns that assign themselves to it (``pattern.section``); their
    rows get lines also in a section that lists its ``row_patterns`` (the list names the section's
    own patterns, not those added to it later, e.g. an approved learned pattern)."""
    extra = tuple(sorted(f.pattern for f in facts if f.section == tpl.name and f.pattern not in tpl.patterns))
    if not extra:
        return tpl
    rows = None if tpl.row_patterns is None else tuple(tpl.row_patterns) + extra
    return tpl.model_copy(update={"patterns": tuple(tpl.patterns) + extra, "row_patterns": rows})


def _chunks_section(s: _Section, si: int, chunks: Sequence[ChunkItem], provenance: bool) -> dict[str, str]:
    """Fill a chunks section; returns {chunk id: why it was dropped}."""
    tpl = s.tpl
    kept, dropped = _chunk_order(chunks, tpl)
    line_t = '"{text}"' if tpl.line == "{summary}" else tpl.line
    for i, c in enumerate(kept):
        vals = {**c.metadata, **c.model_dump(exclude={"metadata", "channels"})}
        short = " ".join(x for x in (c.chunk_id, c.revision, c.version) if x)
        src = _src_suffix((short,), provenance)
        header = f"[{render(tpl.title, vals, '{document}')}]" if "{" in tpl.title else None
        s.cands.append(_Cand(si, i, i, "chunk", render(line_t, vals, '"{text}"') + src, (c.chunk_id,), _citation(c),
                             header, c.chunk_id, src=src))
    return dropped


def _precedent_section(s: _Section, si: int, precedent: Sequence[PrecedentItem],
                       facts_by_pattern: Mapping[str, PatternResult]) -> dict[str, str]:
    """Fill a precedent section, with a note for each of its patterns that failed or was cut
    short (the candidate traces are then partial); returns {trace id: why it was dropped}."""
    tpl = s.tpl
    _pattern_notes(s, si, tpl.patterns, facts_by_pattern, len(precedent), not_run=False)
    kept, dropped = _cut_ranked(sorted(precedent, key=lambda p: (-p.score, p.trace_id)), tpl)
    for p in kept[tpl.max_lines :]:
        dropped[p.trace_id] = "max_lines"
    line_t = "{id}: {summary}" if tpl.line == "{summary}" else tpl.line
    for i, p in enumerate(kept[: tpl.max_lines]):
        vals = {**p.properties, "id": p.trace_id, "summary": p.summary, "score": p.score}
        text = render(line_t, vals, "{id}: {summary}", "{id}")
        s.cands.append(_Cand(si, i, i, "precedent", text, (p.trace_id,), item_id=p.trace_id))
    return dropped


def _mark_empty(s: _Section, si: int) -> None:
    """An empty section still says so (its ``empty`` text), under its plain title."""
    if s.cands:
        return
    if not s.header:  # a per-chunk title template: head the empty section with its stem
        s.header = f"[{plain_title(s.tpl.title)}]"
    s.cands.append(_Cand(si, 0, -1, "empty", s.tpl.empty))


def _unassigned(facts: Sequence[PatternResult], assigned: set[str]) -> list[OmittedLine]:
    return [OmittedLine(section="", kind="fact", tokens=0, reason=f"pattern {f.pattern} feeds no section",
                        sources=tuple(r.node_id for r in f.rows))
            for f in facts if f.pattern not in assigned and f.rows]


def _select(secs: list[_Section], budget: int, counter: TokenCounter, out: _Omissions) -> list[_Cand]:
    """Choose lines under one budget, in four passes (a section's header is paid with its first
    line; a line that does not fit is left out whole, or clipped when it is the only line of a
    required section):

    1. notes and "none found" lines (rank -1), highest-priority section first;
    2. the first line of every ``required`` section, by priority;
    3. each section's ``min_share`` of the budget, by priority;
    4. the rest, tier by tier from the highest priority down, round-robin within a tier (the
       first line of every section of the tier, then the second, ...).

    Returns the chosen candidates in the order they were chosen."""
    for s in secs:
        for c in s.cands:
            c.tokens = counter.count(c.text) + (counter.count(c.header) if c.header else 0)
    sel = _Selection(secs, budget, [counter.count(s.header) if s.header else 0 for s in secs])
    by_prio = sorted(range(len(secs)), key=lambda i: (-secs[i].tpl.priority, i))
    for i in by_prio:
        for c in secs[i].cands:
            if c.rank == -1:
                sel.take(c)
    firsts = [first for i in by_prio if secs[i].tpl.required and i not in sel.paid
              if (first := _first_line(secs[i])) is not None]
    floor = [sel.cost(c) - c.tokens + _min_tokens(c, counter) for c in firsts]
    for k, c in enumerate(firsts):  # leave room for a clipped line of each required section still to come
        room = sel.budget - sel.used - sum(floor[k + 1:])
        if sel.cost(c) > room or not sel.take(c):
            sel.take_clipped(c, counter, room)
    for i in by_prio:
        share = int(secs[i].tpl.min_share * budget)
        for c in sorted((c for c in secs[i].cands if c.rank > -1), key=lambda c: (c.rank, c.order)):
            if sel.section_used[i] + c.tokens > share:
                break
            sel.take(c)
    rest = (c for s in secs for c in s.cands if id(c) not in sel.seen)
    for c in sorted(rest, key=lambda c: (-secs[c.section].tpl.priority, c.rank, c.section, c.order)):
        if not sel.take(c):
            out.over_budget(secs[c.section], c)
    return sel.chosen


def _first_line(s: _Section) -> _Cand | None:
    return min((c for c in s.cands if c.rank > -1), key=lambda c: (c.rank, c.order), default=None)


#: Words a clipped required line keeps at the least (its reserved floor).
_CLIP_FLOOR_WORDS = 4


def _min_tokens(c: _Cand, counter: TokenCounter) -> int:
    """Tokens of ``c`` clipped to its floor (its item header and provenance marker included)."""
    if len(c.body.split()) <= _CLIP_FLOOR_WORDS:
        return c.tokens
    return counter.count(c.clipped(_CLIP_FLOOR_WORDS)) + (counter.count(c.header) if c.header else 0)


class _Selection:
    """The running state of :func:`_select`: tokens used overall and per section."""

    def __init__(self, secs: list[_Section], budget: int, header_cost: list[int]) -> None:
        self.secs, self.budget, self.header_cost = secs, budget, header_cost
        self.used = 0
        self.paid: set[int] = set()
        self.seen: set[int] = set()
        self.section_used = [0] * len(secs)
        self.chosen: list[_Cand] = []

    def cost(self, c: _Cand) -> int:
        return c.tokens + (self.header_cost[c.section] if c.section not in self.paid else 0)

    def take(self, c: _Cand) -> bool:
        """Choose ``c`` if it fits (and was not chosen yet). Returns whether it is chosen."""
        if id(c) in self.seen:
            return True
        cost = self.cost(c)
        if self.used + cost > self.budget:
            return False
        self.used += cost
        self.section_used[c.section] += cost
        self.paid.add(c.section)
        self.seen.add(id(c))
        self.chosen.append(c)
        return True

    def take_clipped(self, c: _Cand, counter: TokenCounter, limit: int) -> bool:
        """Choose ``c`` cut to the words that fit ``limit`` tokens (and the budget), ending in "…"
        and then its provenance marker, which is never cut (a required section's only line).
        Returns False when not even one word and the marker fit."""
        limit = min(limit, self.budget - self.used)
        room = limit - (self.cost(c) - c.tokens) - (counter.count(c.header) if c.header else 0)
        lo, hi = 0, len(c.body.split()) - 1  # the longest prefix whose clipped text fits: binary search
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if counter.count(c.clipped(mid)) <= room:
                lo = mid
            else:
                hi = mid - 1
        if lo == 0:
            return False
        clipped = c.clipped(lo)
        c.text = clipped
        c.tokens = counter.count(clipped) + (counter.count(c.header) if c.header else 0)
        return self.take(c)


def _fit(secs: list[_Section], chosen: list[_Cand], budget: int, counter: TokenCounter,
         out: _Omissions) -> tuple[str, list[ContextLine], int]:
    """Render, dropping the last chosen lines while the text is over budget (title
    placeholders such as ``{count}`` can shift a count). Returns (text, lines, tokens)."""
    text, lines = _render(secs, chosen, counter)
    total = count_joined(counter, text, [ln.text for ln in lines])
    while total > budget and chosen:
        c = chosen.pop()
        out.over_budget(secs[c.section], c)
        text, lines = _render(secs, chosen, counter)
        total = count_joined(counter, text, [ln.text for ln in lines])
    return text, lines, total


def _mark_chunks(chunks: Sequence[ChunkItem], in_ctx: set[str], why: dict[str, str]) -> tuple[ChunkItem, ...]:
    return tuple(c.model_copy(update={"in_context": c.chunk_id in in_ctx, "omitted_reason": None
                                      if c.chunk_id in in_ctx else why.get(c.chunk_id, "not_selected")})
                 for c in chunks)


def _mark_precedent(items: Sequence[PrecedentItem], in_ctx: set[str],
                    why: dict[str, str]) -> tuple[PrecedentItem, ...]:
    return tuple(p.model_copy(update={"in_context": p.trace_id in in_ctx, "omitted_reason": None
                                      if p.trace_id in in_ctx else why.get(p.trace_id, "not_selected")})
                 for p in items)


def _render(secs: list[_Section], chosen: list[_Cand], counter: TokenCounter) -> tuple[str, list[ContextLine]]:
    by_sec: dict[int, list[_Cand]] = {}
    for c in chosen:
        by_sec.setdefault(c.section, []).append(c)
    blocks: list[str] = []
    lines: list[ContextLine] = []
    for i, s in enumerate(secs):
        cs = sorted(by_sec.get(i, []), key=lambda c: c.order)
        if not cs:
            continue
        out: list[str] = []
        if s.header:
            count = sum(1 for c in cs if c.kind in ("precedent", "chunk"))
            header = render(s.header, {"count": count, "count_s": "" if count == 1 else "s"}, s.header)
            out.append(header)
            lines.append(ContextLine(section=s.tpl.name, kind="header", text=header, tokens=counter.count(header)))
        for c in cs:
            if c.header:
                if out and not s.header:
                    out.append("")
                out.append(c.header)
                lines.append(ContextLine(section=s.tpl.name, kind="header", text=c.header,
                                         tokens=counter.count(c.header), sources=c.sources, citation=c.citation))
            out.append(c.text)
            lines.append(ContextLine(section=s.tpl.name, kind=c.kind, text=c.text,
                                     tokens=counter.count(c.text), sources=c.sources, citation=c.citation))
        blocks.append("\n".join(out))
    return "\n\n".join(blocks), lines
