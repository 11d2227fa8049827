"""FalkorDB suite fixtures (Python >= 3.12 with falkordblite; run by .ci/falkordb.sh).

One embedded FalkorDB server per session. falkordblite's redis-server is a detached process that
outlives a killed Python process, so its pid is recorded in a file named after the test process
that owns it; at session start, a server whose owner is gone (a killed run) is stopped by pid,
while the servers of test runs still going (parallel runs on one machine) are left alone. The
session's own server is stopped by pid at the end even if ``close()`` fails.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))  # congruence helpers

from congruence import Tally  # noqa: E402

PIDDIR = Path(tempfile.gettempdir()) / "hopweave-falkordb-tests"
PIDFILE = PIDDIR / f"{os.getpid()}.pid"  # this run's server; the name is the owning test process
TALLY = Tally()


def _is_redis_server(pid: int) -> bool:
    try:
        return b"redis-server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _stop_stale_servers() -> None:
    """Stop the servers of earlier runs whose test process is gone; leave live runs' alone."""
    from hopweave.fileio import pid_alive
    from hopweave.graph.falkordb_store import stop_server

    for f in sorted(PIDDIR.glob("*.pid")) if PIDDIR.is_dir() else []:
        if f.stem.isdigit() and pid_alive(int(f.stem)):
            continue
        for line in f.read_text().split():
            if line.isdigit() and _is_redis_server(int(line)):
                stop_server(int(line))
        f.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def falkordb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("falkordb")


@pytest.fixture(scope="session")
def falkordb_store(falkordb_dir: Path, schema) -> Iterator[object]:  # noqa: ANN001
    """The session's FalkorDBStore (schema created). Tests clear() it before loading data."""
    pytest.importorskip(
        "redislite.falkordb_client", reason="falkordblite needs Python >= 3.12: run .ci/falkordb.sh"
    )
    from hopweave.graph.falkordb_store import FalkorDBStore, stop_server

    _stop_stale_servers()
    store = FalkorDBStore(falkordb_dir / "session", schema)  # the DeltaBank pack's schema
    pid = store.pid
    PIDDIR.mkdir(exist_ok=True)
    PIDFILE.write_text(f"{pid}\n")
    store.ensure_schema()
    try:
        yield store
    finally:
        try:
            store.close()
        finally:
            if pid and _is_redis_server(pid):
                stop_server(pid)
            PIDFILE.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def schema():
    from domains import deltabank_schema

    return deltabank_schema()


@pytest.fixture(scope="session")
def tally() -> Tally:
    return TALLY


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    if TALLY.counts:
        terminalreporter.section("hopweave congruence (networkx vs FalkorDB)")
        for key in sorted(TALLY.counts):
            terminalreporter.write_line(f"{key}: {TALLY.counts[key]}")


def pytest_sessionstart(session) -> None:  # noqa: ANN001
    """Under .ci/falkordb.sh (HOPWEAVE_REQUIRE_FALKORDB=1) a missing falkordblite fails the run
    instead of letting every module skip: CI must never pass on an empty congruence suite."""
    import os

    if os.environ.get("HOPWEAVE_REQUIRE_FALKORDB") == "1":
        import redislite.falkordb_client  # noqa: F401
