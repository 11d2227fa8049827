"""The degradation ladder: what a request answers with when it cannot get the full pipeline in
time, as rows of data (:data:`LADDER`).

Admission (:mod:`hopweave.engine.admission`) picks the rung and hands it over in the
:class:`~hopweave.engine.admission.Grant`; the pipeline reads the rung's row and runs what it
keeps. Every rung below ``full`` says in ``result.degraded`` what it left out: one
``engine`` / ``request capacity`` item naming the rung, then one item per part left out (the
row's :attr:`RungSpec.left_out`), and the context block's ``[Note]`` section carries the rung's
note. Same input and same rung: the same output, byte for byte (the rung decides what runs,
never the clock). Every rung runs the same tenant scoping as the full path: the filter comes
from the same understanding and the search and the patterns go through the same stores' walls.

==================  ======================================================  =========================
rung                keeps                                                   left out
==================  ======================================================  =========================
full                every stage                                             nothing
facts_and_lexical   understanding, the goal's patterns (the customer's      the semantic channel,
                    facts) and precedent, a lexical-only (BM25) search       later rounds, rerank
                    over the same pre-filtered set (its query with the
                    goal's search question added)
nothing             no stage started: the fallback plan (no goal, no        every stage (each
                    patterns, ``clarify``)                                  flags itself), the
                                                                            decision trace
==================  ======================================================  =========================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hopweave.engine.result import Degradation, Rung, Stage

#: A part of the pipeline a rung leaves out (the ``what`` of its degradation item).
Part = Literal["semantic channel", "later rounds", "rerank", "decision trace"]


@dataclass(frozen=True)
class LeftOut:
    """One part a rung leaves out: the stage it belongs to, the part, and what stands in for it."""

    stage: Stage
    what: Part
    fallback: str


@dataclass(frozen=True)
class RungSpec:
    """One rung of the ladder.

    Attributes:
        name: the rung (``result.rung``).
        keeps: what the rung answers with (the ``fallback`` of its ``request capacity`` item).
        left_out: the parts it leaves out, each one degradation item (a rung that runs no
            stage lists only the trace: each skipped stage flags itself, as out of time).
        stages: whether any stage runs (False: the request's budget ends at once).
        semantic: whether the document search uses its semantic channel.
        later_rounds: whether a multi-round goal runs its later rounds.
        rerank: whether the goal's (or the engine's) reranker runs.
        record: whether a decision trace is recorded (when the request asks for one).
    """

    name: Rung
    keeps: str
    left_out: tuple[LeftOut, ...] = ()
    stages: bool = True
    semantic: bool = True
    later_rounds: bool = True
    rerank: bool = True
    record: bool = True

    def note(self) -> str:
        """The context block's ``[Note]`` line for this rung (empty for ``full``)."""
        if self.name == "full":
            return ""
        parts = ", ".join(p.what for p in self.left_out if p.stage != "record") if self.stages else "every stage"
        return (f"The engine was at capacity: answered on the {self.name} rung ({self.keeps}); left out: "
                f"{parts}.")

    def degradations(self, reason: str) -> list[Degradation]:
        """The degradation items of an answer on this rung: ``engine`` / ``request capacity``
        (``reason`` says why the full pipeline did not run) and one per part left out (none for
        ``full``)."""
        if self.name == "full":
            return []
        return [Degradation(stage="engine", what="request capacity", reason=reason,
                            fallback=f"rung {self.name}: {self.keeps}"),
                *(Degradation(stage=p.stage, what=p.what, reason=f"left out on the {self.name} rung",
                              fallback=p.fallback) for p in self.left_out)]


#: The rungs, best first.
LADDER: dict[Rung, RungSpec] = {
    spec.name: spec
    for spec in (
        RungSpec("full", "every stage"),
        RungSpec(
            "facts_and_lexical",
            "understanding, the goal's facts and precedent, a lexical-only search over the same filtered set",
            left_out=(
                LeftOut("search", "semantic channel", "the lexical (BM25) channel ranks alone"),
                LeftOut("search", "later rounds", "the first pass only"),
                LeftOut("search", "rerank", "the fused order"),
            ),
            semantic=False, later_rounds=False, rerank=False,
        ),
        RungSpec(
            "nothing",
            "generic retrieval without patterns; clarify",
            # it saw nothing worth an audit record: its CPU goes to the answers that see something
            left_out=(LeftOut("record", "decision trace", "result returned without a recorded trace (recorded=False)"),),
            stages=False, semantic=False, later_rounds=False, rerank=False, record=False,
        ),
    )
}


def rung(name: Rung) -> RungSpec:
    """The row of rung ``name`` (a :data:`~hopweave.engine.result.Rung`; KeyError for another)."""
    return LADDER[name]


__all__ = ["LADDER", "LeftOut", "Part", "RungSpec", "rung"]
