"""Engine test fixtures: ONE small real DeltaBank store per session (real networkx graph, real
qdrant-edge index with the real embedder, real understanding stage), and one warm engine on it.

The qdrant-edge shard is locked by whoever opens it, so tests that need a second opener (the CLI
runs its own Engine) use ``cli_store``, a copy made before the session engine opens the original.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterator

import pytest

import sys

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "deltabank"))  # the pack's generator

from hopweave.engine.engine import Engine
from hopweave.engine.replay import REPLAY_CONFIG

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))  # tests/shared helpers
from domains import AS_OF, DELTABANK, DELTABANK_REGISTRY, MARIA, UTTERANCE  # noqa: E402,F401  (for the test modules)

#: The smallest population that still holds every customer the scenarios name (CUST_1000xx).
STORE_NODES = 3000
REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "deltabank"
SCENARIOS = EXAMPLE / "scenarios"


@pytest.fixture(scope="session")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from generator.build import load_deltabank

    d = tmp_path_factory.mktemp("engine") / "store"
    load_deltabank(d, nodes=STORE_NODES)
    return d


@pytest.fixture(scope="session")
def cli_store(store_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("engine_cli") / "store"
    shutil.copytree(store_dir, d)
    return d


@pytest.fixture(scope="session")
def engine(store_dir: Path, cli_store: Path) -> Iterator[Engine]:
    eng = Engine.open(store_dir, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG)
    eng.warmup()
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def maria(engine: Engine):
    """Maria's case, retrieved once (recorded)."""
    return engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF)
