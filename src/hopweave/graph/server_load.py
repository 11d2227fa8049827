"""Open a server graph store (Neo4j or FalkorDB) and load the DeltaBank example into it.

The same ``(tenant, items)`` batches the embedded store is built from (``hopweave.deltabank``:
generator, policy documents, gated metagraph) go through :meth:`CypherGraphStore.bulk_load`, so
every backend holds the same graph. Used by ``hopweave load-server`` and the congruence tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

from hopweave.errors import ConfigError
from hopweave.graph.base import Edge, Node
from hopweave.models.schema import GLOBAL_TENANT, GraphSchema

Batch = tuple[str, Iterable[Node | Edge]]


def deltabank_batches(
    schema: GraphSchema,
    *,
    nodes: int | None = None,
    seed: int | None = None,
    example_dir: str | Path | None = None,
    goals_dir: str | Path | None = None,
) -> Iterator[Batch]:
    """The DeltaBank example as ``(tenant, items)`` batches, in load order (the same items
    ``hopweave load`` writes into the embedded store). Raises PatternValidationError when a goal
    file fails a gate."""
    from hopweave.deltabank.generate import DEFAULT_NODES, DEFAULT_SEED, generate
    from hopweave.deltabank.load import default_example_dir, document_items, metagraph_items
    from hopweave.deltabank.maria import TENANT

    meta, _goals, _patterns = metagraph_items(goals_dir, schema)  # gate first: fail before loading
    yield from generate(nodes=nodes or DEFAULT_NODES, seed=DEFAULT_SEED if seed is None else seed)
    ex = Path(example_dir) if example_dir is not None else default_example_dir()
    yield TENANT, document_items(ex, schema, TENANT)
    yield GLOBAL_TENANT, meta


def open_server_store(
    *,
    neo4j: str | None = None,
    falkordb: str | Path | None = None,
    schema: GraphSchema | None = None,
    **settings: Any,
) -> Any:
    """A Neo4jGraphStore (``neo4j`` = bolt/neo4j URI; user and password from HopweaveSettings /
    ``HOPWEAVE_NEO4J_USER`` / ``HOPWEAVE_NEO4J_PASSWORD``) or a FalkorDBStore (``falkordb`` = data
    directory). Exactly one must be given; raises ConfigError otherwise."""
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

    return FalkorDBStore(Path(falkordb), schema)  # type: ignore[arg-type]
