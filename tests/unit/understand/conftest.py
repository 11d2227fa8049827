"""Fixtures for the understanding tests: real embedder (one per process), real networkx stores
built from the real DeltaBank generator, vocabulary, goal files and filter mapping."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "deltabank"))  # the pack's generator

from generator.build import metagraph_items  # noqa: E402
from generator.generate import generate  # noqa: E402
from generator.vocabulary import vocabulary  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))  # tests/shared helpers
from domains import DELTABANK, DELTABANK_CALIBRATION, DELTABANK_CONFIG, deltabank_schema  # noqa: E402

from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.models.common import Session
from hopweave.models.schema import GLOBAL_TENANT
from hopweave.understand import Understander

AS_OF = "2026-05-12"
MARIA_UTTERANCE = "I want to dispute this $39 late fee on my Platinum card"


def _metagraph(store: NetworkxGraphStore) -> None:
    store.bulk_write(GLOBAL_TENANT, metagraph_items())  # goals, patterns and the FilterMapping node


@pytest.fixture(scope="session")
def embedder():  # type: ignore[no-untyped-def]
    from hopweave.search.embedder import default_embedder

    return default_embedder()


@pytest.fixture(scope="session")
def bank() -> NetworkxGraphStore:
    """The DeltaBank graph at its smallest size (fixed cases: Maria, look-alikes, northbank),
    in memory. Read-only by convention: tests that write use ``fresh_store``."""
    store = NetworkxGraphStore(None, deltabank_schema())
    with store.bulk() as b:
        for tenant, items in generate(nodes=1500, seed=4421):
            b.write(tenant, items)
    _metagraph(store)
    return store


@pytest.fixture
def fresh_store() -> Iterator[NetworkxGraphStore]:
    """A small writable store: vocabulary + metagraph + filter mapping (no customers)."""
    store = NetworkxGraphStore(None, deltabank_schema())
    store.bulk_write(GLOBAL_TENANT, vocabulary())
    _metagraph(store)
    yield store
    store.close()


@pytest.fixture(scope="session")
def understander(bank: NetworkxGraphStore, embedder) -> Understander:  # type: ignore[no-untyped-def]
    return Understander(bank, embedder, classifier_config=DELTABANK_CONFIG, calibration=DELTABANK_CALIBRATION,
                        settings=DELTABANK)


@pytest.fixture(scope="session")
def maria() -> Session:
    return Session(tenant_id="deltabank", customer_id="CUST_4421", region="US", channel="phone")
