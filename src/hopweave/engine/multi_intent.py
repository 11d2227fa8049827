"""Multi-intent requests (issue 15, item 3): an utterance carrying two goals is split on spans
(never guessed) and each part is retrieved under its own goal within one shared token budget,
in one context with a section per part.

Splitting reuses the classifier's clause separators (pack data, ``classifier.yaml``): the
utterance is cut at every separator into clauses with their character spans, and each clause is
classified. The request is multi-intent when

- two or more clauses are confidently classified to *different* goals (a clause that abstains
  joins the part before it), or
- one goal is confident and a later clause, introduced by an *additive* conjunction ("also",
  "and also", "by the way", "besides", "while you're at it"), matches no goal: it becomes a
  part of its own, retrieved with the no-goal plan (generic document search, ``clarify``).

Only utterances with at least one separator pay for the clause classification (one embedding
batch); single-intent requests run exactly as before. Several sentences without an additive
conjunction are not split when the whole utterance is decisive for one goal (the classifier's
``decisive_confidence``): its one vector is the one understanding uses anyway. Each part is one ordinary engine run (same
boundary, scope filters, rounds, assembly; its own decision trace). The combined result is the
first part's, with the context replaced by the parts' blocks under ``[Request part i of n — Goal:
"span"]`` headers, ``parts`` listing each part, and a trace id derived from the parts' ids; when
the parts were recorded, the combined result is recorded under that id too (what the agent saw).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import TYPE_CHECKING, Any, Sequence

from hopweave.bounded import DataRegex, compile_data_regex
from hopweave.engine.tokens import count_joined
from hopweave.engine.result import ContextBlock, ContextLine, RequestPart, RetrievalResult
from hopweave.errors import HopweaveError

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.boundary import Request

#: Conjunctions that add a request (a clause after one of them may be a new, goal-less intent).
ADDITIVE = re.compile(r"\b(?:and also|also|by the way|besides|while you're at it|and can you|and could you)\b",
                      re.IGNORECASE)
#: More than one sentence (a separator mark followed by at least three more words).
_SENTENCES = re.compile(r"[.?!;]\s+[A-Za-z'’]+\s+[A-Za-z'’]+\s+[A-Za-z'’]+")
#: A clause that asks for something (a goal-less clause after an additive conjunction must).
_REQUEST = re.compile(r"\?|^\s*(?:tell|what|when|where|how|can|could|would|please|show|give|send|let)\b",
                      re.IGNORECASE)
#: At most this many parts per request.
MAX_PARTS = 3


@dataclasses.dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str
    additive: bool  # introduced by an additive conjunction


def clause_spans(utterance: str, separators: re.Pattern[str] | DataRegex, min_words: int) -> list[Span]:
    """The utterance's clauses with their spans (clauses under ``min_words`` words join the
    previous clause). Returns [] when there is at most one clause. Raises UnsafeRegexError,
    RegexTimeoutError (the separators are pack data, matched time-bounded)."""
    out: list[Span] = []
    pos, additive = 0, False
    both = compile_data_regex(f"(?:{ADDITIVE.pattern})|(?:{separators.pattern})", "classifier clause_separators")
    cuts = [(m.start(), m.end(), bool(ADDITIVE.fullmatch(m.group(0).strip()))) for m in both.finditer(utterance)
            if m.end() > m.start()]
    for start, end, add in cuts + [(len(utterance), len(utterance), False)]:
        piece = utterance[pos:start]
        text = piece.strip()
        if text and len(text.split()) >= min_words:
            lead = len(piece) - len(piece.lstrip())
            out.append(Span(pos + lead, pos + lead + len(text), text, additive))
        elif text and out:
            last = out[-1]
            out[-1] = dataclasses.replace(last, end=start, text=utterance[last.start:start].strip())
        pos, additive = end, add or (additive and not text)
    return out if len(out) > 1 else []


def may_split(utterance: str) -> bool:
    """False when the utterance cannot carry two intents (no additive conjunction and one
    sentence): no classification is needed to know it (commas alone never split)."""
    return bool(ADDITIVE.search(utterance) or _SENTENCES.search(utterance.rstrip()))


def split_intents(engine: Any, req: "Request") -> list[tuple[Span, str | None]] | None:
    """The request's parts as (span, goal or None), or None for a single-intent request."""
    if not may_split(req.utterance):
        return None  # single-intent requests pay nothing
    try:
        settings = engine.settings_for(req.session.tenant_id)
        clf = getattr(engine.understander_for(settings), "classifier", None)
        if clf is None:
            return None
        cfg = clf.config
        if not ADDITIVE.search(req.utterance) and clf.decisive(req.utterance):
            return None  # sentences without an added request, and one goal decides the whole
        spans = clause_spans(req.utterance, cfg.separators(), cfg.min_clause_words)[: cfg.max_clauses]
        if not spans:
            return None
        goals = [c.goal for c in clf.classify_many([s.text for s in spans])]
    except HopweaveError:  # the single-intent path reports the failure as a degradation
        return None
    parts: list[tuple[Span, str | None]] = []
    for s, g in zip(spans, goals):
        new_request = s.additive and bool(_REQUEST.search(s.text)) and parts and parts[-1][1] is not None
        if parts and (g is None and not new_request or g == parts[-1][1]):
            prev, pg = parts[-1]
            parts[-1] = (dataclasses.replace(prev, end=s.end, text=req.utterance[prev.start:s.end].strip()), pg)
        else:
            parts.append((s, g))
    while parts and parts[0][1] is None and len(parts) > 1:  # a goal-less opening joins the first goal
        (a, _), (b, gb) = parts[0], parts[1]
        parts[:2] = [(dataclasses.replace(b, start=a.start, text=req.utterance[a.start:b.end].strip()), gb)]
    confident = [g for _, g in parts if g is not None]
    if len(parts) < 2 or not confident:
        return None
    return parts[:MAX_PARTS]


