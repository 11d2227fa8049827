"""Domain settings for tests: DeltaBank's, read from the pack's manifest
(examples/deltabank/hopweave.yaml, ``domain:``), a registry serving its tenants, and the pack's
schema (``deltabank_schema()``: the base schema extended by examples/deltabank/schema.yaml), which
every test on DeltaBank data passes to its store explicitly (a store opened with no schema and no
store settings has only the base schema)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hopweave.models.domain import DomainRegistry, DomainSettings
from hopweave.models.schema import GraphSchema
from hopweave.pack.manifest import read_manifest

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.understand.calibration import Calibration
    from hopweave.understand.classifier import ClassifierConfig

__all__ = ["CLASSIFIER_FILE", "DELTABANK", "DELTABANK_CALIBRATION", "DELTABANK_CONFIG", "DELTABANK_REGISTRY",
           "FILTERS_FILE", "GOALS_DIR", "PACK", "SCHEMA_FILE", "TENANTS", "UTTERANCES_DIR", "deltabank_calibration",
           "deltabank_classifier_config", "deltabank_schema", "registry", "write_deltabank_settings"]

PACK = Path(__file__).resolve().parents[2] / "examples" / "deltabank"
SCHEMA_FILE = PACK / "schema.yaml"
GOALS_DIR = PACK / "goals"
FILTERS_FILE = PACK / "filters.yaml"
UTTERANCES_DIR = PACK / "utterances"
CLASSIFIER_FILE = PACK / "classifier.yaml"
_MANIFEST = read_manifest(PACK)
DELTABANK = _MANIFEST.domain_settings()
TENANTS = list(_MANIFEST.tenants)


def registry(settings: DomainSettings = DELTABANK, tenants: list[str] | None = None) -> DomainRegistry:
    return DomainRegistry([(settings, list(tenants or TENANTS))])


DELTABANK_REGISTRY = registry()

#: Seed 004's case: Maria's authenticated session, her utterance and the day of the call.
MARIA = {"tenant_id": "deltabank", "customer_id": "CUST_4421", "region": "US", "channel": "phone"}
UTTERANCE = "I want to dispute this $39 late fee on my Platinum card."
AS_OF = "2026-05-12"


def deltabank_schema() -> GraphSchema:
    """The DeltaBank pack's schema (base + examples/deltabank/schema.yaml)."""
    return GraphSchema.load(SCHEMA_FILE)


def deltabank_classifier_config() -> "ClassifierConfig":
    """The DeltaBank pack's classifier settings (examples/deltabank/classifier.yaml)."""
    from hopweave.understand.classifier import load_classifier_config

    return load_classifier_config(CLASSIFIER_FILE)


def deltabank_calibration() -> "Calibration":
    """The DeltaBank pack's calibration (examples/deltabank/classifier_calibration.json)."""
    from hopweave.understand.calibration import load_calibration

    path = deltabank_classifier_config().calibration_path()
    assert path is not None
    return load_calibration(path)


def write_deltabank_settings(store_dir: Path) -> Path:
    """Give the store directory ``store_dir`` the store settings ``hopweave load`` would write for
    the DeltaBank pack (its schema, domain and classifier settings), for fixtures that build a
    DeltaBank graph by hand: every opener then reads the store with its own settings, as for a
    loaded store."""
    import json

    from hopweave.fileio import read_yaml
    from hopweave.models.store_settings import DomainRecord, StoreSettings, write_store_settings

    classifier = read_yaml(CLASSIFIER_FILE, "classifier settings")
    calibration = json.loads((PACK / classifier["calibration_file"]).read_text(encoding="utf-8"))
    rec = DomainRecord(settings=DELTABANK, tenants=list(TENANTS), default_tenant=_MANIFEST.default_tenant,
                       classifier=classifier, calibration=calibration)
    return write_store_settings(store_dir, StoreSettings(store_schema=deltabank_schema().model_dump(mode="json"),
                                                         domains={DELTABANK.name: rec}))


#: The DeltaBank pack's classifier settings and calibration, for tests that build a classifier or
#: an understander on a DeltaBank graph by hand (without them they get the engine's defaults).
DELTABANK_CONFIG = deltabank_classifier_config()
DELTABANK_CALIBRATION = deltabank_calibration()
