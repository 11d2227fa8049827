"""Adapter tests: a cheap real Engine (an empty in-memory graph, DeltaBank's domain settings,
no vector index). Bad input must fail at the engine's boundary before any stage runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))  # tests/shared helpers
from domains import DELTABANK_REGISTRY  # noqa: E402

from hopweave.engine.engine import Engine  # noqa: E402
from hopweave.graph.networkx_store import NetworkxGraphStore  # noqa: E402

MARIA = {"tenant_id": "deltabank", "customer_id": "CUST_4421", "region": "US", "channel": "phone"}


@pytest.fixture
def bare_engine() -> Iterator[Engine]:
    eng = Engine(NetworkxGraphStore(None), None, domains=DELTABANK_REGISTRY)
    yield eng
    eng.close()
