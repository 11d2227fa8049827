"""Fixtures for the search tests: one real embedder per session, small schema-valid fixtures."""

from __future__ import annotations

import pytest

from hopweave.models.schema import GraphSchema
from hopweave.paths import default_schema_path

from search_fixtures import HashEmbedder


@pytest.fixture(scope="session")
def schema() -> GraphSchema:
    return GraphSchema.load(default_schema_path())


@pytest.fixture(scope="session")
def embedder():
    from hopweave.search.embedder import default_embedder

    return default_embedder()


@pytest.fixture(scope="session")
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()
