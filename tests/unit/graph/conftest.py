"""Fixtures for the graph tests: the real schema, small real stores."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))  # tests/shared helpers

from graph_helpers import load_schema, small_graph

from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.models.schema import GraphSchema


@pytest.fixture(scope="session")
def schema() -> GraphSchema:
    return load_schema()


@pytest.fixture
def mem_store(schema: GraphSchema) -> NetworkxGraphStore:
    s = NetworkxGraphStore(None, schema)
    small_graph(s)
    return s
