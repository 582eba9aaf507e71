"""The Database handle: an engine plus short read and write transactions."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine

from tideline_core.db import create_db_engine, migrate


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
