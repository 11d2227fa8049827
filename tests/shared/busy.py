"""An engine at capacity, for admission and ladder tests: every request slot held and the last
holds long, so each request is told at once that the full pipeline does not fit its budget."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["all_slots_held"]


@contextmanager
def all_slots_held(engine: Any, hold_ms: float = 5_000.0) -> Iterator[Any]:
    """Warm ``engine``, record eight holds of ``hold_ms``, take every free request slot; on exit,
    give the slots back. Yields ``engine``."""
    engine.warmup()
    for _ in range(8):
        engine.admission.hold_clock.add(hold_ms, True)
    held = 0
    while engine.admission.slots.acquire(0):
        held += 1
    try:
        yield engine
    finally:
        for _ in range(held):
            engine.admission.slots.release()
