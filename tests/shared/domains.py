"""Domain settings for tests: DeltaBank's (the values of examples/deltabank/hopweave.yaml's
``domain:`` section) and a registry serving its tenants."""

from __future__ import annotations

from hopweave.deltabank.domain import DELTABANK, TENANTS
from hopweave.models.domain import DomainRegistry, DomainSettings

__all__ = ["DELTABANK", "DELTABANK_REGISTRY", "TENANTS", "registry"]


def registry(settings: DomainSettings = DELTABANK, tenants: list[str] | None = None) -> DomainRegistry:
    return DomainRegistry([(settings, list(tenants or TENANTS))])


DELTABANK_REGISTRY = registry()
