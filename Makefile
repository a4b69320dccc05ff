# The obvious targets. Each builds the environment first (scripts/setup) when needed.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint format bench clean

$(STAMP): pyproject.toml constraints.txt examples/node/package.json
	bash scripts/setup $(VENV)

setup: $(STAMP)

demo: $(STAMP)          ## record, show, verify, replay offline and fork the example agent
	$(PY) examples/demo.py

test: $(STAMP)          ## the whole suite (unit + end to end through a real proxy)
	$(PY) -m pytest -q

lint: $(STAMP)          ## ruff (lint + format check) and mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: $(STAMP)         ## measure and write docs/benchmarks.md (installs the profilers first)
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test,bench]'
	$(PY) benchmarks/run.py --write docs/benchmarks.md

clean:
	rm -rf $(VENV) examples/node/node_modules .pytest_cache .mypy_cache .ruff_cache
