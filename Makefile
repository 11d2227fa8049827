# hopweave: the two commands a new user needs are `make demo` and `make test`.
# Both create .venv on first use (Python >= 3.11) and install hopweave with its extras.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup demo test test-unit test-falkordb bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The CPU build of torch (pinned; an unpinned torch pulls a multi-GB CUDA build).
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[all]'
	touch $@

demo: setup
	$(VENV)/bin/hopweave demo

# Lint (ruff) and types (mypy, strict on the public API), then the default suite (fast), then the
# slow suite (deselected by default: pytest.ini_options addopts). Any failure fails .ci/run.
test: setup
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m pytest -q
	$(PY) -m pytest -q -m slow
	bash .ci/falkordb.sh

test-unit: setup
	$(PY) -m pytest -q tests/unit

test-falkordb:
	bash .ci/falkordb.sh

bench: setup
	$(PY) benchmarks/bench_maria.py --chunks 5000 --nodes 50000 --concurrency 20

clean:
	rm -rf .hopweave
