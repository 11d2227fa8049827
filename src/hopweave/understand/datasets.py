"""The labeled utterance sets (examples / validation / test) and their loaders.

Layout (a pack's ``utterances/``):

- ``examples.yaml``: ``{GoalName: [utterance, ...]}`` -- the utterances on the GoalType nodes;
- ``validation.yaml`` and ``test.yaml``: ``[{goal: Name | null, tags: [...], text: ...}, ...]``
  (``goal: null`` = out of scope).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from pydantic import BaseModel, ConfigDict

from hopweave.errors import InputError
from hopweave.fileio import read_yaml

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.models.common import Session


class LabeledUtterance(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    goal: Optional[str] = None
    tags: tuple[str, ...] = ()


def _read(path: Path) -> object:
    return read_yaml(path, "utterance file")


def load_examples(path: str | Path) -> dict[str, list[str]]:
    """``{goal: [utterances]}`` from an examples file (a pack's ``utterances/examples.yaml``).

    Raises:
        InputError: missing or malformed file.
    """
    p = Path(path)
    data = _read(p)
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(t, str) for t in v) for k, v in data.items()
    ):
        raise InputError(f"{p} must map goal names to lists of utterances")
    return {k: list(v) for k, v in data.items()}


def load_split(path: str | Path) -> list[LabeledUtterance]:
    """A labeled split (validation or test): a pack's ``utterances/<split>.yaml``.

    Raises:
        InputError: missing or malformed file.
    """
    p = Path(path)
    data = _read(p)
    if not isinstance(data, list):
        raise InputError(f"{p} must be a list of {{goal, tags, text}} items")
    try:
        return [LabeledUtterance.model_validate(d) for d in data]
    except Exception as exc:
        raise InputError(f"{p}: malformed item: {exc}") from exc


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes (for provenance)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read_session(path: str | Path) -> "Session":
    """A Session from a JSON file (see docs/packs.md); the one parser is
    :func:`hopweave.models.common.read_session_file`. Raises InputError or TenantError."""
    from hopweave.models.common import read_session_file

    return read_session_file(path)