def retrieve_parts(engine: Any, req: "Request", parts: Sequence[tuple[Span, str | None]],
                   t0: float | None = None) -> RetrievalResult:
    """Each part retrieved under its own goal within the request's one token budget and its one
    wall-clock budget, which runs from ``t0`` (the call; default now): each part gets an equal
    share of the time left when it starts. One combined result (see the module docstring)."""
    import time

    start = time.perf_counter() if t0 is None else t0
    deadline = start + (req.budget_ms or engine.config.budget_ms) / 1000.0
    budget = req.token_budget or engine.config.token_budget
    n = len(parts)
    headers = [f'[Request part {i + 1} of {n} — {g or "no goal"}: "{s.text}"]' for i, (s, g) in enumerate(parts)]
    left = budget - sum(engine.counter.count(h) for h in headers) - 2 * n
    results: list[RetrievalResult] = []
    for i, (s, _) in enumerate(parts):
        share = max(1, left // (n - i))
        now = time.perf_counter()
        part_ms = max(1, int((deadline - now) * 1000 / (n - i)))
        r = engine._retrieve_one(dataclasses.replace(req, utterance=s.text, token_budget=share, budget_ms=part_ms), now)
        left -= r.context.tokens
        results.append(r)
    combined = combine(engine, req, parts, headers, results, budget)
    return _record_combined(engine, req, combined, deadline) if combined.recorded else combined


def _record_combined(engine: Any, req: "Request", combined: RetrievalResult,
                     deadline: float | None = None) -> RetrievalResult:
    """``combined`` with its own decision trace written (the trace id the caller gets must be
    found: it is the context the agent saw); ``recorded`` only when that write is durable
    before ``deadline`` (the request's; None: ``record_min_ms`` from now)."""
    import time

    from hopweave.engine.config import Run

    settings = engine.settings_for(req.session.tenant_id)
    now = time.perf_counter()
    wait_ms = engine.config.record_min_ms if deadline is None else int((deadline - now) * 1000)
    run = Run(req, settings, now, max(wait_ms, 1), [], {})
    recorded = engine._record(run, combined)
    return combined.model_copy(update={"recorded": recorded, "degraded": (*combined.degraded, *run.degraded)})


def combine(engine: Any, req: "Request", parts: Sequence[tuple[Span, str | None]], headers: Sequence[str],
            results: Sequence[RetrievalResult], budget: int) -> RetrievalResult:
    """One result: the parts' context blocks under their headers, in utterance order."""
    blocks: list[str] = []
    lines: list[ContextLine] = []
    omitted: list[Any] = []
    sections: list[Any] = []
    for h, r in zip(headers, results):
        blocks.append(f"{h}\n\n{r.context.text}" if r.context.text else h)
        lines.append(ContextLine(section="request part", kind="header", text=h, tokens=engine.counter.count(h)))
        lines.extend(r.context.lines)
        omitted.extend(r.context.omitted)
        sections.extend(x for x in r.context.sections if x not in sections)
    text = "\n\n".join(blocks)
    first = results[0]
    tokens = count_joined(engine.counter, text, [ln.text for ln in lines])  # the lines are the text's parts
    block = ContextBlock(text=text, tokens=tokens, budget=budget, tokenizer=first.context.tokenizer,
                         sections=tuple(sections), lines=tuple(lines), omitted=tuple(omitted))
    items = tuple(RequestPart(start=s.start, end=s.end, text=s.text, goal=r.goal, confidence=r.confidence,
                              trace_id=r.trace_id, tokens=r.context.tokens, rounds=len(r.rounds),
                              clarify=r.clarify)
                  for (s, _), r in zip(parts, results))
    tid = "RT_" + hashlib.sha256("\0".join(r.trace_id for r in results).encode()).hexdigest()[:20]
    update: dict[str, Any] = {
        "trace_id": tid, "utterance": req.utterance, "context": block, "parts": items,
        "chunks": tuple(c for r in results for c in r.chunks), "facts": tuple(f for r in results for f in r.facts),
        "precedent": tuple(p for r in results for p in r.precedent),
        "degraded": tuple(d for r in results for d in r.degraded),
        "rounds": tuple(x for r in results for x in r.rounds),
        "recorded": all(r.recorded for r in results),
        "timings_ms": {"total": round(sum(r.timings_ms.get("total", 0.0) for r in results), 3)},
    }
    return first.model_copy(update=update)


__all__ = ["Span", "clause_spans", "combine", "may_split", "retrieve_parts", "split_intents"]
