"""Whole-engine congruence (issue 16 item 2): every scenario of a pack through ``Engine.retrieve``
on two store pairs, compared field by field.

What must be identical: the whole :class:`~hopweave.engine.result.RetrievalResult` (goal,
entities, filter, chunks with their scores and channels, facts with their rows, precedent, the
context block line by line, degradations, rounds, trace id, revisions) except wall-clock timings
(``timings_ms``, each fact's ``elapsed_ms``); and the recorded DecisionTrace as each store reads
it back, except its timings and its ``asked_at`` (wall-clock instants). Runs use the replay
budgets (``REPLAY_CONFIG``: a busy machine cuts no walk by time, as in ``hopweave replay`` and
the demo), so timing never makes two runs differ.

A difference that is a documented capability row of :mod:`hopweave.graph.capabilities` would be
listed in :data:`CAPABILITY_ROWS` with the row that explains it; today there is none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hopweave.engine.engine import Engine
from hopweave.engine.replay import check, load_scenario, run_scenario, scenario_paths

#: (pack, scenario) -> capability row explaining an expected difference. Empty: every scenario
#: must be identical.
CAPABILITY_ROWS: dict[tuple[str, str], str] = {}


def comparable_result(r: Any) -> dict[str, Any]:
    d = r.model_dump(mode="json")
    d.pop("timings_ms", None)
    for f in d.get("facts", ()):
        f.pop("elapsed_ms", None)
    return d


def comparable_trace(engine: Engine, tenant: str, trace_id: str) -> dict[str, Any] | None:
    from hopweave.engine import record as trace_record
    from hopweave.errors import NotFoundError

    try:
        t = trace_record.load(engine.graph, tenant, trace_id)
    except NotFoundError:
        return None
    d = t.model_dump(mode="json")
    d.pop("timings_ms", None)
    d.pop("asked_at", None)  # when the request arrived: wall clock, like the timings
    return d


#: Scores may differ by this much: the capability row "vector scores" of docs/parity.md
#: (qdrant-client's local mode scores in Python/numpy, qdrant-edge in Rust; the results carry
#: scores rounded to 6 decimals, which then differ in the last digits; ranks, ids and contexts do not).
SCORE_TOLERANCE = 1e-5
SCORE_KEYS = ("score", "contribution")


def first_differences(a: Any, b: Any, path: str = "", out: list[str] | None = None, limit: int = 6,
                      tol: float = SCORE_TOLERANCE) -> list[str]:
    """Paths where two JSON-like values differ, with both values (at most ``limit``); floats
    under a ``score`` / ``contribution`` key within ``tol`` are equal."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if (path.rsplit(".", 1)[-1] in SCORE_KEYS and isinstance(a, float) and isinstance(b, float)
            and abs(a - b) <= tol):
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            first_differences(a.get(k, "<missing>"), b.get(k, "<missing>"), f"{path}.{k}", out, limit, tol)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            first_differences(x, y, f"{path}[{i}]", out, limit, tol)
    elif a != b:
        def short(v: Any) -> str:
            s = json.dumps(v, default=str, sort_keys=True)
            return s if len(s) < 300 else s[:300] + "..."
        out.append(f"{path or '<root>'}: {short(a)} != {short(b)}")
    return out


@dataclass
class PackOutcome:
    pack: str
    scenarios: int = 0
    identical: int = 0
    #: of those, how many had some score differ (within SCORE_TOLERANCE; the rest byte-equal)
    scores_within_tolerance: int = 0
    capability: dict[str, str] = field(default_factory=dict)
    differences: dict[str, list[str]] = field(default_factory=dict)
    #: scenarios whose own expectations failed (on the reference pair; reported, the
    #: shipped-pack replay tests own them)
    failed_expectations: dict[str, list[str]] = field(default_factory=dict)


def run_pack(pack: Path, ref: Engine, other: Engine) -> PackOutcome:
    """Every scenario of ``pack`` on both engines, in file order (the same order on both, so
    recorded traces accumulate alike)."""
    out = PackOutcome(pack.name)
    for path in scenario_paths([pack / "scenarios"]):
        sc = load_scenario(path)
        a = run_scenario(ref, sc)
        b = run_scenario(other, sc)
        out.scenarios += 1
        ca, cb = comparable_result(a), comparable_result(b)
        diffs = first_differences(ca, cb)
        exact = ca == cb
        for r, eng in ((a, ref), (b, other)):
            if not r.recorded:
                diffs.append(f"trace not recorded on {type(eng.graph).__name__}: "
                             f"{[d.reason for d in r.degraded if d.stage == 'record']}")
        if not diffs and a.recorded:
            ta = comparable_trace(ref, a.tenant_id, a.trace_id)
            tb = comparable_trace(other, b.tenant_id, b.trace_id)
            diffs += [f"trace{d}" for d in first_differences(ta, tb)]
        fails = check(sc, a)
        if fails:
            out.failed_expectations[sc.name] = fails
        row = CAPABILITY_ROWS.get((pack.name, sc.name))
        if not diffs:
            out.identical += 1
            out.scores_within_tolerance += not exact
        elif row is not None:
            out.capability[sc.name] = row
        else:
            out.differences[sc.name] = diffs
    return out


def describe(out: PackOutcome) -> str:
    """The summary line of one pack: ``48 deltabank scenarios identical (...)``."""
    return (f"{out.identical} {out.pack} scenarios identical"
            + (f" ({out.scores_within_tolerance} with scores within {SCORE_TOLERANCE:g})"
               if out.scores_within_tolerance else "")
            + (f", {len(out.capability)} capability rows" if out.capability else ""))


def assert_congruent(out: PackOutcome) -> None:
    """Every scenario identical or a listed capability row, and every scenario's own
    expectations met (on the reference pair; the other pair is identical to it)."""
    assert out.scenarios >= 10, f"{out.pack}: only {out.scenarios} scenarios"
    assert not out.differences, f"{len(out.differences)} {out.pack} scenarios differ:\n" + "\n".join(
        f"{name}:\n  " + "\n  ".join(d) for name, d in out.differences.items())
    assert not out.failed_expectations, out.failed_expectations
    assert set(out.capability) == {s for p, s in CAPABILITY_ROWS if p == out.pack}, out.capability
