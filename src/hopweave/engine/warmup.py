"""Warming an engine up: its parts' first-call costs (the encoder session, spaCy and the
classifier's index, the graph store's lazily built indexes, the vector shard, the tokenizer and
the metagraph) paid once, outside any request's budget, and the heap they leave frozen.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable

from hopweave.engine.stages import DocumentIndex, warm_index
from hopweave.engine.tokens import TokenCounter
from hopweave.graph.base import GraphStore
from hopweave.search.embedder import Embedder
from hopweave.understand.understander import UnderstandingStage

#: The timings :func:`warm_parts` returns, in this order.
PARTS = ("embedder", "understander", "graph", "vector_index", "tokenizer_and_metagraph")


class WarmUp:
    """Once per engine: whether it is warm, and the one warm-up a cold engine's first request
    (or a call of :meth:`ensure`) runs, whichever thread asks first."""

    def __init__(self, warm: bool = False) -> None:
        self._warm = warm
        self._lock = threading.Lock()

    @property
    def warm(self) -> bool:
        """True once the engine was warmed up (or marked warm)."""
        return self._warm

    def mark_warm(self) -> None:
        """Count the engine as warm without warming it (its parts are warm already, or the
        caller accepts first-call costs inside the first request's budget)."""
        self._warm = True

    def ensure(self, work: Callable[[], object]) -> float | None:
        """Run ``work`` (the warm-up) unless the engine is warm; a failure is left to the
        request that meets it again.

        Args:
            work: the warm-up itself.

        Returns:
            The milliseconds it took, or None when the engine was already warm.
        """
        if self._warm:
            return None
        with self._lock:
            if self._warm:
                return None
            t = time.perf_counter()
            try:
                work()
            except Exception:  # a failing stage is reported by the request itself
                pass
            self._warm = True
            return _ms(t)


def warm_parts(embedder: Callable[[], Embedder], understanders: Iterable[UnderstandingStage], graph: GraphStore,
               index: DocumentIndex | None, counter: TokenCounter, metagraph: Callable[[], object]) -> dict[str, float]:
    """Load the parts' models and caches now, side by side (much of each is I/O or native code,
    so a cold start overlaps them), then the tokenizer and the metagraph, then freeze the heap
    (:func:`freeze_warm_heap`).

    Args:
        embedder: the engine's embedder (called in the pool: building it is part of the cost).
        understanders: the understanding stages to warm (one per domain).
        graph: the graph store (:meth:`GraphStore.warmup`).
        index: the vector index, if any (one search as a tenant that owns nothing).
        counter: the context's token counter.
        metagraph: reads the goals and patterns into the engine's cache.

    Returns:
        Each part's own wall time in ms (rounded to 0.1), keyed as in :data:`PARTS`.

    Raises:
        What a part raises (the caller decides whether a cold part is an error).
    """
    out: dict[str, float] = {}
    stages = list(understanders)

    def timed(name: str, work: Callable[[], object]) -> None:
        t = time.perf_counter()
        work()
        out[name] = _ms(t)

    def warm_understanders() -> None:
        for stage in stages:
            stage.warmup()

    parts: list[tuple[str, Callable[[], object]]] = [
        ("embedder", lambda: embedder().embed(["warm up"])), ("understander", warm_understanders),
        ("graph", graph.warmup)]
    if index is not None:
        parts.append(("vector_index", lambda: warm_index(index, embedder())))
    with ThreadPoolExecutor(max_workers=len(parts), thread_name_prefix="hopweave-warmup") as pool:
        for f in [pool.submit(timed, name, work) for name, work in parts]:
            f.result()
    t = time.perf_counter()
    counter.count("warm up")
    metagraph()
    out["tokenizer_and_metagraph"] = _ms(t)
    freeze_warm_heap()
    return {k: round(out[k], 1) for k in PARTS if k in out}


def freeze_warm_heap() -> bool:
    """After a warm-up, move what it loaded (models, caches, pipelines) out of the cyclic GC's
    reach too, when the process has already frozen its heap (the embedded store does at
    ``FREEZE_THRESHOLD`` nodes): a full collection would otherwise rescan those long-lived
    objects in the middle of a retrieval. One full collection first, so no garbage is frozen.

    Returns:
        Whether it froze (False when the collector is off or nothing was frozen before).
    """
    import gc

    if not gc.isenabled() or gc.get_freeze_count() == 0:
        return False
    gc.collect()
    gc.freeze()
    return True


def _ms(t: float) -> float:
    return round((time.perf_counter() - t) * 1000, 3)


__all__ = ["PARTS", "WarmUp", "freeze_warm_heap", "warm_parts"]
