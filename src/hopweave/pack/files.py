"""Every read of a domain pack's files goes through :class:`PackFiles`.

A pack file is read only when its real path (symlinks followed) is inside the pack folder, only
up to its kind's size limit (:data:`FILE_LIMITS`, bytes per file) and its section's total
(:data:`SECTION_LIMITS`, bytes per manifest section: all goal files together, all corpus files
together, ...), and only as UTF-8 text. Anything else raises :class:`PackFileError`, which names
the file (relative to the pack) and says what to fix. ``validate`` and ``load`` read through
the same object, so they refuse the same files.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import zlib
from pathlib import Path
from typing import IO, Any, Iterator

import yaml

from hopweave.errors import PackError

_MB = 1 << 20

#: Size limit of one file, by kind (bytes). Graph data files are streamed; the rest are parsed
#: whole. The limit of a gzipped graph file applies to its decompressed text.
FILE_LIMITS: dict[str, int] = {
    "manifest": 1 * _MB,
    "schema": 4 * _MB,
    "goal": 4 * _MB,
    "filters": 1 * _MB,
    "classifier": 4 * _MB,
    "calibration": 1 * _MB,
    "session": 256 * 1024,
    "scenario": 1 * _MB,
    "utterances": 8 * _MB,
    "corpus": 8 * _MB,
    "graph": 1024 * _MB,
}

#: Size limit of one manifest section, all its files together (bytes).
SECTION_LIMITS: dict[str, int] = {
    "goal": 32 * _MB,
    "session": 16 * _MB,
    "scenario": 64 * _MB,
    "utterances": 32 * _MB,
    "corpus": 256 * _MB,
    "graph": 4096 * _MB,
}

#: Parse errors of a gzip stream (a corrupt or truncated ``.gz``).
_GZIP_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error)


class PackFileError(PackError):
    """A pack file that cannot be read: outside the pack, too large, not UTF-8, not parseable.
    ``file`` is the path relative to the pack (or as the manifest wrote it), ``fix`` what to do."""

    def __init__(self, file: str, message: str, fix: str) -> None:
        super().__init__(f"{file}: {message}; fix: {fix}")
        self.file, self.problem, self.fix = file, message, fix


def _mb(n: int) -> str:
    return f"{n / _MB:.0f} MB" if n >= _MB else f"{n // 1024} KB"


class PackFiles:
    """The files of one pack folder, read only from inside it, within the size limits.

    ``root`` is the pack folder (resolved once). Bytes read are counted per section, so one
    object is used for one pass over a pack (``validate_pack`` makes one)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self.section_bytes: dict[str, int] = {}

    # ---- paths -------------------------------------------------------------------------------
    def rel(self, path: str | Path) -> str:
        """``path`` relative to the pack (as given when it is not inside)."""
        p = Path(path)
        for cand in (p, p.resolve() if p.exists() or p.is_symlink() else p):
            try:
                return str(Path(os.path.abspath(cand)).relative_to(self.root))
            except ValueError:
                continue
        return str(path)

    def inside(self, path: str | Path, what: str) -> Path:
        """The real path of ``path`` (symlinks followed). Raises PackFileError when it is outside
        the pack folder."""
        p = Path(path)
        real = (p if p.is_absolute() else self.root / p).resolve()
        if real != self.root and self.root not in real.parents:
            shown = self.rel(path)
            how = "is a symlink that points" if (self.root / shown).is_symlink() or Path(path).is_symlink() else "is"
            raise PackFileError(shown, f"{what} {how} outside the pack folder ({real})",
                                "keep every file of a pack inside its folder: copy the file in instead of "
                                "linking it, or fix the path")
        return real

    def path(self, rel: str, what: str) -> Path:
        """The manifest's relative path ``rel`` inside the pack (it need not exist). Raises
        PackFileError when it leaves the pack (``..``, an absolute path, a symlink out)."""
        if Path(rel).is_absolute():
            raise PackFileError(rel, f"{what} path {rel!r} is absolute",
                                "write it relative to the pack folder (e.g. corpus/)")
        return self.inside(self.root / rel, f"{what} path {rel!r}")

    def listing(self, directory: Path, suffixes: tuple[str, ...], what: str, recursive: bool = False
                ) -> list[Path]:
        """The files of ``directory`` (inside the pack) whose names end with one of ``suffixes``,
        sorted by name (README files included; callers skip them). Symlinks are listed as they
        are: reading one that points outside raises."""
        d = self.inside(directory, what)
        if not d.is_dir():
            return []
        found = d.rglob("*") if recursive else d.iterdir()
        return sorted(p for p in found if p.name.lower().endswith(suffixes) and (p.is_file() or p.is_symlink()))

    # ---- reading -----------------------------------------------------------------------------
    def _admit(self, path: Path, kind: str, what: str) -> Path:
        real = self.inside(path, what)
        shown = self.rel(path)
        if not real.is_file():
            raise PackFileError(shown, f"{what} does not exist" if not real.exists() else f"{what} is not a file",
                                "create the file or fix the path")
        size = real.stat().st_size
        self._count(shown, kind, size, what)
        return real

    def _count(self, shown: str, kind: str, size: int, what: str) -> None:
        limit = FILE_LIMITS.get(kind)
        if limit is not None and size > limit:
            raise PackFileError(shown, f"{what} is {_mb(size)}, over the {_mb(limit)} limit of a {kind} file",
                                "split it into smaller files or trim it (docs/packs.md, Size limits)")
        total = self.section_bytes.get(kind, 0) + size
        self.section_bytes[kind] = total
        cap = SECTION_LIMITS.get(kind)
        if cap is not None and total > cap:
            raise PackFileError(shown, f"the pack's {kind} files reach {_mb(total)}, over the {_mb(cap)} limit "
                                f"of the {kind} section", "make the section smaller (docs/packs.md, Size limits)")

    def read_bytes(self, path: str | Path, kind: str, what: str | None = None) -> bytes:
        """The bytes of a pack file within its limits. Raises PackFileError."""
        what = what or f"{kind} file"
        real = self._admit(Path(path), kind, what)
        try:
            return real.read_bytes()
        except OSError as exc:
            raise PackFileError(self.rel(path), f"{what} cannot be read ({exc.strerror or exc})",
                                "check the file's permissions") from None

    def read_text(self, path: str | Path, kind: str, what: str | None = None) -> str:
        """The UTF-8 text of a pack file. Raises PackFileError (outside, too large, unreadable,
        not UTF-8: a binary file)."""
        what = what or f"{kind} file"
        data = self.read_bytes(path, kind, what)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PackFileError(self.rel(path), f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                                "save it as UTF-8 text; a binary file (PDF, image, archive) cannot be part of "
                                "the pack's text files") from None

    def read_yaml(self, path: str | Path, kind: str, what: str | None = None) -> Any:
        """The parsed YAML of a pack file. Raises PackFileError."""
        what = what or f"{kind} file"
        text = self.read_text(path, kind, what)
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise PackFileError(self.rel(path), f"{what} is not valid YAML: {str(exc).splitlines()[0]}"
                                + _yaml_where(exc), "fix the YAML syntax") from None
        except RecursionError:
            raise PackFileError(self.rel(path), f"{what} nests too deeply to parse",
                                "flatten the YAML structure") from None

    def read_json(self, path: str | Path, kind: str, what: str | None = None) -> Any:
        """The parsed JSON of a pack file. Raises PackFileError."""
        what = what or f"{kind} file"
        text = self.read_text(path, kind, what)
        try:
            return json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise PackFileError(self.rel(path), f"{what} is not valid JSON ({exc})", "fix the JSON") from None

    def open_text(self, path: str | Path, kind: str, what: str | None = None) -> "LimitedText":
        """A text stream of a pack file (``.gz`` decompressed), for line-by-line reading. Its
        iteration raises PackFileError on a corrupt gzip stream, a non-UTF-8 line or more text
        than the kind's limit."""
        what = what or f"{kind} file"
        real = self._admit(Path(path), kind, what)
        return LimitedText(self, real, self.rel(path), kind, what)


