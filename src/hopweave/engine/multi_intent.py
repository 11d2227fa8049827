"""Multi-intent requests: an utterance carrying several requests is split on spans (never
guessed); each request a goal takes is retrieved under that goal within one shared token budget,
in one context with a section per part, and each request no goal takes is named.

The utterance is cut into candidate clauses with their character spans: at the classifier's
clause separators (pack data, ``classifier.yaml``), at additive conjunctions ("also", "by the
way", "besides", ...) and at a plain "and". The goal classifier reads every candidate clause
alone, all of them in one encoder call together with the whole utterance
(:meth:`~hopweave.understand.classifier.GoalClassifier.read_clauses`): a clause is

- a request of a goal (confident, with a score of at least ``min_part_score``): it starts a
  part unless the part before it has the same goal, which it then joins;
- a request no goal handles (it reads like the domain's out-of-scope references: see
  ``request_background``): it is named in ``RetrievalResult.unhandled`` and in the context
  ("heard but not handled: ... — no goal matched"), never dropped;
- a detail (anything else): it joins the part before it, or the next one when it opens the
  utterance or when it is cut from the part before by a sentence mark or additive conjunction
  and from the next only by a comma or "and".

A request is split when it has two parts or more, or a part and an unhandled clause; otherwise
it runs as one request on the whole utterance. Each part is one ordinary engine run (same
boundary, scope filters, rounds, assembly; its own decision trace). The combined result is the
first part's, with the context replaced by a [Not handled] section (when a clause was not
handled) and the parts' blocks (under ``[Request part i of n — Goal: "span"]`` headers when
there are several parts), ``parts`` listing each part, and a trace id derived from the parts'
ids; when the parts were recorded, the combined result is recorded under that id too (what the
agent saw).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import TYPE_CHECKING, Any, Sequence

from hopweave.bounded import DataRegex, compile_data_regex
from hopweave.engine.result import ContextBlock, ContextLine, RequestPart, RetrievalResult, UnhandledClause
from hopweave.engine.section_kinds import ITEM_KINDS
from hopweave.engine.tokens import count_joined
from hopweave.errors import HopweaveError

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.boundary import Request
    from hopweave.engine.deps import StageDeps
    from hopweave.engine.pipeline import Pipeline
    from hopweave.engine.tokens import TokenCounter

#: Conjunctions that add a request (a strong cut: the clause after one is a new request or a detail of the next).
ADDITIVE = re.compile(r"\b(?:and also|also|by the way|besides|while you're at it|and can you|and could you)\b",
                      re.IGNORECASE)
#: Further candidate cuts: a plain "and", a comma (weak cuts: a detail after one stays with what is before it).
_WEAK = re.compile(r"\band\b|,", re.IGNORECASE)
#: Sentence marks (a strong cut).
_SENTENCE_MARK = re.compile(r"[.?!;]")
#: At most this many parts per request (further requests a goal takes are named as unhandled).
MAX_PARTS = 3
#: The reason an unhandled clause gives when no goal took it.
NO_GOAL = "no goal matched"


@dataclasses.dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str
    additive: bool  # introduced by an additive conjunction
    strong: bool = False  # the cut before it is an additive conjunction or a sentence mark


@dataclasses.dataclass(frozen=True)
class Split:
    """How a request divides: the parts a goal takes (span, goal) and the clauses heard that no
    part answers (span, reason), both in utterance order."""

    parts: tuple[tuple[Span, str | None], ...]
    unhandled: tuple[tuple[Span, str], ...] = ()


def clause_spans(utterance: str, separators: re.Pattern[str] | DataRegex, min_words: int,
                 weak: bool = False) -> list[Span]:
    """The utterance's clauses with their spans (clauses under ``min_words`` words join the
    previous clause), cut at ``separators`` and additive conjunctions, and with ``weak`` also
    at a plain "and" and a comma. Returns [] when there is at most one clause. Raises
    UnsafeRegexError, RegexTimeoutError (the separators are pack data, matched time-bounded)."""
    out: list[Span] = []
    pos, additive, strong = 0, False, False
    alts = [ADDITIVE.pattern, separators.pattern] + ([_WEAK.pattern] if weak else [])
    both = compile_data_regex("|".join(f"(?:{a})" for a in alts), "classifier clause_separators")
    cuts = [(m.start(), m.end(), bool(ADDITIVE.fullmatch(m.group(0).strip())),
             bool(_SENTENCE_MARK.search(m.group(0)))) for m in both.finditer(utterance) if m.end() > m.start()]
    for start, end, add, mark in cuts + [(len(utterance), len(utterance), False, False)]:
        piece = utterance[pos:start]
        text = piece.strip()
        if text and len(text.split()) >= min_words:
            lead = len(piece) - len(piece.lstrip())
            out.append(Span(pos + lead, pos + lead + len(text), text, additive, strong or additive))
        elif text and out:
            last = out[-1]
            out[-1] = dataclasses.replace(last, end=start, text=utterance[last.start:start].strip())
        keep = not text  # an empty piece between two cuts: the next clause keeps both cuts' kinds
        pos, additive, strong = end, add or (additive and keep), add or mark or (strong and keep)
    return out if len(out) > 1 else []


#: An utterance with none of these has one clause (nothing to read clause by clause).
_CUTS = re.compile(rf"(?:{ADDITIVE.pattern})|(?:{_WEAK.pattern})|[.?!;]\s+\S", re.IGNORECASE)


def may_split(utterance: str) -> bool:
    """False when the utterance has a single candidate clause (no sentence mark followed by
    more text, no comma, "and" or additive conjunction): no classification is needed to know
    it cannot carry two requests."""
    return bool(_CUTS.search(utterance.rstrip()))


def _joined(utterance: str, a: Span, b: Span) -> Span:
    """The span from ``a``'s start to ``b``'s end (``a`` first)."""
    return dataclasses.replace(a, end=b.end, text=utterance[a.start:b.end].strip())


def retrieve(pipeline: "Pipeline", req: "Request", t0: float | None = None, shed: bool = False) -> RetrievalResult:
    """One request: split into parts when it carries several requests, else one run of the
    pipeline (:meth:`~hopweave.engine.pipeline.Pipeline.retrieve`).

    A request that may carry several intents takes its request slot before the split (whose
    encoder pass a burst would otherwise run for requests that never get a slot after it) and
    keeps it for the pipeline when it has one intent; the parts of a split request each take a
    slot of their own.

    Args:
        pipeline: the engine's pipeline.
        req: the checked request.
        t0: when its budget started (a ``time.perf_counter()`` instant; None: now).
        shed: raise OverloadedError rather than answer when no request slot freed up in time.

    Returns:
        The result (a combined one for a split request).

    Raises:
        What :meth:`~hopweave.engine.pipeline.Pipeline.retrieve` raises.
    """
    import time

    from hopweave.engine.admission import REFUSED

    deps = pipeline.deps
    if deps.single_pass or not may_split(req.utterance):
        return pipeline.retrieve(req, t0, shed)
    if deps.warm_up() is not None or t0 is None:  # warm-up is outside budgets
        t0 = time.perf_counter()
    budget_ms = req.budget_ms or deps.config.budget_ms
    end = t0 + (budget_ms - deps.config.reserve_ms(budget_ms)) / 1000.0
    grant = deps.admission.take(end, shed=shed, budget_ms=req.budget_ms)
    if not grant.granted:
        return pipeline.retrieve(req, t0, shed, grant=REFUSED)
    try:
        parts = split_intents(deps, req)
    except BaseException:
        deps.admission.release(grant)
        raise
    if not parts:  # one intent: the pipeline runs in the slot the split ran in
        return pipeline.retrieve(req, t0, shed, grant=grant)
    deps.admission.release(grant)
    # the parts share the request's one budget, which runs from the call
    return retrieve_parts(pipeline, req, parts, t0)


def split_intents(deps: "StageDeps", req: "Request") -> Split | None:
    """How the request divides (see the module docstring), or None when it is one request."""
    if not may_split(req.utterance):
        return None  # one candidate clause: nothing to read
    try:
        settings = deps.settings_for(req.session.tenant_id)
        clf = getattr(deps.understander_for(settings), "classifier", None)
        if clf is None:
            return None
        cfg = clf.config
        spans = clause_spans(req.utterance, cfg.separators(), cfg.min_clause_words, weak=True)[: cfg.max_clauses]
        if not spans:
            return None
        readings = clf.read_clauses(req.utterance, [s.text for s in spans])
    except HopweaveError:  # the single-intent path reports the failure as a degradation
        return None
    return divide(req.utterance, spans, [(r.goal, r.unhandled_request) for r in readings])


def divide(utterance: str, spans: Sequence[Span], readings: Sequence[tuple[str | None, bool]]) -> Split | None:
    """Group the clauses ``spans`` by their readings ((goal or None, reads as an unhandled
    request) each) into parts and unhandled clauses; None when that leaves one part and
    nothing unhandled, or no part at all (the whole utterance then runs as one request)."""
    items: list[list[Any]] = []  # [span, goal, handled]
    pending: list[Span] = []  # details waiting for the next item
    for i, (s, (goal, elsewhere)) in enumerate(zip(spans, readings)):
        if goal is None and not elsewhere:  # a detail
            nxt = readings[i + 1] if i + 1 < len(readings) else None
            forward = (items and s.strong and nxt is not None and not spans[i + 1].strong
                       and (nxt[1] or (nxt[0] is not None and nxt[0] != items[-1][1])))
            if not items or forward:
                pending.append(s)
            else:
                items[-1][0] = _joined(utterance, items[-1][0], s)
            continue
        if goal is not None and items and items[-1][2] and items[-1][1] == goal and not pending:
            items[-1][0] = _joined(utterance, items[-1][0], s)
            continue
        span = _joined(utterance, pending[0], s) if pending else s
        pending = []
        items.append([span, goal, goal is not None])
    if pending and items:
        items[-1][0] = _joined(utterance, items[-1][0], pending[-1])
    parts = [(sp, g) for sp, g, handled in items if handled]
    unhandled = [(sp, NO_GOAL) for sp, _, handled in items if not handled]
    unhandled += [(sp, f"over the {MAX_PARTS} parts one request is answered in") for sp, _ in parts[MAX_PARTS:]]
    if not parts or (len(parts) == 1 and not unhandled):
        return None
    return Split(tuple(parts[:MAX_PARTS]), tuple(sorted(unhandled, key=lambda u: u[0].start)))


def retrieve_parts(pipeline: "Pipeline", req: "Request", split: Split, t0: float | None = None) -> RetrievalResult:
    """Each part retrieved under its own goal within the request's one token budget and its one
    wall-clock budget, which runs from ``t0`` (the call; default now): each part gets an equal
    share of the time left when it starts. One combined result (see the module docstring)."""
    import time

    deps = pipeline.deps
    start = time.perf_counter() if t0 is None else t0
    deadline = start + (req.budget_ms or deps.config.budget_ms) / 1000.0
    budget = req.token_budget or deps.config.token_budget
    parts = split.parts
    n = len(parts)
    headers = [f'[Request part {i + 1} of {n} — {g or "no goal"}: "{s.text}"]' for i, (s, g) in enumerate(parts)] \
        if n > 1 else [""]
    unhandled = tuple(UnhandledClause(start=s.start, end=s.end, text=s.text, reason=why) for s, why in split.unhandled)
    note = _unhandled_block(unhandled)
    left = budget - sum(deps.counter.count(h) for h in headers if h) - 2 * n - deps.counter.count(note) - 2
    results: list[RetrievalResult] = []
    for i, (s, _) in enumerate(parts):
        share = max(1, left // (n - i))
        now = time.perf_counter()
        part_ms = max(1, int((deadline - now) * 1000 / (n - i)))
        r = pipeline.retrieve(dataclasses.replace(req, utterance=s.text, token_budget=share, budget_ms=part_ms), now)
        left -= r.context.tokens
        results.append(r)
    combined = combine(deps.counter, req, parts, headers, results, budget, unhandled)
    return _record_combined(pipeline, req, combined, deadline) if combined.recorded else combined


#: The header of the section that names the clauses heard but not handled.
NOT_HANDLED = "[Not handled]"


def _unhandled_block(unhandled: Sequence[UnhandledClause]) -> str:
    """The [Not handled] section's text ("" when every clause was handled)."""
    return "\n".join([NOT_HANDLED, *(u.line() for u in unhandled)]) if unhandled else ""


