"""Puts the DeltaBank pack's generator (``examples/deltabank/generator``) on ``sys.path``:
benchmarks ``import deltabank_pack`` and then ``from generator.build import load_deltabank``."""

from __future__ import annotations

import sys
from pathlib import Path

PACK_DIR = Path(__file__).resolve().parents[1] / "examples" / "deltabank"
if str(PACK_DIR) not in sys.path:
    sys.path.insert(0, str(PACK_DIR))
