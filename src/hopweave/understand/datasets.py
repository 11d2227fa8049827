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
    """A Session from a JSON file holding the Session model's fields (see
    examples/deltabank/sessions/README.md). An ``as_of`` key, if present, is ignored: as_of is
    per request.

    Raises:
        InputError: unreadable file, not a JSON object, or fields the Session model rejects.
        TenantError: a missing or malformed tenant_id.
    """
    import json

    from pydantic import ValidationError

    from hopweave.errors import TenantError
    from hopweave.models.common import Session

    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read session file {p}: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(f"session file {p} must hold a JSON object with the Session fields")
    data.pop("as_of", None)
    try:
        return Session.model_validate(data)
    except TenantError:
        raise
    except ValidationError as exc:
        cause = next((e.get("ctx", {}).get("error") for e in exc.errors() if e.get("ctx")), None)
        if isinstance(cause, TenantError):
            raise cause from None
        raise InputError(f"session file {p} is not a valid session: {exc}") from None
