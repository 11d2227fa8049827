"""A pack named by a path relative to the working directory (as `make demo` and the README do)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopweave.pack.manifest import read_manifest
from hopweave.pack.validate import validate_pack

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("pack", ["examples/deltabank", "examples/telecom"])
def test_a_relative_pack_path_reads_and_validates(pack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert read_manifest(Path(pack)).name == read_manifest(REPO / pack).name
    assert validate_pack(Path(pack)) == []
