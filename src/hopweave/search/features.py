"""Source-authority and structure features of search candidates (pure functions).

A profile with ``features`` (:class:`~hopweave.models.ranking.FeatureWeights`) adds, to every
fused candidate's score, ``weight * value`` per feature, computed from the candidate's payload
(``doc_type``, ``valid_from``, ``section``, ``heading``), the query and the goal's document
scope. Each value lies in [0, 1]; the hit reports every feature's value and contribution
(:class:`~hopweave.models.ranking.FeatureScore`), next to its channel contributions.

Everything here depends only on the candidates, the query and the scope: recency counts from the
newest ``valid_from`` among the candidates, never from the clock, so the same store and request
rank the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hopweave.models.ranking import FeatureScore, FeatureWeights
from hopweave.search.lexical import Tokenizer, TokenizerConfig

if TYPE_CHECKING:
    from hopweave.search.fusion import Fused, RawFused

#: Feature names, in the order a hit reports them.
FEATURES = ("doc_type", "recency", "scope", "section_heading", "section_number")
_NONE: Mapping[str, Any] = {}
_SECTION_NO = re.compile(r"(?<![\w.$€£])(\d+(?:\.\d+)+|§\s*\d+(?:\.\d+)*)(?![\w]|\.\d)")


@dataclass(frozen=True)
class FeatureContext:
    """What the features need besides a candidate's payload: the query's index terms and
    section numbers, the goal's document scope, and the newest ``valid_from`` among the
    candidates (the recency reference)."""

    query_terms: frozenset[str]
    query_sections: frozenset[str]
    scope: Mapping[str, tuple[Any, ...]]
    newest: date | None


def _date(value: Any) -> date | None:
    if isinstance(value, date):
        return value
    if isinstance(value, str) and len(value) >= 10:
        return _iso_date(value)
    return None


@lru_cache(maxsize=4096)  # a store's valid_from values repeat across candidates and requests
def _iso_date(value: str) -> date | None:
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None


def query_sections(query: str) -> frozenset[str]:
    """Section numbers the query names ("section 3.2", "§ 4", "3.2.1")."""
    return frozenset(m.group(1).lstrip("§").strip() for m in _SECTION_NO.finditer(query))


def context(
    query: str, tokenizer: Tokenizer, scope: Mapping[str, Sequence[Any]] | None, payloads: Sequence[Mapping[str, Any]]
) -> FeatureContext:
    """The FeatureContext of one search over ``payloads`` (the fused candidates)."""
    dates = [d for d in (_date(p.get("valid_from")) for p in payloads) if d is not None]
    return FeatureContext(
        query_terms=frozenset(tokenizer.tokenize(query)),
        query_sections=query_sections(query),
        scope={k: tuple(v) for k, v in (scope or {}).items() if v},
        newest=max(dates) if dates else None,
    )


def _numbers(w: FeatureWeights, ctx: FeatureContext, payload: Mapping[str, Any],
             tokenizer: Tokenizer) -> list[tuple[str, float, float]]:
    """(feature, value, weight) for one candidate, in :data:`FEATURES` order: what ranking needs
    (the explanations' details are built for the kept hits only, by :func:`_values`)."""
    out: list[tuple[str, float, float]] = []
    if w.doc_type or w.doc_type_default:
        dtype = payload.get("doc_type")
        out.append(("doc_type", 1.0,
                    w.doc_type.get(str(dtype), w.doc_type_default) if dtype is not None else w.doc_type_default))
    if w.recency:
        d = _date(payload.get("valid_from"))
        if d is None or ctx.newest is None:
            out.append(("recency", 0.0, w.recency))
        else:
            out.append(("recency", 0.5 ** (max(0, (ctx.newest - d).days) / w.recency_half_life_days), w.recency))
    if w.scope:
        out.append(("scope", _scope(ctx, payload), w.scope))
    if w.section_heading:
        heading = str(payload.get("heading") or payload.get("section") or "")
        terms = _heading_terms(heading, tokenizer.config) if heading else frozenset()
        out.append(("section_heading",
                    len(terms & ctx.query_terms) / len(ctx.query_terms) if ctx.query_terms else 0.0,
                    w.section_heading))
    if w.section_number:
        sec = str(payload.get("section") or "")
        named = bool(sec) and any(sec == q or sec.startswith(q + ".") for q in ctx.query_sections)
        out.append(("section_number", 1.0 if named else 0.0, w.section_number))
    return out


def _detail(name: str, ctx: FeatureContext, payload: Mapping[str, Any]) -> str:
    """The explanation detail of feature ``name`` for one candidate."""
    if name == "doc_type":
        dtype = payload.get("doc_type")
        return str(dtype) if dtype is not None else "undeclared"
    if name == "recency":
        d = _date(payload.get("valid_from"))
        if d is None or ctx.newest is None:
            return "no valid_from"
        return f"{max(0, (ctx.newest - d).days)} days older than the newest"
    if name == "scope":
        if not ctx.scope:
            return "no document scope"
        return ",".join(f"{k}={payload.get(k)}" for k in sorted(ctx.scope))
    if name == "section_heading":
        return str(payload.get("heading") or payload.get("section") or "")
    return str(payload.get("section") or "")


def _values(w: FeatureWeights, ctx: FeatureContext, payload: Mapping[str, Any],
            tokenizer: Tokenizer) -> dict[str, tuple[float, float, str]]:
    """feature -> (value, weight, detail) for one candidate."""
    return {n: (v, wt, _detail(n, ctx, payload)) for n, v, wt in _numbers(w, ctx, payload, tokenizer)}


def _total(numbers: Sequence[tuple[str, float, float]]) -> float:
    """The features' part of a candidate's score: ``sum`` of value * weight in feature order
    (the one expression every caller uses, so a score's float bits never depend on the path)."""
    return sum(v * wt for _, v, wt in numbers)


@lru_cache(maxsize=65_536)  # headings repeat across candidates and requests; pure per (heading, config)
def _heading_terms(heading: str, config: TokenizerConfig) -> frozenset[str]:
    return frozenset(Tokenizer(config).tokenize(heading))


def _scope(ctx: FeatureContext, payload: Mapping[str, Any]) -> float:
    if not ctx.scope:
        return 0.0
    parts = []
    for name in sorted(ctx.scope):
        values = ctx.scope[name]
        v = payload.get(name)
        parts.append(1.0 - values.index(v) / len(values) if v in values else 0.0)
    return sum(parts) / len(parts)


def score(w: FeatureWeights, ctx: FeatureContext, payload: Mapping[str, Any],
          tokenizer: Tokenizer) -> tuple[float, tuple[FeatureScore, ...]]:
    """(sum of the contributions, every feature's FeatureScore in :data:`FEATURES` order)."""
    return _total(_numbers(w, ctx, payload, tokenizer)), _explain(_values(w, ctx, payload, tokenizer))


def _explain(vals: Mapping[str, tuple[float, float, str]]) -> tuple[FeatureScore, ...]:
    return tuple(
        FeatureScore.model_construct(name=n, value=round(vals[n][0], 6), contribution=vals[n][1] * vals[n][0],
                                     detail=vals[n][2])
        for n in FEATURES if n in vals
    )


def with_features(
    weights: FeatureWeights,
    fused: Sequence["Fused | RawFused"],
    payloads: Mapping[str, Mapping[str, Any]],
    query: str,
    tokenizer: Tokenizer,
    scope: Mapping[str, Sequence[Any]] | None,
    limit: int | None = None,
) -> list["Fused"]:
    """``fused`` with every candidate's feature contributions added to its score, re-sorted
    (score descending, then chunk id) and cut to ``limit``; each kept candidate carries its
    FeatureScores. ``payloads`` holds each candidate's payload (at least
    :meth:`FeatureWeights.payload_fields`; a missing field gives that feature the value 0).
    ``fused`` holds :class:`Fused` candidates or raw ones (:func:`~hopweave.search.fusion.fuse_raw`:
    only the kept ones are then built)."""
    from dataclasses import replace

    from hopweave.search.fusion import Fused, fused_of

    keyed = [(f.chunk_id, f.score, f) if isinstance(f, Fused) else (f[0], f[1], f) for f in fused]
    ctx = context(query, tokenizer, scope, [payloads.get(cid, {}) for cid, _, _ in keyed])
    scored = []
    for cid, base, f in keyed:
        scored.append((base + _total(_numbers(weights, ctx, payloads.get(cid, _NONE), tokenizer)), cid, f))
    scored.sort(key=lambda t: (-t[0], t[1]))
    out = []
    for total, cid, f in scored[:limit]:  # explanations (details, models) for the kept ones only
        expl = _explain(_values(weights, ctx, payloads.get(cid, _NONE), tokenizer))
        out.append(replace(f, score=total, features=expl) if isinstance(f, Fused) else fused_of(f, total, expl))
    return out