def _record_combined(pipeline: "Pipeline", req: "Request", combined: RetrievalResult,
                     deadline: float | None = None) -> RetrievalResult:
    """``combined`` with its own decision trace written (the trace id the caller gets must be
    found: it is the context the agent saw); ``recorded`` only when that write is durable
    before ``deadline`` (the request's; None: ``record_min_ms`` from now)."""
    import time

    from hopweave.engine.config import Run

    settings = pipeline.deps.settings_for(req.session.tenant_id)
    now = time.perf_counter()
    wait_ms = pipeline.deps.config.record_min_ms if deadline is None else int((deadline - now) * 1000)
    run = Run(req, settings, now, max(wait_ms, 1), [], {})
    recorded = pipeline.record(run, combined)
    return combined.model_copy(update={"recorded": recorded, "degraded": (*combined.degraded, *run.degraded)})


def combine(counter: "TokenCounter", req: "Request", parts: Sequence[tuple[Span, str | None]], headers: Sequence[str],
            results: Sequence[RetrievalResult], budget: int,
            unhandled: Sequence[UnhandledClause] = ()) -> RetrievalResult:
    """One result: the [Not handled] section (when a clause was not handled), then the parts'
    context blocks under their headers ("" for none: a single part), in utterance order."""
    blocks: list[str] = []
    lines: list[ContextLine] = []
    omitted: list[Any] = []
    sections: list[Any] = []
    if unhandled:
        blocks.append(_unhandled_block(unhandled))
        lines.append(ContextLine(section="not handled", kind="header", text=NOT_HANDLED,
                                 tokens=counter.count(NOT_HANDLED)))
        lines.extend(ContextLine(section="not handled", kind="note", text=u.line(),
                                 tokens=counter.count(u.line())) for u in unhandled)
    for h, r in zip(headers, results):
        if h:
            blocks.append(f"{h}\n\n{r.context.text}" if r.context.text else h)
            lines.append(ContextLine(section="request part", kind="header", text=h, tokens=counter.count(h)))
        elif r.context.text:
            blocks.append(r.context.text)
        lines.extend(r.context.lines)
        omitted.extend(r.context.omitted)
        sections.extend(x for x in r.context.sections if x not in sections)
    text = "\n\n".join(blocks)
    first = results[0]
    tokens = count_joined(counter, text, [ln.text for ln in lines])  # the lines are the text's parts
    block = ContextBlock(text=text, tokens=tokens, budget=budget, tokenizer=first.context.tokenizer,
                         sections=tuple(sections), lines=tuple(lines), omitted=tuple(omitted))
    items = tuple(RequestPart(start=s.start, end=s.end, text=s.text, goal=r.goal, confidence=r.confidence,
                              trace_id=r.trace_id, tokens=r.context.tokens, rounds=len(r.rounds),
                              clarify=r.clarify)
                  for (s, _), r in zip(parts, results))
    tid = "RT_" + hashlib.sha256("\0".join(r.trace_id for r in results).encode()).hexdigest()[:20]
    update: dict[str, Any] = {
        "trace_id": tid, "utterance": req.utterance, "context": block, "parts": items, "unhandled": tuple(unhandled),
        "facts": tuple(f for r in results for f in r.facts),
        **{k.items: tuple(x for r in results for x in getattr(r, k.items)) for k in ITEM_KINDS if k.items},
        "degraded": tuple(d for r in results for d in r.degraded),
        "rounds": tuple(x for r in results for x in r.rounds),
        "recorded": all(r.recorded for r in results),
        "timings_ms": {"total": round(sum(r.timings_ms.get("total", 0.0) for r in results), 3)},
    }
    return first.model_copy(update=update)


__all__ = ["Span", "Split", "clause_spans", "combine", "divide", "may_split", "retrieve", "retrieve_parts",
           "split_intents"]
