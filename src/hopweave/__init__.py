"""hopweave: compositional retrieval for AI agents.

``from hopweave import Engine, Session`` is the entry point; names are imported lazily so that
``import hopweave`` stays cheap (no model, no store is touched until you open an Engine).
"""

from __future__ import annotations

import importlib
from typing import Any

from hopweave.errors import HopweaveError

__version__ = "0.1.0"

_LAZY = {
    "Engine": "hopweave.engine.engine",
    "Session": "hopweave.models.common",
}

__all__ = ["Engine", "HopweaveError", "Session", "__version__"]


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'hopweave' has no attribute {name!r}")
    return getattr(importlib.import_module(mod), name)
