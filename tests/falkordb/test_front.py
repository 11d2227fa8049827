"""The store front on FalkorDB: ``hopweave load`` into ``falkordblite:///DIR`` and into a FalkorDB
server (``falkordb://HOST:PORT/GRAPH``: falkordblite's redis-server listening on a local TCP port
stands in for a server), then ``hopweave.open`` / ``Engine.open`` read the store's own settings
back; a graph never loaded, a refused password and a dead server are typed errors naming the URI."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip(
    "redislite.falkordb_client", reason="falkordblite needs Python >= 3.12: run .ci/falkordb.sh"
)

import hopweave  # noqa: E402
from hopweave.engine.engine import Engine  # noqa: E402
from hopweave.errors import StoreAuthError, StoreNotLoadedError, StoreUnavailableError  # noqa: E402
from hopweave.graph.falkordb_store import stop_server  # noqa: E402
from hopweave.pack.loader import load_pack  # noqa: E402

pytestmark = pytest.mark.falkordb

PACK = Path(__file__).resolve().parents[2] / "examples" / "telecom"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tcp_server(path: Path) -> tuple[object, int]:
    """falkordblite's embedded server, also listening on a local TCP port (a FalkorDB server)."""
    from redislite.falkordb_client import FalkorDB

    port = _free_port()
    db = FalkorDB(str(path), serverconfig={"port": str(port), "bind": "127.0.0.1"})
    return db, port


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    db, port = _tcp_server(tmp_path_factory.mktemp("fdb_server") / "server.rdb")
    pid = int(db.client.pid)  # type: ignore[attr-defined]
    try:
        yield port
    finally:
        stop_server(pid)


def _loaded_same(uri: str) -> None:
    with hopweave.open(graph=uri, vectors=":memory:") as stores:
        assert stores.settings is not None and sorted(stores.settings.domains) == ["telecom"]
        assert "Subscriber" in {lab.name for lab in stores.schema().labels}  # the pack's schema, read back
        assert stores.graph.tenant_domains == {"acme": "telecom", "zephyr": "telecom"}
        assert len(stores.graph.patterns()) >= 5


def test_load_into_falkordblite_and_open_it_back(tmp_path: Path) -> None:
    uri = f"falkordblite://{tmp_path}/fdb"
    first = load_pack(PACK, uri, with_vectors=False)
    assert first["store"] == uri and first["nodes"] > 1000 and first["vectors_uri"] is None
    _loaded_same(uri)
    again = load_pack(PACK, uri, with_vectors=False)  # incremental: upserts, same store
    assert (again["nodes"], again["edges"], again["metagraph_revision"]) == (
        first["nodes"], first["edges"], first["metagraph_revision"])
    e = Engine.open(graph=uri, vectors=":memory:")
    try:
        assert e.domains is not None and e.domains.for_tenant("acme").name == "telecom"
        assert e.store_settings is not None and e.store_dir is None
    finally:
        e.close()


def test_the_embedded_and_falkordb_loads_hold_the_same_graph(tmp_path: Path, server: int) -> None:
    emb = load_pack(PACK, tmp_path / "store", with_vectors=False)
    fk = load_pack(PACK, f"falkordb://127.0.0.1:{server}/telecom", with_vectors=False)
    assert fk["store"] == f"falkordb://127.0.0.1:{server}/telecom"
    assert fk["metagraph_revision"] == emb["metagraph_revision"]
    assert (fk["nodes"], fk["edges"]) == (emb["nodes"] + 1, emb["edges"])  # + the HopweaveStore settings node
    _loaded_same(f"falkordb://127.0.0.1:{server}/telecom")


def test_a_graph_never_loaded_is_refused_by_name(server: int) -> None:
    uri = f"falkordb://127.0.0.1:{server}/never_loaded"
    with hopweave.open(graph=uri, vectors=":memory:") as stores:
        assert stores.settings is None and stores.domains() is None
    with pytest.raises(StoreNotLoadedError, match=rf"falkordb://127\.0\.0\.1:{server}/never_loaded holds no hopweave"):
        Engine.open(graph=uri, vectors=":memory:")


def test_a_dead_server_and_a_wrong_password_are_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    port = _free_port()  # nothing listens there
    with pytest.raises(StoreUnavailableError, match=rf"cannot reach the FalkorDB server at falkordb://127\.0\.0\.1:{port}"):
        hopweave.open(graph=f"falkordb://127.0.0.1:{port}", vectors=":memory:")
    db, port = _tcp_server(tmp_path / "locked.rdb")
    try:
        db.client.execute_command("CONFIG", "SET", "requirepass", "right")  # type: ignore[attr-defined]
        with pytest.raises(StoreAuthError, match="refused the credentials") as info:
            hopweave.open(graph=f"falkordb://:badpass@127.0.0.1:{port}/g", vectors=":memory:")
        assert "badpass" not in str(info.value)  # the password never reaches a message
        with hopweave.open(graph=f"falkordb://:right@127.0.0.1:{port}/g", vectors=":memory:") as ok:
            assert ok.settings is None
        monkeypatch.setenv("HOPWEAVE_FALKORDB_PASSWORD", "right")  # the password from the environment
        with hopweave.open(graph=f"falkordb://127.0.0.1:{port}/g", vectors=":memory:") as ok:
            assert ok.settings is None
    finally:
        stop_server(int(db.client.pid))  # type: ignore[attr-defined]


def _checks(report) -> dict[str, object]:  # noqa: ANN001
    return {f"{f.store}.{f.check}": f for f in report.findings}


def test_doctor_checks_the_constraints_and_indexes(tmp_path: Path, server: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from hopweave.graph.falkordb_store import FalkorDBStore
    from hopweave.stores.doctor import doctor

    for var in ("HOPWEAVE_VECTORS", "HOPWEAVE_QDRANT_URL"):
        monkeypatch.delenv(var, raising=False)
    uri = f"falkordblite://{tmp_path}/fdb"
    load_pack(PACK, uri, with_vectors=False)
    report = doctor(uri)
    checks = _checks(report)
    assert report.ok, report.findings
    assert checks["graph.indexes"].severity == "ok" and "all" in checks["graph.indexes"].detail
    assert checks["graph.domain telecom"].severity == "ok"
    assert checks["vectors.configured"].severity == "warning"  # a server graph has no default index
    with FalkorDBStore(tmp_path / "fdb") as s:
        s._execute("DROP INDEX FOR (n:Subscriber) ON (n.tenant_id)", {}, read_only=False)
    report = doctor(uri)
    f = _checks(report)["graph.indexes"]
    assert not report.ok and f.severity == "error" and "index Subscriber.tenant_id" in f.detail
    assert f"hopweave load PACK --graph {uri}" in f.fix
    never = doctor(f"falkordb://127.0.0.1:{server}/never_loaded_either")
    assert _checks(never)["graph.settings"].severity == "error" and not never.ok
