"""The README's Python API block runs as written: it is extracted from README.md and executed in
a temporary directory holding a loaded DeltaBank store at ``.hopweave/store`` (a copy of the
session's store), so an attribute the README names that the result lacks fails here."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), flags=re.S | re.M)


def test_the_readme_python_api_block_runs(cli_store: Path, tmp_path: Path) -> None:
    blocks = [b for b in _python_blocks() if "engine.retrieve(" in b]
    assert len(blocks) == 1, "the README has one Python API block with engine.retrieve"
    shutil.copytree(cli_store, tmp_path / ".hopweave" / "store")
    here = os.getcwd()
    ns: dict[str, object] = {}
    os.chdir(tmp_path)
    try:
        exec(compile(blocks[0], "README.md (Python API)", "exec"), ns)  # noqa: S102 - the README's own code
    finally:
        os.chdir(here)
        engine = ns.get("engine")
        if engine is not None:
            engine.close()  # type: ignore[attr-defined]
    result = ns["result"]
    assert result.goal == "LateFeeDispute" and result.confidence > 0.99  # type: ignore[attr-defined]
    assert result.chunks[0].channels and result.trace_id.startswith("RT_")  # type: ignore[attr-defined]
    assert "(src: " in result.context.text and result.recorded  # type: ignore[attr-defined]
