"""The context assembler: a sectioned working set under one token budget, with provenance.

Sections and their order come from the goal's ``SectionTemplate`` list (data, not code). What
fills a section is its kind's collector, one row of
:data:`~hopweave.engine.section_kinds.SECTION_KINDS` per ``source``:

- ``facts`` (:mod:`~hopweave.engine.section_facts`): pattern rows rendered with the section's
  ``line`` template, preceded by ``aggregates`` (derived lines such as "22/24 months on-time"),
  with a note when a pattern was truncated or failed;
- ``chunks`` (:mod:`~hopweave.engine.section_chunks`): policy chunks ranked by fused score, cut at
  a score cliff, near-duplicates dropped, the best chunk of each source document first;
- ``precedent`` (:mod:`~hopweave.engine.section_precedent`): past decision traces ranked by
  similarity.

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

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Sequence

from hopweave.engine.context_lines import Candidate, SectionDraft, SectionInputs, plain_title, render
from hopweave.engine.result import (
    ChunkItem,
    ContextBlock,
    ContextLine,
    OmittedLine,
    PrecedentItem,
)
from hopweave.engine.section_kinds import ITEM_KINDS, ITEM_LINES, SectionKind, section_kind
from hopweave.engine.tokens import TokenCounter, count_joined, default_counter
from hopweave.models.common import PatternResult
from hopweave.models.metagraph import SectionTemplate


@dataclass(frozen=True)
class Assembly:
    """The context block and the ranked items of every item-showing section kind (by its
    ``items`` name), each marked ``in_context`` / ``omitted_reason``."""

    block: ContextBlock
    items: Mapping[str, tuple[Any, ...]]

    @property
    def chunks(self) -> tuple[ChunkItem, ...]:
        """The chunks, marked."""
        return self.items["chunks"]

    @property
    def precedent(self) -> tuple[PrecedentItem, ...]:
        """The precedent items, marked."""
        return self.items["precedent"]


@dataclass
class _Omissions:
    """What the assembler left out: lines, and why each ranked item was dropped (by the
    ``items`` name of its kind: chunks, precedent)."""

    lines: list[OmittedLine] = field(default_factory=list)
    items: dict[str, dict[str, str]] = field(default_factory=lambda: {k.items: {} for k in ITEM_KINDS if k.items})

    def over_budget(self, s: SectionDraft, c: Candidate) -> None:
        self.lines.append(OmittedLine(section=s.tpl.name, kind=c.kind, tokens=c.tokens, reason="token_budget",
                                      sources=c.sources))
        kind = ITEM_LINES.get(c.kind)
        if c.item_id and kind is not None and kind.items:
            self.items[kind.items][c.item_id] = "token_budget"


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
    items: Mapping[str, Sequence[Any]] | None = None,
) -> Assembly:
    """Build the context block: a [Note] section (when there are notes), then the goal's
    sections, selected greedily and round-robin under one token budget.

    Args:
        sections: The goal's section templates, in order.
        facts: The pattern results (rows) the sections' patterns produced.
        chunks: The ranked policy chunks (``chunks`` sections).
        precedent: The ranked precedent traces (``precedent`` sections).
        as_of: The request's instant (``as_of_year`` / ``as_of_date`` in templates).
        entities: Entity values by type (``entity_<Type>`` in templates).
        budget_tokens: The token budget of the whole block, headers included.
        counter: The tokenizer (the default counter when None).
        provenance: Whether lines end with an inline provenance marker.
        notes: Lines of the [Note] section, ranked first.
        items: The ranked items of any further item-showing section kind, by its ``items`` name.

    Returns:
        An :class:`Assembly`: the block plus every kind's ranked items marked ``in_context`` /
        ``omitted_reason``. Never raises for content; a budget too small even for the notes
        yields an empty block with everything listed as omitted.
    """
    counter = counter or default_counter()
    base = _base_values(as_of, entities)
    out = _Omissions()
    secs = [_note_section(notes)] if notes else []
    assigned: set[str] = set()
    ranked: dict[str, Sequence[Any]] = {"chunks": chunks, "precedent": precedent, **(items or {})}
    inputs = SectionInputs({f.pattern: f for f in facts}, ranked, base, provenance)
    for tpl in sections:
        tpl = _with_extra_patterns(tpl, facts)
        kind = section_kind(tpl.source)
        s = SectionDraft(tpl, "" if "{" in tpl.title and kind.item_titles else f"[{tpl.title}]")
        if kind.reads_patterns:
            assigned.update(tpl.patterns)
        got = kind.collect(s, len(secs), inputs)
        out.lines += got.omitted
        if kind.items:
            out.items[kind.items].update(got.dropped)
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
    return Assembly(block=block, items={k.items: _mark(ranked.get(k.items, ()), k, in_ctx, out.items[k.items])
                                        for k in ITEM_KINDS if k.items})



def _base_values(as_of: datetime, entities: Mapping[str, Any] | None) -> dict[str, Any]:
    """Values every template may use: ``as_of_year``, ``as_of_date``, ``entity_<Type>``."""
    base: dict[str, Any] = {"as_of_year": as_of.year, "as_of_date": as_of.date().isoformat()}
    for k, v in (entities or {}).items():
        base[f"entity_{k}"] = v
    return base


def _note_section(notes: Sequence[str]) -> SectionDraft:
    """The [Note] section: ranked first, so a tight budget keeps what the agent must know."""
    s = SectionDraft(SectionTemplate(name="note", title="Note", source="facts", priority=100, required=True), "[Note]")
    s.cands.extend(Candidate(0, i, -1, "note", n) for i, n in enumerate(notes))
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



def _mark_empty(s: SectionDraft, si: int) -> None:
    """An empty section still says so (its ``empty`` text), under its plain title."""
    if s.cands:
        return
    if not s.header:  # a per-chunk title template: head the empty section with its stem
        s.header = f"[{plain_title(s.tpl.title)}]"
    s.cands.append(Candidate(si, 0, -1, "empty", s.tpl.empty))


def _unassigned(facts: Sequence[PatternResult], assigned: set[str]) -> list[OmittedLine]:
    return [OmittedLine(section="", kind="fact", tokens=0, reason=f"pattern {f.pattern} feeds no section",
                        sources=tuple(r.node_id for r in f.rows))
            for f in facts if f.pattern not in assigned and f.rows]


def _select(secs: list[SectionDraft], budget: int, counter: TokenCounter, out: _Omissions) -> list[Candidate]:
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


def _first_line(s: SectionDraft) -> Candidate | None:
    return min((c for c in s.cands if c.rank > -1), key=lambda c: (c.rank, c.order), default=None)


#: Words a clipped required line keeps at the least (its reserved floor).
_CLIP_FLOOR_WORDS = 4


def _min_tokens(c: Candidate, counter: TokenCounter) -> int:
    """Tokens of ``c`` clipped to its floor (its item header and provenance marker included)."""
    if len(c.body.split()) <= _CLIP_FLOOR_WORDS:
        return c.tokens
    return counter.count(c.clipped(_CLIP_FLOOR_WORDS)) + (counter.count(c.header) if c.header else 0)


class _Selection:
    """The running state of :func:`_select`: tokens used overall and per section."""

    def __init__(self, secs: list[SectionDraft], budget: int, header_cost: list[int]) -> None:
        self.secs, self.budget, self.header_cost = secs, budget, header_cost
        self.used = 0
        self.paid: set[int] = set()
        self.seen: set[int] = set()
        self.section_used = [0] * len(secs)
        self.chosen: list[Candidate] = []

    def cost(self, c: Candidate) -> int:
        return c.tokens + (self.header_cost[c.section] if c.section not in self.paid else 0)

    def take(self, c: Candidate) -> bool:
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

    def take_clipped(self, c: Candidate, counter: TokenCounter, limit: int) -> bool:
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


def _fit(secs: list[SectionDraft], chosen: list[Candidate], budget: int, counter: TokenCounter,
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



def _mark(items: Sequence[Any], kind: SectionKind, in_ctx: set[str], why: dict[str, str]) -> tuple[Any, ...]:
    """``items`` (ranked items of ``kind``) marked ``in_context`` or with their ``omitted_reason``."""
    key = kind.item_id or str
    return tuple(it.model_copy(update={"in_context": key(it) in in_ctx, "omitted_reason": None
                                       if key(it) in in_ctx else why.get(key(it), "not_selected")})
                 for it in items)


def _render(secs: list[SectionDraft], chosen: list[Candidate], counter: TokenCounter) -> tuple[str, list[ContextLine]]:
    by_sec: dict[int, list[Candidate]] = {}
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
            count = sum(1 for c in cs if c.kind in ITEM_LINES)
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
