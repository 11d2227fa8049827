"""Where hopweave's shipped data lives (the metagraph folder), installed or in a checkout."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from hopweave.errors import ConfigError


@lru_cache(maxsize=1)
def metagraph_dir() -> Path:
    """The shipped ``metagraph/`` folder (schema, goal types, patterns, filter mapping)."""
    here = Path(__file__).resolve().parent
    for cand in (here / "_metagraph", here.parent.parent / "metagraph"):
        if (cand / "schema.yaml").is_file():
            return cand
    raise ConfigError("cannot find the metagraph folder (schema.yaml); reinstall hopweave")


def default_schema_path() -> Path:
    return metagraph_dir() / "schema.yaml"


def repo_root() -> Path | None:
    """The source checkout's root when running from one (examples/ lives there), else None."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "examples").is_dir() else None
