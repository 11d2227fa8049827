"""An async request queued for a worker of the engine's request pool, answered within its budget
whatever the queue does: :func:`retrieve_queued` is the work of ``Engine.aretrieve``."""

from __future__ import annotations

import asyncio
import functools
import time
from concurrent.futures import Executor
from typing import Callable

from hopweave.engine import multi_intent
from hopweave.engine.admission import Admission, Ticket
from hopweave.engine.boundary import Request
from hopweave.engine.pipeline import Pipeline
from hopweave.engine.result import RetrievalResult


async def retrieve_queued(pipeline: Callable[[], Pipeline], pool: Executor, admission: Admission, req: Request,
                          t0: float, *, shed: bool, warm: bool) -> RetrievalResult:
    """Run ``req`` on ``pool``; a request still queued when only its finish reserve is left is
    answered degraded at once on the calling thread (or refused, with ``shed``).

    Args:
        pipeline: makes the pipeline a run works on (called once per run).
        pool: the request pool (never the stage pool: a request blocks on its stage futures).
        admission: the engine's admission (its finish reserve and its overload error).
        req: the checked request. t0: when its budget started (``time.perf_counter()``).
        shed: refuse rather than answer degraded without a worker or slot in time.
        warm: whether the engine is warm (a cold engine's first request waits for its warm-up,
            outside any budget, so it is not timed out while queued).

    Returns:
        The request's result.

    Raises:
        OverloadedError: with ``shed``, no worker or slot in time. What the run raises.
    """
    loop = asyncio.get_running_loop()
    ticket = Ticket()
    work = loop.run_in_executor(pool, ticket.wrap(functools.partial(multi_intent.retrieve, pipeline(), req, t0, shed)))
    if warm:
        budget_s = (req.budget_ms or admission.config.budget_ms) / 1000.0
        wait = budget_s - admission.finish_reserve_ms(budget_s * 1000) / 1000.0 - (time.perf_counter() - t0)
        done, _ = await asyncio.wait({work}, timeout=max(wait, 0.0))
        if not done and ticket.abandon():  # still queued for a worker: answer degraded (or shed), now
            if shed:
                raise admission.overloaded(req.budget_ms, "no worker took the request before its deadline")
            return multi_intent.retrieve(pipeline(), req, t0)
    result = await work  # started: its stages end at its deadline
    assert result is not None  # only an abandoned ticket returns None, and that was not awaited
    return result
