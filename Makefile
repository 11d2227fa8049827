# hopweave: the two commands a new user needs are `make demo` and `make test`.
# Both create .venv on first use (Python >= 3.11) and install hopweave with its extras.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup demo test test-unit test-falkordb test-parity test-neo4j cypher-lint bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The CPU build of torch (pinned; an unpinned torch pulls a multi-GB CUDA build).
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[all]'
	touch $@

demo: setup
	$(VENV)/bin/hopweave demo examples/deltabank

# Lint (ruff) and types (mypy, strict on the public API), then the default suite (fast), then the
# FalkorDB suite (its Python 3.12 environment also builds the FalkorDB server the slow suite's
# whole-engine congruence runs), then the slow suite (deselected by default: pytest.ini_options
# addopts). Any failure fails .ci/run.
test: setup
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory cypher-lint; \
	else echo "npm not found: the Neo4j parser check (slow suite) will be reported skipped"; fi
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m pytest -q
	bash .ci/falkordb.sh
	$(PY) -m pytest -q -m slow

test-unit: setup
	$(PY) -m pytest -q tests/unit

test-falkordb:
	bash .ci/falkordb.sh

# Whole-engine congruence: every example scenario on the embedded stores and on a FalkorDB server
# + qdrant-client (local mode); the server binary comes from .ci/falkordb.sh's environment.
test-parity: setup
	$(PY) -m pytest -q -m slow tests/parity

# The same scenarios (and the pattern congruence) on Neo4j + a Qdrant server: after
# `docker compose up -d` with HOPWEAVE_NEO4J_URI / HOPWEAVE_NEO4J_PASSWORD / HOPWEAVE_QDRANT_URL set
# (docs/parity.md). Fails, never skips, when they are not reachable.
test-neo4j: setup
	HOPWEAVE_REQUIRE_NEO4J=1 $(PY) -m pytest -q -o addopts='-ra --strict-markers' tests/integration

# Neo4j's own Cypher parser for tests/unit/graph/test_neo4j_parser.py (Node.js >= 20, npm).
cypher-lint: tools/cypher-lint/node_modules/.package-lock.json

tools/cypher-lint/node_modules/.package-lock.json: tools/cypher-lint/package-lock.json
	cd tools/cypher-lint && npm ci --no-audit --no-fund

bench: setup
	$(PY) benchmarks/bench_maria.py --chunks 5000 --nodes 50000 --concurrency 20

clean:
	rm -rf .hopweave
