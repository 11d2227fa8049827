"""Domain settings for tests: DeltaBank's, read from the pack's manifest
(examples/deltabank/hopweave.yaml, ``domain:``), a registry serving its tenants, and the pack's
schema (``deltabank_schema()``: the base schema extended by examples/deltabank/schema.yaml), which
every test on DeltaBank data passes to its store explicitly (a store opened with no schema and no
store settings has only the base schema)."""

from __future__ import annotations

from pathlib import Path

from hopweave.models.domain import DomainRegistry, DomainSettings
from hopweave.models.schema import GraphSchema
from hopweave.pack.manifest import read_manifest

__all__ = ["DELTABANK", "DELTABANK_REGISTRY", "PACK", "SCHEMA_FILE", "TENANTS", "deltabank_schema", "registry",
           "write_deltabank_settings"]

PACK = Path(__file__).resolve().parents[2] / "examples" / "deltabank"
SCHEMA_FILE = PACK / "schema.yaml"
_MANIFEST = read_manifest(PACK)
DELTABANK = _MANIFEST.domain_settings()
TENANTS = list(_MANIFEST.tenants)


def registry(settings: DomainSettings = DELTABANK, tenants: list[str] | None = None) -> DomainRegistry:
    return DomainRegistry([(settings, list(tenants or TENANTS))])


DELTABANK_REGISTRY = registry()


def deltabank_schema() -> GraphSchema:
    """The DeltaBank pack's schema (base + examples/deltabank/schema.yaml)."""
    return GraphSchema.load(SCHEMA_FILE)


def write_deltabank_settings(store_dir: Path) -> Path:
    """Give the store directory ``store_dir`` the store settings ``hopweave load`` would write for
    the DeltaBank pack (its schema and domain; no classifier), for fixtures that build a DeltaBank
    graph by hand: every opener then reads the store with its own schema, as for a loaded store."""
    from hopweave.models.store_settings import DomainRecord, StoreSettings, write_store_settings

    rec = DomainRecord(settings=DELTABANK, tenants=list(TENANTS), default_tenant=_MANIFEST.default_tenant)
    return write_store_settings(store_dir, StoreSettings(store_schema=deltabank_schema().model_dump(mode="json"),
                                                         domains={DELTABANK.name: rec}))
