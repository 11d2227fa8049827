"""FalkorDB store: the compiled Cypher on FalkorDB, embedded through ``falkordblite`` or on a
FalkorDB server.

Embedded (a data directory): falkordblite (Python >= 3.12, extra ``hopweave[falkordb]``) starts a
private redis-server with the FalkorDB module, talking over a Unix socket — no Bolt (removed in
current FalkorDB, crash-prone in older builds), so we use falkordblite's own ``falkordb`` client.
The server is a detached process: :meth:`FalkorDBStore.close` shuts it down, and
:func:`stop_server` kills it by pid when a test or a crashed run left it behind.

Server (``url=``: ``falkordb://host:port``, ``redis://``, ``rediss://`` or
``unix:///path/to.sock``): the pure-Python ``falkordb`` client (any Python >= 3.11) on a server
someone else runs; closing disconnects and leaves the server alone.

Timeouts: the remaining pattern budget goes to ``GRAPH.RO_QUERY ... TIMEOUT <ms>``.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any, Sequence

from hopweave.errors import (
    ConfigError,
    MissingDependencyError,
    QueryTimeoutError,
    StoreAuthError,
    StoreError,
    StoreUnavailableError,
)
from hopweave.graph.capabilities import FALKORDB
from hopweave.graph.cypher_store import CypherGraphStore, Record
from hopweave.models.schema import GraphSchema

DB_FILE = "falkordb.rdb"
#: FalkorDB's answer to a read of a graph that has never been written.
EMPTY_KEY = "empty key"
#: Longest any single call may block on the embedded server's socket (bulk batches included).
SOCKET_TIMEOUT_S = 300.0


def _client_module() -> Any:
    try:
        import falkordb
    except ImportError as exc:
        raise MissingDependencyError("falkordb", "falkordb", "The FalkorDB server store") from exc
    return falkordb


def server_url(url: str) -> str:
    """``url`` as the redis client spells it (``falkordb://`` -> ``redis://``, ``falkordbs://``
    -> ``rediss://``). Raises ConfigError for another scheme."""
    for ours, theirs in (("falkordb://", "redis://"), ("falkordbs://", "rediss://")):
        if url.startswith(ours):
            return theirs + url[len(ours):]
    if url.startswith(("redis://", "rediss://", "unix://")):
        return url
    raise ConfigError(f"not a FalkorDB server URL: {url!r}; use falkordb://HOST:PORT, redis://HOST:PORT, "
                      "rediss://HOST:PORT or unix:///PATH/TO/SOCKET")


def _falkordblite() -> Any:
    try:
        from redislite import falkordb_client
    except ImportError as exc:  # also on Python < 3.12, where falkordblite does not install
        raise MissingDependencyError(
            "falkordblite", "falkordb", "The FalkorDB store (Python >= 3.12)"
        ) from exc
    return falkordb_client


class FalkorDBStore(CypherGraphStore):
    """A GraphStore on FalkorDB: embedded, its data file in ``path`` (a directory), or on the
    server at ``url`` (see the module docstring). Give exactly one.

    Opening an embedded store starts its server (about half a second); use as a context manager
    or call :meth:`close`. ``schema`` defaults to the base schema; ``graph`` names the graph
    (one server holds many).
    """

    caps = FALKORDB

    def __init__(
        self, path: str | Path | None = None, schema: GraphSchema | None = None, *, graph: str = "hopweave",
        url: str | None = None, **kwargs: Any
    ) -> None:
        if (path is None) == (url is None):
            raise ConfigError("FalkorDBStore needs a data directory (embedded) or url= (a FalkorDB server), not both")
        if schema is None:  # no schema and no store settings: the domain-free base schema
            schema = GraphSchema.base()
        super().__init__(schema, **kwargs)
        self.graph_name = graph
        self.url = url
        self._embedded = url is None
        if url is not None:
            self.path = None
            self._connect(url, graph)
            return
        self.path = Path(path)  # type: ignore[arg-type]
        client = _falkordblite()
        self.path.mkdir(parents=True, exist_ok=True)
        try:
            self._db = client.FalkorDB(str(self.path / DB_FILE))
        except Exception as exc:  # redislite raises its own exception types on start failures
            self._shutdown_pool()
            raise StoreUnavailableError(
                f"could not start the embedded FalkorDB server for {self.path}: {exc}; "
                "check that the directory is writable and no other process holds it"
            ) from exc
        # the client-side backstop (the server enforces each query's TIMEOUT itself)
        pool = self._db.client.connection_pool
        pool.connection_kwargs["socket_timeout"] = SOCKET_TIMEOUT_S
        pool.disconnect()
        self._graph = self._db.select_graph(graph)
        self._closed = False

    def _connect(self, url: str, graph: str) -> None:
        import redis

        falkordb = _client_module()
        try:
            self._db = falkordb.FalkorDB.from_url(server_url(url), socket_timeout=SOCKET_TIMEOUT_S)
            self._db.connection.ping()
        except redis.exceptions.RedisError as exc:
            self._shutdown_pool()
            text = str(exc)
            if isinstance(exc, redis.exceptions.AuthenticationError) or "WRONGPASS" in text or "NOAUTH" in text:
                raise StoreAuthError(
                    f"the FalkorDB server at {self._where()} refused the credentials ({text}): check the "
                    "password (HOPWEAVE_FALKORDB_PASSWORD, or the URL's user:password@)"
                ) from exc
            raise StoreUnavailableError(
                f"cannot reach the FalkorDB server at {self._where()}: {exc}; check that it runs and the URL "
                "(host, port, password) is right"
            ) from exc
        self._graph = self._db.select_graph(graph)
        self._closed = False

    @property
    def pid(self) -> int | None:
        """Process id of the embedded redis-server (None once closed, and for a server store)."""
        if self._closed or not self._embedded:
            return None
        return int(self._db.client.pid or 0) or None

    @property
    def socket_path(self) -> str | None:
        return None if self._closed or not self._embedded else self._db.client.socket_file

    # ---- driver hooks -------------------------------------------------------------------------
    def _execute(
        self, query: str, params: dict[str, Any], *, read_only: bool = True, timeout_ms: float | None = None
    ) -> list[Record]:
        if self._closed:
            raise StoreUnavailableError("the FalkorDB store is closed; open a new FalkorDBStore")
        import redis

        run = self._graph.ro_query if read_only else self._graph.query
        timeout = None if timeout_ms is None else max(self.caps.min_timeout_ms, int(math.ceil(timeout_ms)))
        try:
            res = run(query, params, timeout=timeout)
        except redis.exceptions.ConnectionError as exc:
            raise StoreUnavailableError(f"the FalkorDB server ({self._where()}) is not reachable: {exc}") from exc
        except redis.exceptions.ResponseError as exc:
            msg = str(exc)
            if read_only and EMPTY_KEY in msg:
                return []  # the graph was never written: a read of an empty graph finds nothing
            if any(m in msg for m in self.caps.timeout_markers):
                raise QueryTimeoutError(
                    f"FalkorDB stopped the query at its time bound ({timeout} ms)"
                ) from exc
            if any(m in msg for m in self.caps.constraint_markers):
                raise StoreError(
                    f"FalkorDB rejected a write: {msg} (node ids must be unique per label)"
                ) from exc
            raise StoreError(f"FalkorDB rejected the query: {msg}") from exc
        except redis.exceptions.RedisError as exc:
            raise StoreError(f"FalkorDB failed: {exc}") from exc
        names = [h[1] for h in (res.header or [])]
        return [dict(zip(names, row, strict=True)) for row in res.result_set]

    def _execute_command(self, args: Sequence[str]) -> Any:
        import redis

        try:
            return self._db.connection.execute_command(*args)
        except redis.exceptions.RedisError as exc:
            raise StoreError(f"FalkorDB command {args[0]} failed: {exc}") from exc

    def _where(self) -> str:
        """Where the store is, as messages show it (a URL's password left out)."""
        if self._embedded:
            return f"embedded, {self.path}"
        from urllib.parse import urlsplit

        url = str(self.url)
        parts = urlsplit(url)
        if parts.password is None:
            return url
        return url.replace(parts.netloc, f"{parts.username or ''}:***@{parts.hostname}"
                           + (f":{parts.port}" if parts.port else ""), 1)

    # ---- lifecycle ----------------------------------------------------------------------------
    def close(self) -> None:
        """Embedded: save the data file and stop the server. Server: disconnect (the server and
        its data stay). Idempotent.

        (redislite's own close sends SHUTDOWN through a client that then retries the dropped
        connection with back-off for ~5 s; saving first and stopping the process by pid is
        equivalent and immediate.)"""
        if self._closed:
            return
        import redis

        self._shutdown_pool()
        if not self._embedded:
            self._closed = True
            self._db.connection.connection_pool.disconnect()
            return
        client = self._db.client
        pid = self.pid
        self._closed = True
        try:
            client.execute_command("SAVE")
        except redis.exceptions.RedisError:
            pass  # a dead server has nothing to save
        client.connection_pool.disconnect()
        if pid:
            stop_server(pid, timeout=5.0)
        if getattr(client, "redis_dir", None):  # redislite's temp dir (config, socket, log)
            shutil.rmtree(client.redis_dir, ignore_errors=True)
        client.redis_dir = client.pidfile = None  # its atexit/__del__ cleanup has nothing left to do


def stop_server(pid: int, timeout: float = 5.0) -> bool:
    """Stop a (possibly orphaned) embedded redis-server by pid: SIGTERM, then SIGKILL after
    ``timeout`` seconds. Returns True when the process is gone."""

    def alive() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # pragma: no cover - not ours
            return True
        try:  # a zombie child counts as gone once reaped
            wpid, _ = os.waitpid(pid, os.WNOHANG)
            return wpid == 0
        except ChildProcessError:
            return True

    if not alive():
        return True
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not alive():
            return True
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    time.sleep(0.1)
    return not alive()
