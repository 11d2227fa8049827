"""``hopweave init DIR``: write a small, valid, commented starter pack (the files of
``hopweave/pack/template``), with the domain name and tenant filled in."""

from __future__ import annotations

import re
from pathlib import Path

from hopweave.errors import PackError

TEMPLATE = Path(__file__).resolve().parent / "template"


def init_pack(directory: str | Path, *, name: str | None = None, tenant: str | None = None) -> list[Path]:
    """Write the starter pack into ``directory`` (created; it must not exist or be empty).
    ``name`` defaults to the folder's name made safe, ``tenant`` to ``<name>-co``. Returns the
    files written. Raises PackError for a non-empty directory, an unusable name or a folder that
    cannot be written (read-only or full filesystem, /proc)."""
    d = Path(directory)
    if d.exists() and (not d.is_dir() or any(d.iterdir())):
        raise PackError(f"{d} exists and is not an empty directory: pick a new folder for the pack")
    name = name or re.sub(r"[^a-z0-9_-]", "-", d.resolve().name.lower()).strip("-_") or "mypack"
    if not re.fullmatch(r"[a-z][a-z0-9_-]{0,39}", name):
        raise PackError(f"pack name {name!r}: use lower-case letters, digits, '_' or '-', starting with a letter "
                        "(pass --name)")
    tenant = tenant or f"{name}-co"
    written = []
    for src in sorted(TEMPLATE.rglob("*")):
        if not src.is_file() or "__pycache__" in src.parts:
            continue
        rel = Path(str(src.relative_to(TEMPLATE)).replace("__TENANT__", tenant))
        out = d / rel
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(src.read_text(encoding="utf-8").replace("__NAME__", name).replace("__TENANT__", tenant),
                           encoding="utf-8")
        except OSError as exc:
            raise PackError(f"cannot write the starter pack to {d}: {exc.strerror or exc} ({exc.filename or out}); "
                            "pick a folder on a writable filesystem with free space") from None
        written.append(out)
    return written
