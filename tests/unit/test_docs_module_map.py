"""docs/engine.md's stage-to-module map (where the README tells a reader to start) names modules
that exist, and names every module of the engine package, so the map cannot drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "hopweave"
ENGINE_MD = ROOT / "docs" / "engine.md"


def _map_section() -> str:
    text = ENGINE_MD.read_text(encoding="utf-8")
    m = re.search(r"^## Stage-to-module map.*?(?=^## )", text, flags=re.S | re.M)
    assert m, "docs/engine.md has no '## Stage-to-module map' section"
    return m.group(0)


def _named_modules() -> set[str]:
    return set(re.findall(r"`([a-z_]+/[a-z_]+\.py)`", _map_section()))


def test_the_readme_points_to_the_map() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/engine.md" in readme and "stage-to-module map" in readme


def test_every_module_in_the_map_exists() -> None:
    named = _named_modules()
    assert len(named) >= 20, named
    missing = sorted(p for p in named if not (SRC / p).is_file())
    assert not missing, f"docs/engine.md names modules that do not exist: {missing}"


def test_every_engine_module_is_in_the_map() -> None:
    engine = {f"engine/{p.name}" for p in (SRC / "engine").glob("*.py") if p.name != "__init__.py"}
    left_out = sorted(engine - _named_modules())
    assert not left_out, f"add these to docs/engine.md's stage-to-module map: {left_out}"
