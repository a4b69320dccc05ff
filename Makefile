# The obvious targets. Each builds what it needs first: scripts/setup (the venv), and for the
# end-to-end tests scripts/setup-test-clients.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CLIENTS := $(VENV)/.clients-installed
# The package's bytecode, written before a run (only what changed; under a second): an editable install is never
# compiled, and with PYTHONDONTWRITEBYTECODE set nothing writes it, so each of a suite's ~700 `blackbox` processes
# would compile the package again (0.2 s of CPU each; README, "What each needs").
BYTECODE := $(PY) -m compileall -q -j 0 blackbox_mitm

.PHONY: setup demo test test-fast lint format bench clean fuzz

$(STAMP): pyproject.toml constraints.txt
	bash scripts/setup $(VENV)

# The end-to-end tests' clients (npm packages, CLI programs, Chromium): `make test` needs them, `make demo` does not.
$(CLIENTS): $(STAMP) scripts/setup-test-clients examples/node/package-lock.json js/tape/package-lock.json tests/e2e/clients/gemini-cli/package-lock.json tests/e2e/clients/openai-agents-js/package-lock.json
	bash scripts/setup-test-clients $(VENV)

setup: $(STAMP) $(CLIENTS)

demo: $(STAMP)          ## record, show, verify, replay offline and fork the example agent
	$(PY) examples/demo.py

test: $(STAMP) $(CLIENTS)  ## the whole suite (unit + end to end through a real proxy)
	$(BYTECODE)
	$(PY) -m pytest -q -n 3 --dist worksteal  # pytest-xdist; worksteal: an idle worker takes half of the busiest one's queue, so no long e2e test queued last makes a one-worker tail

test-fast: $(STAMP)     ## the unit tests only (no proxy process, no browser, no benchmark, no property-based run): under a minute of CPU
	$(BYTECODE)
	$(PY) -m pytest -q -m "not e2e and not browser and not bench and not fuzz"

lint: $(STAMP)          ## ruff (lint + format check) and mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

fuzz: $(STAMP)          ## the property-based tests with a long budget (BLACKBOX_FUZZ=long: 5,000 examples a test in tests/fuzz)
	$(BYTECODE)
	BLACKBOX_FUZZ=long $(PY) -m pytest -q -p no:cacheprovider -m fuzz tests

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: $(STAMP)         ## measure and write docs/benchmarks.md (installs the profilers first)
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test,bench]'
	$(BYTECODE)
	$(PY) benchmarks/run.py --write docs/benchmarks.md

clean:
	rm -rf $(VENV) examples/node/node_modules .pytest_cache .mypy_cache .ruff_cache
