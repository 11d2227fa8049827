"""The engine serves each tenant with its domain's settings: one understanding stage per domain
name, built lazily and cached; a tenant no domain serves is a TenantError."""

from __future__ import annotations

import pytest
from domains import DELTABANK

from hopweave.engine.engine import Engine
from hopweave.errors import TenantError
from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.models.domain import DomainRegistry, DomainSettings
from hopweave.understand.understander import Understander, UnderstandingStage

TELCO = DomainSettings.model_validate({"name": "telco", "subject": {"label": "Customer"},
                                       "identifiers": [{"label": "Customer", "prefix": "SUB"}]})


def test_one_understander_per_domain_lazy_and_cached() -> None:
    reg = DomainRegistry([(DELTABANK, ["deltabank"]), (TELCO, ["acme", "zephyr"])])
    eng = Engine(NetworkxGraphStore(None), None, domains=reg)
    try:
        assert eng.understanders.built() == []  # nothing built before it is needed
        bank, telco = eng.understander_for(eng.settings_for("deltabank")), eng.understander_for(eng.settings_for("acme"))
        assert isinstance(bank, Understander) and isinstance(bank, UnderstandingStage)
        assert bank.settings is DELTABANK and telco.settings is TELCO and bank is not telco
        assert eng.understander_for(eng.settings_for("zephyr")) is telco
        assert eng.understanders.built() == ["deltabank", "telco"]
        with pytest.raises(TenantError, match="not served"):
            eng.settings_for("northbank")
    finally:
        eng.close()


def test_open_takes_the_registry() -> None:
    reg = DomainRegistry([(TELCO, ["acme"])])
    eng = Engine.open(graph=NetworkxGraphStore(None), domains=reg)
    try:
        assert eng.domains is reg and eng.settings_for("acme").name == "telco"
    finally:
        eng.close()
