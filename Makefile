# Two commands on a fresh machine:  `make run`  and  `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install run test lint typecheck bench matrix-venv

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# caldav's HTTP client (niquests) brings urllib3-future, whose wheel takes over every
	# `import urllib3` in the environment and breaks requests; its documented cohabitation
	# mode (built from source with URLLIB3_NO_OVERRIDE) leaves urllib3 to requests
	# the multilingual extra too, so that its tests run (it needs numpy alone)
	URLLIB3_NO_OVERRIDE=1 $(BIN)/pip install -q --no-binary=urllib3-future -e '.[dev,multilingual]'
	touch $@

# Synapse, the Matrix homeserver the Matrix channel's tests start, in a venv of its own (its
# pins would fight ours); PyPI only
MATRIX_VENV ?= .venv-matrix
matrix-venv: $(MATRIX_VENV)/.installed

$(MATRIX_VENV)/.installed:
	$(PYTHON) -m venv $(MATRIX_VENV)
	$(MATRIX_VENV)/bin/pip install -q --upgrade pip
	$(MATRIX_VENV)/bin/pip install -q 'matrix-synapse>=1.100'
	touch $@

run: install
	$(BIN)/steward up

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: install
	$(BIN)/mypy

test: lint typecheck matrix-venv
	$(BIN)/pytest

bench: install
	$(BIN)/python bench/run.py
