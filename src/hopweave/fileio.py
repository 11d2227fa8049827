"""Reading the project's YAML data files with one error behaviour."""

from __future__ import annotations

import errno
import os
import shutil
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
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (ours or another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, not ours
        return True
    return True


def copy_sparse(src: str, dst: str) -> str:
    """Copy a file keeping its holes (qdrant preallocates sparse files: the WAL segment, 1 MB
    flag files; a plain copy writes their zeros out, several times the index's real size)."""
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        size = os.fstat(fi.fileno()).st_size
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fi.fileno(), pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # only a hole up to the end
                    break
                raise
            end = os.lseek(fi.fileno(), start, os.SEEK_HOLE)
            fi.seek(start)
            fo.seek(start)
            left = end - start
            while left > 0:
                chunk = fi.read(min(left, 1 << 20))
                if not chunk:
                    break
                fo.write(chunk)
                left -= len(chunk)
            pos = end
        fo.truncate(size)
    shutil.copystat(src, dst)
    return dst
