"""Session fixtures shared by tests/unit/engine, tests/unit/adapters and tests/unit/cli: ONE
small real DeltaBank store per session (real networkx graph, real qdrant-edge index with the real
embedder, real understanding stage), and one warm engine on it. Defined here, above those
folders, so a run over all of them builds the store and warms the engine once.

The qdrant-edge shard is locked by whoever opens it, so tests that need a second opener (the CLI
runs its own Engine) use ``cli_store``, a copy made before the session engine opens the original.
The constants the test modules import live in tests/shared (``domains``, ``engine_store``).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))  # tests/shared helpers

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.engine import Engine


@pytest.fixture(scope="session")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's DeltaBank store directory (built once)."""
    from engine_store import build_store

    return build_store(tmp_path_factory.mktemp("engine") / "store")


@pytest.fixture(scope="session")
def cli_store(store_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of :func:`store_dir` made before the session engine opens it, for a second opener."""
    d = tmp_path_factory.mktemp("engine_cli") / "store"
    shutil.copytree(store_dir, d)
    return d


@pytest.fixture(scope="session")
def engine(store_dir: Path, cli_store: Path) -> Iterator[Engine]:
    """One warm engine on :func:`store_dir` with the replay configuration."""
    from domains import DELTABANK_REGISTRY

    from hopweave.engine.engine import Engine
    from hopweave.engine.replay import REPLAY_CONFIG

    eng = Engine.open(store_dir, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG)
    eng.warmup()
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def maria(engine: Engine) -> Any:
    """Maria's case, retrieved once (recorded)."""
    from domains import AS_OF, MARIA, UTTERANCE

    return engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF)
