"""Engine test setup: tests/shared on ``sys.path`` (``domains``, ``engine_store`` and the other
helpers the test modules import) and the pack's generator with it. The session store and engine
(``store_dir``, ``cli_store``, ``engine``, ``maria``) are tests/unit/conftest.py's, shared with the
adapter and CLI tests.

Test modules import their constants from tests/shared (``from domains import AS_OF, MARIA``),
not from a conftest: another folder's conftest may be the one loaded under that name when a
command names several folders. The names below stay importable from here for older modules.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))  # tests/shared helpers
from domains import AS_OF, DELTABANK, DELTABANK_REGISTRY, MARIA, UTTERANCE  # noqa: E402,F401
from engine_store import EXAMPLE, REPO, SCENARIOS, STORE_NODES  # noqa: E402,F401  (puts the pack's generator on sys.path)
