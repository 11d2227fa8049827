"""CLI test fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))  # tests/shared helpers (domains)

import pytest


@pytest.fixture(scope="session")
def embedder():  # type: ignore[no-untyped-def]
    """The default embedder (a process-wide singleton), loaded once for the CLI tests."""
    from hopweave.search.embedder import default_embedder

    return default_embedder()
