"""The labeled utterance sets (examples / validation / test) and their loaders.

Layout (``examples/deltabank/utterances/``):

- ``examples.yaml``: ``{GoalName: [utterance, ...]}`` -- the utterances on the GoalType nodes;
- ``validation.yaml`` and ``test.yaml``: ``[{goal: Name | null, tags: [...], text: ...}, ...]``
  (``goal: null`` = out of scope).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from pydantic import BaseModel, ConfigDict

from hopweave.errors import ConfigError, InputError
from hopweave.fileio import read_yaml

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.models.common import Session


class LabeledUtterance(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    goal: Optional[str] = None
    tags: tuple[str, ...] = ()


def default_utterance_dir() -> Path:
    """``examples/deltabank/utterances`` of the source checkout.

    Raises:
        ConfigError: not running from a checkout (the examples are not installed with the wheel).
    """
    from hopweave.paths import repo_root

    root = repo_root()
    if root is None or not (root / "examples" / "deltabank" / "utterances").is_dir():
        raise ConfigError("examples/deltabank/utterances is only in the source checkout; pass a path")
    return root / "examples" / "deltabank" / "utterances"


def _read(path: Path) -> object:
    return read_yaml(path, "utterance file")


def load_examples(path: str | Path | None = None) -> dict[str, list[str]]:
    """``{goal: [utterances]}`` from an examples file (default: the DeltaBank one).

    Raises:
        InputError: missing or malformed file.
    """
    p = Path(path) if path is not None else default_utterance_dir() / "examples.yaml"
    data = _read(p)
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(t, str) for t in v) for k, v in data.items()
    ):
        raise InputError(f"{p} must map goal names to lists of utterances")
    return {k: list(v) for k, v in data.items()}


def load_split(path: str | Path) -> list[LabeledUtterance]:
    """A labeled split (validation or test). A bare name (``"test"``) means the DeltaBank file.

    Raises:
        InputError: missing or malformed file.
    """
    p = Path(path)
    if not p.suffix and not p.exists():
        p = default_utterance_dir() / f"{p.name}.yaml"
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
    """A Session from a JSON file (see examples/deltabank/sessions/README.md); the one parser is
    :func:`hopweave.models.common.read_session_file`. Raises InputError or TenantError."""
    from hopweave.models.common import read_session_file

    return read_session_file(path)
