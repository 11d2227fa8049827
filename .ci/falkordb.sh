#!/usr/bin/env bash
# The FalkorDB suite (tests/falkordb: networkx vs FalkorDB congruence, saved Browser queries,
# the FalkorDB store) in its own Python 3.12 environment.
#
# Why a second environment: falkordblite (FalkorDB embedded, openCypher) needs Python >= 3.12,
# while the project's CPU torch build is for 3.11. This environment installs hopweave WITHOUT
# the `embed` extra (no torch, no sentence-transformers): the graph code never imports them.
# On Linux falkordblite builds Redis + FalkorDB from source on first install (~4-5 min on 2 cores);
# pip caches the wheel, so later fresh environments install in well under a minute.
#
# Usage: bash .ci/falkordb.sh [pytest args...]     (HOPWEAVE_VENV312 overrides the venv path)
set -euo pipefail
cd "$(dirname "$0")/.."

# The environment: $HOPWEAVE_VENV312, else ./.venv312 when it exists (a developer's checkout), else
# a per-user cache directory, so CI runs on fresh clones of the same machine reuse it.
if [ -n "${HOPWEAVE_VENV312:-}" ]; then
  VENV="$HOPWEAVE_VENV312"
elif [ -d .venv312 ]; then
  VENV=.venv312
else
  VENV="${XDG_CACHE_HOME:-$HOME/.cache}/hopweave/venv312"
fi

find_python312() {
  local cand
  for cand in "${PYTHON312:-}" "$HOME"/.pyenv/versions/3.12*/bin/python3.12 "$(command -v pyenv >/dev/null 2>&1 && pyenv which python3.12 2>/dev/null || true)" "$(command -v python3.12 || true)"; do
    if [ -n "$cand" ] && [ -x "$cand" ] && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 12))' 2>/dev/null; then
      echo "$cand"
      return 0
    fi
  done
  return 1
}

if [ ! -x "$VENV/bin/python" ]; then
  PY312="$(find_python312)" || { echo "falkordb.sh: no Python >= 3.12 found (pyenv install 3.12 or set PYTHON312)" >&2; exit 1; }
  echo "falkordb.sh: creating $VENV with $PY312"
  "$PY312" -m venv "$VENV"
fi

# Reinstall when the checkout moved (editable install) or pyproject.toml changed.
STAMP="$VENV/.hopweave-installed"
WANT="$(pwd) $(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  start=$(date +%s)
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -e '.[falkordb,test]'
  echo "$WANT" > "$STAMP"
  echo "falkordb.sh: installed hopweave[falkordb,test] in $(( $(date +%s) - start )) s"
fi

# The graph code must not pull in the embedding stack.
"$VENV/bin/python" - <<'PY'
import sys
import hopweave.graph.falkordb_store, hopweave.graph.cypher_store, hopweave.graph.networkx_store  # noqa: F401
leaked = [m for m in ("torch", "sentence_transformers") if m in sys.modules]
assert not leaked, f"graph modules imported {leaked}"
PY

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HOPWEAVE_REQUIRE_FALKORDB=1
exec "$VENV/bin/python" -m pytest tests/falkordb -q -p no:cacheprovider "$@"
