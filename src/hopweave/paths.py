"""Where hopweave's shipped data lives (the metagraph folder), installed or in a checkout."""

from __future__ import annotations

import os
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


def example_pack_dir() -> Path:
    """The pack that the file-reading helpers fall back to when given no path
    (``load_goal_files``, ``read_mapping_file``, ``load_classifier_config``, the labelled
    utterance splits): ``$HOPWEAVE_EXAMPLE_PACK``, else the first example pack of a source
    checkout. The engine never uses it (a store reads its own settings). Raises ConfigError."""
    pack = _example_pack()
    if pack is None:
        raise ConfigError("no example pack: run from a source checkout, set HOPWEAVE_EXAMPLE_PACK, "
                          "or load a pack with `hopweave load PACK` and use its store")
    return pack


def _example_pack() -> Path | None:
    env = os.environ.get("HOPWEAVE_EXAMPLE_PACK")
    if env:
        return Path(env)
    root = repo_root()
    packs = sorted(p.parent for p in root.glob("examples/*/hopweave.yaml")) if root is not None else []
    return packs[0] if packs else None


def repo_root() -> Path | None:
    """The source checkout's root when running from one (examples/ lives there), else None."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "examples").is_dir() else None
