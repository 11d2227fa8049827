"""The small real DeltaBank store the engine, adapter and CLI tests share: its size and the
example pack's paths (the session fixtures on it are in tests/unit/conftest.py).

Importing this module puts the pack's generator (examples/deltabank) on ``sys.path``.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["EXAMPLE", "REPO", "SCENARIOS", "STORE_NODES", "build_store"]

#: The smallest population that still holds every customer the scenarios name (CUST_1000xx).
STORE_NODES = 3000
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "deltabank"
SCENARIOS = EXAMPLE / "scenarios"

if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))  # the pack's generator


def build_store(store: Path) -> Path:
    """Loads DeltaBank's pack at :data:`STORE_NODES` nodes into ``store`` and returns it."""
    from generator.build import load_deltabank

    load_deltabank(store, nodes=STORE_NODES)
    return store
