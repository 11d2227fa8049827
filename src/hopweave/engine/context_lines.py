"""The pieces every section kind's collector builds with: templates rendered over named values,
aggregates, text shingles, the candidate lines of a section, and the score-cliff cut.

A collector (one module per section kind, listed in :mod:`hopweave.engine.section_kinds`) fills
a :class:`SectionDraft` with :class:`Candidate` lines from :class:`SectionInputs` and returns
what it left out (:class:`Collected`); :func:`hopweave.engine.assemble.assemble` then selects
lines under the token budget and renders them. All pure.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, TypeVar

from hopweave.engine.result import OmittedLine
from hopweave.models.common import PatternResult, Row
from hopweave.models.filters import matches, parse_filter_cached
from hopweave.models.metagraph import Aggregate, Metric, SectionTemplate, template_problem

_WORD = re.compile(r"[a-z0-9$€%.]+")


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


def row_values(row: Row) -> dict[str, Any]:
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
class Candidate:
    """One line a section may show: where it goes (section, order), how early it is chosen
    (rank; -1 for notes and "none found"), its line kind, text and provenance."""

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
class SectionDraft:
    """A section being filled: its template, its header (empty when each item has its own) and
    its candidate lines."""

    tpl: SectionTemplate
    header: str
    cands: list[Candidate] = field(default_factory=list)


@dataclass(frozen=True)
class SectionInputs:
    """What the collectors read: the pattern results by pattern name, the ranked items of each
    item-showing kind (by its :attr:`~hopweave.engine.section_kinds.SectionKind.items` name:
    ``chunks``, ``precedent``), the values every template may use and whether lines carry an
    inline provenance marker."""

    facts_by_pattern: Mapping[str, PatternResult]
    items: Mapping[str, Sequence[Any]]
    base: Mapping[str, Any]
    provenance: bool


@dataclass
class Collected:
    """What a collector left out: lines (with why) and {item id: why} for the items it ranks."""

    omitted: list[OmittedLine] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)


class Scored(Protocol):
    """A ranked item (a chunk, a precedent trace): the cliff cut reads its score."""

    @property
    def score(self) -> float: ...


_Ranked = TypeVar("_Ranked", bound=Scored)


def cut_ranked(items: Sequence[_Ranked], tpl: SectionTemplate,
               key: Callable[[_Ranked], str]) -> tuple[list[_Ranked], dict[str, str]]:
    """Score-cliff cut over items sorted by score desc (``key`` gives an item's id); returns kept
    and {id: reason}.

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
        item = key(it)
        if stopped:
            dropped[item] = "score_cliff"
            continue
        if best > 0 and it.score < tpl.min_score_ratio * best:
            stopped = True
        elif prev is not None and prev > 0 and (prev - it.score) / prev > tpl.cliff_drop:
            stopped = True
        if stopped:
            dropped[item] = "score_cliff"
            continue
        kept.append(it)
        prev = it.score
    return kept, dropped




def src_suffix(sources: Iterable[str], provenance: bool) -> str:
    """The compact inline provenance marker a line ends with ("  (src: a, b, c +2)"; the full
    list stays on the line's ``sources``), or "" without provenance or sources."""
    src = list(sources)
    if not provenance or not src:
        return ""
    shown = ", ".join(src[:3]) + (f" +{len(src) - 3}" if len(src) > 3 else "")
    return f"  (src: {shown})"




def pattern_notes(s: SectionDraft, si: int, names: Sequence[str], facts_by_pattern: Mapping[str, PatternResult],
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
        s.cands.append(Candidate(si, 10_000 + order, -1, "note", note, (n,)))
        order += 1

