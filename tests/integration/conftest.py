"""Integration fixtures for server backends. A server test runs whenever its server is
configured and reachable, and is reported SKIPPED with the reason otherwise (never silently passed).

Neo4j: ``HOPWEAVE_NEO4J_URI`` (+ ``HOPWEAVE_NEO4J_USER`` / ``HOPWEAVE_NEO4J_PASSWORD``), e.g. after
``docker compose up -d neo4j``. The suite empties the database: on a database that already holds
data it refuses (skips) unless ``HOPWEAVE_NEO4J_WIPE_OK=1``. Qdrant (the whole-engine scenarios):
``HOPWEAVE_QDRANT_URL`` (+ ``HOPWEAVE_QDRANT_API_KEY``), e.g. ``http://localhost:6333``.

``make test-neo4j`` sets ``HOPWEAVE_REQUIRE_NEO4J=1``: a server that is not configured or not
reachable then fails the run instead of skipping it (docs/parity.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))  # congruence helpers


def unavailable(reason: str) -> None:
    """Skip with the reason, or fail under ``make test-neo4j`` (HOPWEAVE_REQUIRE_NEO4J=1)."""
    if os.environ.get("HOPWEAVE_REQUIRE_NEO4J") == "1":
        pytest.fail(f"HOPWEAVE_REQUIRE_NEO4J=1: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def neo4j_store(schema) -> Iterator[object]:  # noqa: ANN001
    """The Neo4j graph store of ``HOPWEAVE_NEO4J_URI``, opened through the store front
    (``hopweave.open``) with the example schema (the suite loads the DeltaBank batches itself)."""
    uri = os.environ.get("HOPWEAVE_NEO4J_URI")
    if not uri:
        unavailable(
            "HOPWEAVE_NEO4J_URI is not set: start Neo4j (`docker compose up -d neo4j`) and export "
            "HOPWEAVE_NEO4J_URI=bolt://localhost:7687 HOPWEAVE_NEO4J_PASSWORD=... to run the Neo4j suite"
        )
    try:
        import neo4j  # noqa: F401
    except ImportError:
        unavailable("the neo4j driver is not installed: pip install 'hopweave[neo4j]'")
    import hopweave
    from hopweave.errors import HopweaveError

    try:  # connects and authenticates now
        store = hopweave.open(graph=uri, schema=schema, graph_only=True).graph
    except HopweaveError as exc:
        unavailable(f"Neo4j at {uri} is not usable: {exc}")
    nodes, _ = store.count()
    if nodes and os.environ.get("HOPWEAVE_NEO4J_WIPE_OK") != "1":
        store.close()
        unavailable(
            f"Neo4j at {uri} holds {nodes} nodes and the suite would delete them; "
            "set HOPWEAVE_NEO4J_WIPE_OK=1 to allow it"
        )
    store.ensure_schema()
    try:
        yield store
    finally:
        store.close()


@pytest.fixture(scope="session")
def qdrant_url() -> str:
    """A reachable Qdrant server (``HOPWEAVE_QDRANT_URL``)."""
    url = os.environ.get("HOPWEAVE_QDRANT_URL")
    if not url:
        unavailable("HOPWEAVE_QDRANT_URL is not set: start Qdrant (`docker compose up -d qdrant`) and export "
                    "HOPWEAVE_QDRANT_URL=http://localhost:6333 to run the whole-engine scenarios on servers")
    from qdrant_client import QdrantClient

    try:
        client = QdrantClient(url=url, api_key=os.environ.get("HOPWEAVE_QDRANT_API_KEY"), timeout=5)
        client.get_collections()
        client.close()
    except Exception as exc:  # the client raises transport-specific errors
        unavailable(f"Qdrant at {url} is not reachable: {exc}")
    return url  # type: ignore[return-value]


@pytest.fixture(scope="session")
def schema():
    from domains import deltabank_schema

    return deltabank_schema()
