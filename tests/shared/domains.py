"""Domain settings for tests: DeltaBank's, read from the pack's manifest
(examples/deltabank/hopweave.yaml, ``domain:``), and a registry serving its tenants."""

from __future__ import annotations

from pathlib import Path

from hopweave.models.domain import DomainRegistry, DomainSettings
from hopweave.pack.manifest import read_manifest

__all__ = ["DELTABANK", "DELTABANK_REGISTRY", "PACK", "TENANTS", "registry"]

PACK = Path(__file__).resolve().parents[2] / "examples" / "deltabank"
_MANIFEST = read_manifest(PACK)
DELTABANK = _MANIFEST.domain_settings()
TENANTS = list(_MANIFEST.tenants)


def registry(settings: DomainSettings = DELTABANK, tenants: list[str] | None = None) -> DomainRegistry:
    return DomainRegistry([(settings, list(tenants or TENANTS))])


DELTABANK_REGISTRY = registry()
