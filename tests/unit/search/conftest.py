"""Fixtures for the search tests: one real embedder per session, small schema-valid fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))  # tests/shared helpers (domains)

import pytest
from domains import deltabank_schema
from search_fixtures import HashEmbedder

from hopweave.models.schema import GraphSchema


@pytest.fixture(scope="session")
def schema() -> GraphSchema:
    return deltabank_schema()


@pytest.fixture(scope="session")
def embedder():
    from hopweave.search.embedder import default_embedder

    return default_embedder()


@pytest.fixture(scope="session")
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()
