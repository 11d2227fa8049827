"""What a store keeps about the packs loaded into it: ``<store>/hopweave-store.json``.

Per domain: its settings (:class:`~hopweave.models.domain.DomainSettings`), the tenants it
serves, the pack's own schema (the part that extends the base schema), its classifier settings
and calibration, and the pack revision (a hash of the pack's files). The store's schema is the
base schema extended by every domain's schema, so ``Engine.open(DIR)`` and every command open the
store correctly with no flags. The file is plain JSON (never executed), written atomically
(temporary file, fsync, rename), and versioned by ``format``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hopweave.errors import StoreCorruptError, StoreError
from hopweave.fileio import fsync_dir
from hopweave.models.domain import DomainRegistry, DomainSettings

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.models.schema import GraphSchema

#: File name of the store settings inside a store directory.
SETTINGS_FILE = "hopweave-store.json"
STORE_FORMAT: Final = 1


class DomainRecord(BaseModel):
    """One loaded domain pack, as the store remembers it."""

    model_config = ConfigDict(extra="forbid")

    settings: DomainSettings
    tenants: list[str]
    default_tenant: str | None = None
    #: The pack's schema file content (it extends the base schema).
    pack_schema: dict[str, Any] = Field(default_factory=dict)
    classifier: dict[str, Any] | None = None
    calibration: dict[str, Any] | None = None
    #: The calibration file the load read (absolute path; "" without one): ``hopweave doctor``
    #: warns when it no longer equals ``calibration`` (refitted after the load).
    calibration_file: str = ""
    revision: str = ""
    description: str = ""


class StoreSettings(BaseModel):
    """The store's settings file."""

    model_config = ConfigDict(extra="forbid")

    format: Literal[1] = STORE_FORMAT
    #: The store's schema: the base schema extended by every domain's schema (merged at load).
    store_schema: dict[str, Any] = Field(default_factory=dict)
    domains: dict[str, DomainRecord] = Field(default_factory=dict)

    # Shadows pydantic's deprecated v1 ``BaseModel.schema`` classmethod (use model_json_schema).
    def schema(self) -> "GraphSchema":  # type: ignore[override]
        """The store's merged schema (raises StoreCorruptError if the file holds none)."""
        from hopweave.models.schema import GraphSchema

        if not self.store_schema:
            raise StoreCorruptError("the store settings hold no schema; re-run `hopweave load PACK --store DIR`")
        return GraphSchema.from_dict(self.store_schema)

    def tenant_domains(self) -> dict[str, str]:
        return {t: name for name, rec in sorted(self.domains.items()) for t in rec.tenants}

    def registry(self) -> DomainRegistry:
        """Which domain serves which tenant."""
        return DomainRegistry([(r.settings, list(r.tenants)) for _, r in sorted(self.domains.items())])

    def default_tenant(self) -> str | None:
        """The default tenant of the only domain, or of the first domain by name."""
        for _, rec in sorted(self.domains.items()):
            return rec.default_tenant or (rec.tenants[0] if rec.tenants else None)
        return None

    def pack_schemas(self) -> list[dict[str, Any]]:
        return [r.pack_schema for _, r in sorted(self.domains.items()) if r.pack_schema]


def settings_path(store_dir: str | Path) -> Path:
    return Path(store_dir) / SETTINGS_FILE


def read_store_settings(store_dir: str | Path) -> StoreSettings | None:
    """The store's settings, or None when the directory has none (not loaded from a pack).
    Raises StoreCorruptError (naming the file) when it is unreadable or invalid."""
    path = settings_path(store_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise StoreCorruptError(f"{path} is not a valid hopweave store settings file (not UTF-8 text at byte "
                                f"{exc.start}); re-run `hopweave load PACK --store DIR` to rewrite it") from None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return parse_store_settings(text, str(path))


def parse_store_settings(text: str, source: str) -> StoreSettings:
    """Settings from their JSON text (``source`` names where it came from in the error).
    Raises StoreCorruptError."""
    try:
        return StoreSettings.model_validate(json.loads(text))
    except (ValueError, ValidationError) as exc:
        raise StoreCorruptError(
            f"{source} is not a valid hopweave store settings file ({str(exc).splitlines()[0]}); "
            "re-run `hopweave load PACK` into that store to rewrite it"
        ) from exc


def write_store_settings(store_dir: str | Path, settings: StoreSettings) -> Path:
    """Write atomically (temporary file, fsync, rename, fsync of the directory). Returns the path."""
    path = settings_path(store_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    data = json.dumps(settings.model_dump(mode="json"), indent=1, sort_keys=True, ensure_ascii=False)
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(data + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}; check free space and permissions") from exc
    return path


def store_schema(store_dir: str | Path) -> "GraphSchema":
    """The schema of the store in ``store_dir``: the one its packs were loaded with, else (a store
    not loaded from a pack, or none yet) the domain-free base schema."""
    from hopweave.models.schema import GraphSchema

    stored = read_store_settings(store_dir)
    return stored.schema() if stored is not None else GraphSchema.base()
