"""The context section kinds, as data: what fills a goal's section (``SectionTemplate.source``).

Everything that differs between two kinds is one row of :data:`SECTION_KINDS`: the collector
that fills a section of the kind (its own module), the line kind of its item lines, the ranked
items it shows (marked ``in_context`` / ``omitted_reason`` on the result field of that name),
whether a templated title heads each item, whether its patterns' rows feed it, whether its
aggregates describe the case for precedent similarity, and what a recorded trace pins of its
lines. The assembler (:mod:`hopweave.engine.assemble`), the plan, the multi-intent merge and
the pins (:mod:`hopweave.engine.pins`) read the rows; add a row (and its name in
``SectionSource``, :mod:`hopweave.models.metagraph`) instead of writing ``if source == ...``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from hopweave.engine import section_chunks, section_facts, section_precedent
from hopweave.engine.context_lines import Collected, SectionDraft, SectionInputs
from hopweave.engine.result import LineKind
from hopweave.models.metagraph import SectionSource

#: (section being filled, its index in the block, the inputs) -> what the collector left out.
Collector = Callable[[SectionDraft, int, SectionInputs], Collected]


@dataclass(frozen=True)
class SectionKind:
    """One section kind (one ``SectionTemplate.source`` value)."""

    name: SectionSource
    #: Fills a section of this kind with candidate lines.
    collect: Collector
    #: The ``ContextLine.kind`` of its item lines.
    line_kind: LineKind
    #: The ranked items it shows: the name of their ``assemble`` argument, ``Assembly`` entry
    #: and ``RetrievalResult`` field (None: it shows pattern rows, not items of its own).
    items: str | None = None
    #: An item's id (the key of its omission reasons); set with ``items``.
    item_id: Callable[[Any], str] | None = None
    #: A title with placeholders heads each item (no section header then).
    item_titles: bool = False
    #: The patterns the section names (or that name it) feed it: their rows are not "unassigned".
    reads_patterns: bool = False
    #: Its aggregate lines are part of the case text precedent similarity compares.
    describes_case: bool = False
    #: The line kinds whose whole text a recorded trace pins.
    pinned_lines: frozenset[LineKind] = frozenset()
    #: The sources of its pinned lines are graph nodes whose properties a trace pins (a hash).
    pins_rows: bool = False


SECTION_KINDS: Mapping[str, SectionKind] = {
    "facts": SectionKind(name="facts", collect=section_facts.collect, line_kind="fact", reads_patterns=True,
                         describes_case=True, pinned_lines=frozenset({"fact", "aggregate"}), pins_rows=True),
    "chunks": SectionKind(name="chunks", collect=section_chunks.collect, line_kind="chunk", items="chunks",
                          item_id=section_chunks.chunk_id, item_titles=True, pinned_lines=frozenset({"chunk"})),
    "precedent": SectionKind(name="precedent", collect=section_precedent.collect, line_kind="precedent",
                             items="precedent", item_id=section_precedent.trace_id, reads_patterns=True,
                             pinned_lines=frozenset({"precedent"})),
}

#: The kinds that show ranked items of their own, in table order.
ITEM_KINDS: tuple[SectionKind, ...] = tuple(k for k in SECTION_KINDS.values() if k.items)
#: Line kind of an item line -> its section kind (the lines a header's ``{count}`` counts).
ITEM_LINES: Mapping[str, SectionKind] = {k.line_kind: k for k in ITEM_KINDS}
#: Line kind -> the section kind whose lines have it (its item lines and its pinned lines).
LINE_KINDS: Mapping[str, SectionKind] = {lk: k for k in SECTION_KINDS.values()
                                         for lk in (k.line_kind, *sorted(k.pinned_lines))}
#: Line kinds whose whole text a recorded trace pins.
PINNED_LINES: frozenset[str] = frozenset().union(*(k.pinned_lines for k in SECTION_KINDS.values()))
#: Line kinds whose sources are graph nodes whose properties a trace pins.
ROW_PINNED_LINES: frozenset[str] = frozenset().union(
    *(k.pinned_lines for k in SECTION_KINDS.values() if k.pins_rows))


def section_kind(source: str) -> SectionKind:
    """The row of ``source`` (a ``SectionTemplate.source``; the model admits only table names)."""
    return SECTION_KINDS[source]


__all__ = ["ITEM_KINDS", "ITEM_LINES", "LINE_KINDS", "PINNED_LINES", "ROW_PINNED_LINES", "SECTION_KINDS", "Collector", "SectionKind",
           "section_kind"]
