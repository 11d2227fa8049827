"""The traversal executor: a goal's patterns, run in parallel, each within its own budget.

Works with any :class:`~hopweave.graph.base.GraphStore` (networkx, FalkorDB, Neo4j): each pattern
is one ``store.run_pattern`` call on a worker thread, with its own deadline (start +
``budget_ms``). A pattern that errors or overruns never affects the others: it yields a
PatternResult with ``error`` / ``truncated`` set. Results come back in pattern-name order.

A store whose walks run in this process and stop at their own deadline
(``GraphStore.walks_in_process``: the embedded networkx store) runs the patterns one after
another on the calling thread instead: under the GIL a pool only adds hand-offs. Each pattern
then stops at the earlier of its own deadline and the instant the pool would have given up
waiting for it, with its rows so far, flagged truncated.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError as FutureTimeout
from typing import Any, Sequence

from hopweave.errors import HopweaveError, TenantError
from hopweave.graph.base import GraphStore
from hopweave.models.common import Bindings, PatternResult, check_tenant
from hopweave.models.metagraph import TraversalPattern

_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()
#: Extra time, beyond a pattern's budget, the executor waits before reporting it as overrun
#: (backends check their deadline inside the walk; this only guards against a stuck backend).
GRACE_MS = 250.0


def _pool(max_workers: int) -> ThreadPoolExecutor:
    with _POOLS_LOCK:
        pool = _POOLS.get(max_workers)
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="hopweave-traverse")
            _POOLS[max_workers] = pool
        return pool


def _failed(p: TraversalPattern, error: str, reason: str, elapsed_ms: float) -> PatternResult:
    return PatternResult(
        pattern=p.name,
        version=p.version,
        sub_question=p.sub_question,
        section=p.section,
        rows=(),
        truncated=True,
        truncated_reason=reason,
        elapsed_ms=round(elapsed_ms, 3),
        error=error,
    )


def _run_one(store: GraphStore, tenant_id: str, p: TraversalPattern, bindings: Bindings,
             latest: float | None = None) -> PatternResult:
    """One pattern, within its budget from now (and by ``latest``, a perf_counter instant)."""
    start = time.perf_counter()
    deadline = start + p.budget_ms / 1000.0
    try:
        return store.run_pattern(tenant_id, p, bindings, deadline if latest is None else min(deadline, latest))
    except TenantError:
        raise
    except HopweaveError as exc:
        return _failed(p, f"{type(exc).__name__}: {exc}", "error", (time.perf_counter() - start) * 1000)
    except Exception as exc:  # a backend bug must not take the other patterns down
        return _failed(p, f"{type(exc).__name__}: {exc}", "error", (time.perf_counter() - start) * 1000)


def run_goal_patterns(
    store: GraphStore,
    tenant_id: str,
    patterns: Sequence[TraversalPattern],
    bindings: Bindings,
    max_workers: int = 8,
) -> list[PatternResult]:
    """Run ``patterns`` for ``tenant_id`` in parallel; return one PatternResult per pattern, by name.

    Never raises for a failing or slow pattern (its result carries ``error`` / ``truncated``);
    raises TenantError for a malformed tenant or a backend that leaked another tenant's rows."""
    check_tenant(tenant_id)
    ordered = sorted(patterns, key=lambda p: p.name)
    if not ordered:
        return []
    if len(ordered) == 1 or max_workers <= 1:
        return [_run_one(store, tenant_id, p, bindings) for p in ordered]
    submitted = time.perf_counter()
    if getattr(type(store), "walks_in_process", False):  # (the class's: a proxy object runs on the pool)
        per_worker = 1 + len(ordered) // max_workers
        return [_run_one(store, tenant_id, p, bindings, submitted + p.budget_ms * per_worker / 1000.0)
                for p in ordered]
    pool = _pool(max_workers)
    futures: list[Future[PatternResult]] = [
        pool.submit(_run_one, store, tenant_id, p, bindings) for p in ordered
    ]
    results: list[PatternResult] = []
    leak: TenantError | None = None
    for p, fut in zip(ordered, futures):
        # Wait for the pattern's own budget (+ grace), measured from submission; queued patterns
        # start late only when there are more patterns than workers.
        waited = (time.perf_counter() - submitted) * 1000
        timeout = max(p.budget_ms * (1 + len(ordered) // max_workers) + GRACE_MS - waited, 1.0) / 1000
        try:
            results.append(fut.result(timeout=timeout))
        except FutureTimeout:
            fut.cancel()
            results.append(
                _failed(
                    p,
                    "the backend did not return within budget",
                    "budget_ms",
                    (time.perf_counter() - submitted) * 1000,
                )
            )
        except TenantError as exc:
            leak = exc
    if leak is not None:
        raise leak
    return results


def seed_entities(store: GraphStore, tenant_id: str, seed_label: str, seed_id: str) -> dict[str, Any]:
    """Entity bindings implied by a seed node: for each vocabulary label ``L`` of the schema whose
    lower-case name is a property of the seed (e.g. Subscriber.plan -> ``Plan``), ``{L: value}``.

    Used when no utterance was resolved (``hopweave traverse``) so patterns binding
    ``entity.Tier`` still work from the customer's own facts. Returns {} when the node is
    not visible."""
    node = store.get_node(tenant_id, seed_id)
    if node is None or node.label != seed_label:
        return {}
    out: dict[str, Any] = {}
    for label in store.schema.vocabulary_labels():
        value = node.props.get(label.lower())
        if isinstance(value, (str, int, float, bool)):
            out[label] = value
    return out
