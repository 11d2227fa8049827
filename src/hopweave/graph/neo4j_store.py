"""Neo4j 5 store through the official ``neo4j`` driver (extra ``hopweave[neo4j]``).

One style: the synchronous driver. Patterns still run concurrently — ``graph.traverse`` gives
each its own thread, and the driver is thread-safe (a session per statement). Every pattern
query carries a server-side transaction timeout (the remaining budget) and a client-side deadline
(the base class); driver errors are translated into hopweave errors here, at the boundary:

============================================  =====================================
neo4j driver                                   hopweave
============================================  =====================================
ServiceUnavailable, SessionExpired, pool       StoreUnavailableError
AuthError                                      StoreAuthError (a ConfigError; names the settings)
TransactionTimedOut* / terminated by timeout   QueryTimeoutError
ConstraintError                                StoreError (unique id violated)
any other Neo4jError / DriverError             StoreError (with the server's code)
============================================  =====================================

Start a server with ``docker compose up -d neo4j`` (see docker-compose.yml, docs/inspect.md).
"""

from __future__ import annotations

from typing import Any, Sequence

from hopweave.errors import (
    ConfigError,
    MissingDependencyError,
    QueryTimeoutError,
    StoreAuthError,
    StoreError,
    StoreUnavailableError,
)
from hopweave.graph.capabilities import NEO4J
from hopweave.graph.cypher_store import CypherGraphStore, Record
from hopweave.models.schema import GraphSchema


def _neo4j() -> Any:
    try:
        import neo4j
    except ImportError as exc:
        raise MissingDependencyError("neo4j", "neo4j", "The Neo4j store") from exc
    return neo4j


class Neo4jGraphStore(CypherGraphStore):
    """A GraphStore on a Neo4j 5 server. The constructor does no I/O (the driver connects on
    first use); :meth:`verify` checks the connection and credentials now."""

    caps = NEO4J

    def __init__(
        self,
        uri: str,
        auth: tuple[str, str] | None,
        schema: GraphSchema | None = None,
        *,
        database: str = "neo4j",
        client_grace_ms: float | None = None,
        **driver_config: Any,
    ) -> None:
        if schema is None:  # no schema and no store settings: the domain-free base schema
            schema = GraphSchema.base()
        super().__init__(schema, client_grace_ms=client_grace_ms)
        from hopweave.config import NEO4J_SCHEMES

        if not isinstance(uri, str) or not uri.startswith(NEO4J_SCHEMES):
            self._shutdown_pool()
            raise ConfigError(
                f"Neo4j URI {uri!r} must start with one of {NEO4J_SCHEMES}"
            )
        neo4j = _neo4j()
        self.uri = uri
        self.database = database
        try:
            self._driver = neo4j.GraphDatabase.driver(uri, auth=auth, **driver_config)
        except (ValueError, neo4j.exceptions.ConfigurationError) as exc:
            self._shutdown_pool()
            raise ConfigError(
                f"invalid Neo4j URI or driver setting {uri!r}: {exc}"
            ) from exc

    def verify(self) -> None:
        """Connect and authenticate now. Raises StoreUnavailableError / ConfigError."""
        try:
            self._driver.verify_connectivity()
        except Exception as exc:
            raise self._translate(exc, None) from exc

    # ---- driver hooks -------------------------------------------------------------------------
    def _execute(
        self, query: str, params: dict[str, Any], *, read_only: bool = True, timeout_ms: float | None = None
    ) -> list[Record]:
        neo4j = _neo4j()
        mode = neo4j.READ_ACCESS if read_only else neo4j.WRITE_ACCESS
        timeout = None if timeout_ms is None else max(self.caps.min_timeout_ms, timeout_ms) / 1000.0
        try:
            with self._driver.session(database=self.database, default_access_mode=mode) as session:
                result = session.run(neo4j.Query(query, timeout=timeout), params)
                return [{k: rec[k] for k in rec.keys()} for rec in result]  # noqa: SIM118 - a Record iterates its values
        except Exception as exc:
            raise self._translate(exc, timeout_ms) from exc

    def _translate(self, exc: Exception, timeout_ms: float | None) -> Exception:
        neo4j = _neo4j()
        ex = neo4j.exceptions
        code = getattr(exc, "code", None) or ""
        text = f"{code} {exc}"
        if isinstance(exc, ex.AuthError):
            return StoreAuthError(
                f"Neo4j at {self.uri} refused the credentials: check HOPWEAVE_NEO4J_USER / HOPWEAVE_NEO4J_PASSWORD"
            )
        if isinstance(exc, (ex.ServiceUnavailable, ex.SessionExpired, ex.ConnectionAcquisitionTimeoutError)):
            return StoreUnavailableError(
                f"Neo4j at {self.uri} is not reachable ({exc}); start it with `docker compose up -d neo4j` "
                "or fix the URI (--graph / HOPWEAVE_GRAPH)"
            )
        if any(m in text for m in self.caps.timeout_markers):
            return QueryTimeoutError(f"Neo4j stopped the query at its time bound ({timeout_ms} ms): {code}")
        if isinstance(exc, ex.ConstraintError) or any(m in text for m in self.caps.constraint_markers):
            return StoreError(f"Neo4j rejected a write: {exc} (node ids must be unique per label)")
        if isinstance(exc, (ex.Neo4jError, ex.DriverError)):
            return StoreError(f"Neo4j failed: {code or type(exc).__name__}: {exc}")
        if isinstance(exc, OSError):
            return StoreUnavailableError(f"Neo4j at {self.uri} is not reachable: {exc}")
        return exc

    def _execute_command(self, args: Sequence[str]) -> Any:
        raise StoreError(f"Neo4j has no {args[0]!r} command; its DDL is Cypher (capability table)")

    # ---- lifecycle ----------------------------------------------------------------------------
    def close(self) -> None:
        """Close the driver's connections. Idempotent."""
        self._shutdown_pool()
        self._driver.close()
