"""A pack without ``classifier.yaml`` is classified with the engine's own default settings and
calibration, never with another pack's (the example packs' files are not a fallback)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hopweave.engine.engine import Engine
from hopweave.errors import InputError
from hopweave.models.store_settings import read_store_settings
from hopweave.pack.init import init_pack
from hopweave.pack.loader import load_pack
from hopweave.pack.validate import validate_pack
from hopweave.understand.calibration import DEFAULT_CALIBRATION
from hopweave.understand.classifier import ClassifierConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))  # tests/shared helpers
from domains import DELTABANK_CALIBRATION, DELTABANK_CONFIG  # noqa: E402


def _pack_without_classifier(d: Path) -> Path:
    """The `hopweave init` starter pack with its classifier files and manifest line removed."""
    init_pack(d, name="shop", tenant="shop-co")
    (d / "classifier.yaml").unlink()
    (d / "classifier_calibration.json").unlink()
    manifest = d / "hopweave.yaml"
    lines = manifest.read_text(encoding="utf-8").splitlines(keepends=True)
    manifest.write_text("".join(x for x in lines if not x.startswith("classifier:")), encoding="utf-8")
    return d


def test_loads_and_classifies_with_the_engine_defaults(tmp_path: Path) -> None:
    pack = _pack_without_classifier(tmp_path / "shop")
    assert validate_pack(pack) == []
    store = tmp_path / "store"
    load_pack(pack, store, with_vectors=False)
    rec = read_store_settings(store).domains["shop"]  # type: ignore[union-attr]
    assert rec.classifier is None and rec.calibration is None

    engine = Engine.open(store)
    try:
        clf = engine.understander_for(engine.settings_for("shop-co")).classifier  # type: ignore[attr-defined]
        assert clf.config == ClassifierConfig() and clf.calibration == DEFAULT_CALIBRATION
        # not DeltaBank's (nor any example pack's) settings
        assert clf.config != DELTABANK_CONFIG.model_copy(update={"base_dir": None})
        assert not clf.config.background and clf.config.calibration_path() is None
        assert clf.calibration.id != DELTABANK_CALIBRATION.id
        c = clf.classify("I was charged twice and I want a refund for the invoice")
        assert c.goal == "RefundRequest" and c.calibration_id == DEFAULT_CALIBRATION.id
    finally:
        engine.close()


def test_a_classifier_file_named_in_the_manifest_must_exist(tmp_path: Path) -> None:
    pack = _pack_without_classifier(tmp_path / "shop")
    manifest = pack / "hopweave.yaml"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text + "classifier: classifier.yaml\n", encoding="utf-8")
    with pytest.raises(InputError, match="classifier settings"):
        load_pack(pack, tmp_path / "store", with_vectors=False)
