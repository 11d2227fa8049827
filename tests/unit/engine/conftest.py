"""Engine test constants. The session store and engine (``store_dir``, ``cli_store``, ``engine``,
``maria``) are tests/unit/conftest.py's, shared with the adapter and CLI tests; the names below
are re-exported for the test modules of this folder (``from conftest import AS_OF, ...``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))  # tests/shared helpers
from domains import AS_OF, DELTABANK, DELTABANK_REGISTRY, MARIA, UTTERANCE  # noqa: E402,F401  (for the test modules)
from engine_store import EXAMPLE, REPO, SCENARIOS, STORE_NODES  # noqa: E402,F401  (puts the pack's generator on sys.path)