def _yaml_where(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    return f" (line {mark.line + 1})" if mark is not None else ""


class LimitedText:
    """Lines of one pack file (a context manager and an iterator of ``str`` lines, newlines
    kept), decompressing ``.gz`` and counting decompressed bytes against the file limit."""

    def __init__(self, files: PackFiles, real: Path, shown: str, kind: str, what: str) -> None:
        self.files, self.real, self.shown, self.kind, self.what = files, real, shown, kind, what
        self._fh: IO[str] | None = None
        self.line_no = 0

    def __enter__(self) -> "LimitedText":
        try:
            if self.real.name.endswith(".gz"):
                raw: Any = gzip.open(self.real, "rb")  # noqa: SIM115 - closed in __exit__
            else:
                raw = open(self.real, "rb")  # noqa: SIM115 - closed in __exit__
        except OSError as exc:
            raise PackFileError(self.shown, f"{self.what} cannot be read ({exc.strerror or exc})",
                                "check the file's permissions") from None
        self._fh = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            try:
                self._fh.close()
            except (OSError, *_GZIP_ERRORS):
                pass

    def __iter__(self) -> Iterator[str]:
        assert self._fh is not None, "use LimitedText in a with block"
        limit = FILE_LIMITS.get(self.kind)
        seen = 0
        while True:
            try:
                line = self._fh.readline()
            except UnicodeDecodeError as exc:
                raise PackFileError(self.shown, f"{self.what} is not UTF-8 text after line {self.line_no} "
                                    f"({exc.reason})", "save it as UTF-8 text") from None
            except _GZIP_ERRORS as exc:
                raise PackFileError(self.shown, f"{self.what} is not a readable gzip file after line "
                                    f"{self.line_no} ({exc or type(exc).__name__})",
                                    "recompress it (gzip FILE) or store it uncompressed") from None
            except OSError as exc:
                raise PackFileError(self.shown, f"{self.what} cannot be read ({exc.strerror or exc})",
                                    "check the file") from None
            if not line:
                return
            self.line_no += 1
            seen += len(line)
            if limit is not None and seen > limit:
                raise PackFileError(self.shown, f"{self.what} holds more than the {_mb(limit)} limit of a "
                                    f"{self.kind} file", "split it into several files")
            yield line
