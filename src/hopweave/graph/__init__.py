"""Graph stores, the pattern walker, the pattern write gates and the traversal executor.

Exports are loaded lazily (importing ``hopweave.graph.base`` does not import networkx).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.networkx_store import NetworkxGraphStore
    from hopweave.models.schema import GraphSchema

_EXPORTS = {
    "GraphStore": "hopweave.graph.base",
    "Node": "hopweave.graph.base",
    "Edge": "hopweave.graph.base",
    "NetworkxGraphStore": "hopweave.graph.networkx_store",
    "walk": "hopweave.graph.walk",
    "run_goal_patterns": "hopweave.graph.traverse",
    "seed_entities": "hopweave.graph.traverse",
    "validate_pattern": "hopweave.graph.gates",
    "validate_all": "hopweave.graph.gates",
    "patterns_using": "hopweave.graph.gates",
    "load_goal_files": "hopweave.graph.metagraph_io",
    "write_metagraph": "hopweave.graph.metagraph_io",
    "load_metagraph": "hopweave.graph.metagraph_io",
}

__all__ = sorted([*_EXPORTS, "open_graph_store", "GRAPH_SUBDIR"])

#: Sub-directory of a hopweave store directory holding the embedded graph.
GRAPH_SUBDIR = "graph"


def open_graph_store(
    store_dir: str | Path, schema: "GraphSchema | None" = None, *, read_only: bool = False
) -> "NetworkxGraphStore":
    """Open (loading now) the embedded networkx store of the hopweave store directory
    ``store_dir`` (files in ``<store_dir>/graph/``). A missing directory is an empty store that
    is created on the first write. With no ``schema``, the schema (and the tenants' domains) kept
    in the store's settings file by ``hopweave load PACK`` is used, else the base schema.
    Raises StoreCorruptError for an unreadable one."""
    from hopweave.graph.networkx_store import NetworkxGraphStore
    from hopweave.models.store_settings import read_store_settings

    settings = read_store_settings(store_dir)
    if schema is None and settings is not None:
        schema = settings.schema()
    store = NetworkxGraphStore.open(Path(store_dir) / GRAPH_SUBDIR, schema, read_only=read_only)
    if settings is not None:
        store.tenant_domains = settings.tenant_domains()
    return store


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'hopweave.graph' has no attribute {name!r}")
    return getattr(importlib.import_module(mod), name)
