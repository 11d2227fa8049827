"""A command's output file that cannot be written is a typed error naming the path."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopweave.cli.common import write_output
from hopweave.errors import InputError


def test_an_unwritable_output_path_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot write the trace picture to /proc/hopweave.html"):
        write_output(Path("/proc/hopweave.html"), "<html></html>", "trace picture")
    write_output(tmp_path / "new" / "out.html", "<html></html>", "audit report")
    assert (tmp_path / "new" / "out.html").read_text(encoding="utf-8") == "<html></html>"
