"""Where hopweave's shipped data lives (the metagraph folder), installed or in a checkout."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from hopweave.errors import ConfigError


@lru_cache(maxsize=1)
def metagraph_dir() -> Path:
    """The shipped ``metagraph/`` folder (the base schema and the pack file schemas)."""
    here = Path(__file__).resolve().parent
    for cand in (here / "_metagraph", here.parent.parent / "metagraph"):
        if (cand / "base_schema.yaml").is_file():
            return cand
    raise ConfigError("cannot find the metagraph folder (base_schema.yaml); reinstall hopweave")


def base_schema_path() -> Path:
    """The built-in base schema (labels the engine writes itself), extended by every pack."""
    return metagraph_dir() / "base_schema.yaml"
