"""Reading the project's YAML data files with one error behaviour."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hopweave.errors import InputError


def read_yaml(path: str | Path, what: str) -> Any:
    """The parsed content of a YAML file.

    Raises:
        InputError: the file does not exist, cannot be read, is not UTF-8 text or is not valid
            YAML (the message names ``what`` and the path).
    """
    p = Path(path)
    try:
        return yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{what} {p} does not exist") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {p} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise InputError(f"{what} {p} cannot be read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{what} {p} is not valid YAML: {exc}") from exc


def fsync_dir(directory: str | Path) -> None:
    """fsync a directory (after a rename or a new file in it, so the entry itself is durable).
    Raises OSError; callers translate it into their store's typed error."""
    import os

    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (ours or another user's)."""
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, not ours
        return True
    return True
