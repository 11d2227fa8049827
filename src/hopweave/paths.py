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


def default_schema_path() -> Path:
    """The example pack's schema in a source checkout (``GraphSchema.load`` merges it onto the
    base), else the base schema. TODO(issue 10): callers move to the store's schema
    (``Engine.open``/the pack loader) and this function goes."""
    pack = _example_pack()
    return pack / "schema.yaml" if pack is not None else base_schema_path()


def example_pack_dir() -> Path:
    """The example pack of a source checkout: the transition-period default of the goal files,
    the filter mapping and the classifier settings (``$HOPWEAVE_EXAMPLE_PACK`` overrides it).
    TODO(issue 10): callers read these from the store's settings. Raises ConfigError."""
    pack = _example_pack()
    if pack is None:
        raise ConfigError("no example pack: run from a source checkout, set HOPWEAVE_EXAMPLE_PACK, "
                          "or load a pack with `hopweave load PACK` and use its store")
    return pack


#: The example pack used by the transition-period defaults above (not named elsewhere in the core).
_EXAMPLE = "deltabank"


def _example_pack() -> Path | None:
    env = os.environ.get("HOPWEAVE_EXAMPLE_PACK")
    if env:
        return Path(env)
    root = repo_root()
    if root is not None and (root / "examples" / _EXAMPLE / "hopweave.yaml").is_file():
        return root / "examples" / _EXAMPLE
    return None


def repo_root() -> Path | None:
    """The source checkout's root when running from one (examples/ lives there), else None."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "examples").is_dir() else None
