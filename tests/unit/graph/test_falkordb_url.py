"""FalkorDBStore on a server URL (the pure-Python ``falkordb`` client, any Python): what it
accepts and how an unreachable server is reported. Talking to a live server is tested in
tests/falkordb (its own socket) and tests/parity (a FalkorDB server process)."""

from __future__ import annotations

import pytest

from hopweave.errors import ConfigError, StoreUnavailableError
from hopweave.graph.falkordb_store import FalkorDBStore, server_url


def test_server_url_schemes() -> None:
    assert server_url("falkordb://db.example:6379") == "redis://db.example:6379"
    assert server_url("falkordbs://u:p@db.example:6380") == "rediss://u:p@db.example:6380"
    for same in ("redis://localhost:6379", "rediss://h:1", "unix:///tmp/falkordb.sock"):
        assert server_url(same) == same
    with pytest.raises(ConfigError, match="falkordb://HOST:PORT"):
        server_url("bolt://localhost:7687")


def test_exactly_one_of_path_and_url(tmp_path) -> None:  # noqa: ANN001
    with pytest.raises(ConfigError, match="not both"):
        FalkorDBStore(tmp_path, url="falkordb://localhost:1")
    with pytest.raises(ConfigError, match="not both"):
        FalkorDBStore()


def test_an_unreachable_server_names_the_url(tmp_path) -> None:  # noqa: ANN001
    pytest.importorskip("falkordb", reason="the falkordb client is not installed: pip install 'hopweave[falkordb]'")
    url = f"unix://{tmp_path / 'nobody-listens.sock'}"
    with pytest.raises(StoreUnavailableError, match="nobody-listens.sock"):
        FalkorDBStore(url=url)
