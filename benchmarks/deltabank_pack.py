"""The DeltaBank domain pack for the benchmarks.

DeltaBank is a domain pack (``examples/deltabank``), not part of the package: its generator
(``examples/deltabank/generator``: ``build``, ``maria``, ``scale``, ``scale_store``...) is
imported as the top-level package ``generator``. Importing this module puts the pack folder on
``sys.path`` so that ``from generator.build import load_deltabank`` works from a benchmark
script run as ``python benchmarks/<name>.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: The DeltaBank pack folder.
PACK_DIR = Path(__file__).resolve().parents[1] / "examples" / "deltabank"

if str(PACK_DIR) not in sys.path:
    sys.path.insert(0, str(PACK_DIR))


def schema():  # noqa: ANN201
    """The DeltaBank pack's schema (base + ``examples/deltabank/schema.yaml``): what a benchmark's
    store on DeltaBank data is opened with (no store falls back to a pack's schema)."""
    from hopweave.models.schema import GraphSchema

    return GraphSchema.load(PACK_DIR / "schema.yaml")
