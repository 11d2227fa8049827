"""A problem found in a domain pack: where it is and what to fix."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Problem(BaseModel):
    """One problem of a pack: ``file`` (relative to the pack), optionally the ``line`` or the
    ``record`` (a key path, pattern name, node id), what is wrong and how to fix it."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int | None = None
    record: str | None = None
    message: str
    fix: str = ""

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line is not None else "")
        where += f" [{self.record}]" if self.record else ""
        return f"{where}: {self.message}" + (f" -- fix: {self.fix}" if self.fix else "")
