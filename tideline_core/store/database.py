"""The Database handle: engine creation (SQLite pragmas for WAL and short writes), migrations, transactions."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

MIGRATIONS = Path(__file__).parent / "migrations"
BUSY_TIMEOUT_MS = 10_000


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # Autocommit at the driver level lets SQLAlchemy issue BEGIN itself (BEGIN IMMEDIATE for
    # writes below), so a writer takes the lock up front instead of failing on upgrade.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_begin(conn: Any) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.info.get("write") else "BEGIN")


def create_db_engine(url: str) -> Engine:
    """An Engine for `url`; SQLite files get WAL, a busy timeout and immediate write transactions."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
            poolclass=NullPool if parsed.database in (None, "", ":memory:") else None,
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    return create_engine(url, pool_pre_ping=True)


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (idempotent; safe to call at every start-up)."""
    # Alembic narrates every step at INFO; on a stdio server or a CLI that is noise, not news.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    command.upgrade(config, "head")


class Database:
    """Owns one Engine. `write()` takes the SQLite write lock up front; keep no network I/O inside it."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(cls, url: str, *, run_migrations: bool = True) -> Database:
        engine = create_db_engine(url)
        if run_migrations:
            migrate(engine)
        return cls(engine)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def write(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            conn.info["write"] = True
            try:
                with conn.begin():
                    yield conn
            finally:
                conn.info.pop("write", None)

    @contextmanager
    def trial(self) -> Iterator[Connection]:
        """A write transaction that is always rolled back: what a change would do, seen and then undone."""
        with self.engine.connect() as conn:
            conn.info["write"] = True
            transaction = conn.begin()
            try:
                yield conn
            finally:
                transaction.rollback()
                conn.info.pop("write", None)

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """A read transaction whose statements all see one committed state.

        SQLite's read transactions already do; PostgreSQL's default (read committed) takes a new
        snapshot per statement, so this asks for repeatable read.
        """
        with self.engine.connect() as conn:
            if self.dialect == "postgresql":
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn

    def close(self) -> None:
        self.engine.dispose()
