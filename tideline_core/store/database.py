"""The Database handle: engine creation (SQLite pragmas for WAL and short writes), migrations, transactions."""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

MIGRATIONS = Path(__file__).parent / "migrations"
BUSY_TIMEOUT_MS = 10_000
# A script's `revision = "0006"` and `down_revision = "0005"` (or None) lines, as alembic writes them.
_REVISION = re.compile(r"""^revision(?:\s*:[^=\n]*)?\s*=\s*["']([^"']+)["']""", re.M)
_DOWN_REVISION = re.compile(r"""^down_revision(?:\s*:[^=\n]*)?\s*=\s*(?:["']([^"']+)["']|None)""", re.M)
_LAST = "last in transaction"  # conn.info key: what a write transaction runs just before it commits
Last = TypeVar("Last", bound=Callable[[Connection], None])


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


POOL_SIZE = 16  # PostgreSQL connections kept open per process: two searches at once, side by side
POOL_OVERFLOW = 16  # more at a peak, closed as they come back


def create_db_engine(url: str) -> Engine:
    """An Engine for `url`; SQLite files get WAL, a busy timeout and immediate write transactions; PostgreSQL
    plans every statement for its own parameters."""
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
    # No server-side prepared statements: after five runs of one statement psycopg would prepare it,
    # and PostgreSQL may then plan it once for any parameters; a keyword lookup's best plan depends on
    # its tsquery (a few rows: the GIN index; thousands: another plan), and a generic plan of it took
    # ~100 ms where each query's own took ~10. Also what a transaction-mode connection pooler needs.
    args = {"prepare_threshold": None} if parsed.get_driver_name() == "psycopg" else {}
    # A search holds up to seven connections at once (its index lookups run side by side, `search.pg_source`):
    # connections past the pool's size are closed on return, and opening one costs a server process.
    return create_engine(url, pool_pre_ping=True, pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW, connect_args=args)


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (idempotent; safe to call at every start-up).

    A store already there is told by one read, without alembic (importing it and reading its scripts
    cost about 0.1 s, which a hook's process started for one prompt would pay every time) and without
    the write lock an upgrade takes first.
    """
    try:
        if _at_newest(engine):
            return
    except OperationalError:
        # Another process is creating or migrating this store right now (a fresh SQLite file that is
        # switching to WAL, a schema change holding its lock): the upgrade below waits for it.
        pass
    from alembic import command
    from alembic.config import Config

    # Alembic narrates every step at INFO; on a stdio server or a CLI that is noise, not news.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    command.upgrade(config, "head")


def _at_newest(engine: Engine) -> bool:
    newest = newest_revision()
    if newest is None:
        return False
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return False
        return list(conn.execute(text("SELECT version_num FROM alembic_version")).scalars()) == [newest]


@functools.cache
def newest_revision() -> str | None:
    """The head of the migration scripts, read from their revision lines; None unless they form one line."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in (MIGRATIONS / "versions").glob("*.py"):
        source = script.read_text(encoding="utf-8")
        revision, parent = _REVISION.search(source), _DOWN_REVISION.search(source)
        if revision is None or parent is None:
            return None  # a form not read here (a merge, say): alembic decides
        revisions.add(revision[1])
        if parent[1]:
            parents.add(parent[1])
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def create_database(server_url: str, name: str, *, template: str | None = None) -> str:
    """Create the database `name` on the PostgreSQL server of `server_url` (any database there), empty or a copy of
    the database `template` there (nobody may be connected to it); its URL."""
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    copy = f' TEMPLATE "{template}"' if template else ""
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"{copy}'))
    finally:
        admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_database(server_url: str, url: str) -> None:
    """Drop the database of `url` from the PostgreSQL server of `server_url`, closing its connections."""
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)'))
    finally:
        admin.dispose()


def last_in_transaction(conn: Connection, name: str, action: Last) -> Last | None:
    """Have `action` run once, just before this write transaction commits; the action kept under `name` (this
    one, or the one an earlier statement of the transaction gave).

    For what every writer shares (a counter row): taken last, its lock is held only for the commit.
    None, and nothing kept, on a connection that is not in `Database.write` or `trial`: the caller
    does it now.
    """
    last = conn.info.get(_LAST)
    if last is None:
        return None
    return cast(Last, last.setdefault(name, action))


class Database:
    """Owns one Engine. `write()` takes the SQLite write lock up front; keep no network I/O inside it."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._held = threading.local()  # the read `one_read` holds on each thread

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
        """A write transaction; what its statements ask to run last (`last_in_transaction`) runs before it commits."""
        with self.engine.connect() as conn:
            conn.info["write"] = True
            conn.info[_LAST] = {}
            try:
                with conn.begin():
                    yield conn
                    while conn.info[_LAST]:
                        conn.info[_LAST].pop(next(iter(conn.info[_LAST])))(conn)
            finally:
                conn.info.pop("write", None)
                conn.info.pop(_LAST, None)

    @contextmanager
    def trial(self) -> Iterator[Connection]:
        """A write transaction that is always rolled back: what a change would do, seen and then undone."""
        with self.engine.connect() as conn:
            conn.info["write"] = True
            conn.info[_LAST] = {}
            transaction = conn.begin()
            try:
                yield conn
            finally:
                transaction.rollback()
                conn.info.pop("write", None)
                conn.info.pop(_LAST, None)

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction; inside `one_read` on this thread, that one."""
        held: Connection | None = getattr(self._held, "conn", None)
        if held is not None:
            yield held
            return
        with self.engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def lookup(self) -> Iterator[Connection]:
        """A connection for one read statement: on PostgreSQL outside any transaction (no BEGIN and COMMIT round
        trips: the statement is its own); elsewhere, and inside `one_read` on this thread, `read`."""
        if self.dialect != "postgresql" or getattr(self._held, "conn", None) is not None:
            with self.read() as conn:
                yield conn
            return
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            yield conn

    @contextmanager
    def one_read(self) -> Iterator[None]:
        """Every `read` on this thread until this ends is one connection and one transaction.

        For a PostgreSQL search's several reads (read committed: each statement still sees what was
        committed when it began, as with a transaction each): one pool checkout, its ping, BEGIN and
        COMMIT, instead of one each. Not for SQLite, whose read transaction sees no later write.
        """
        if getattr(self._held, "conn", None) is not None:
            yield
            return
        with self.read() as conn:
            self._held.conn = conn
            try:
                yield
            finally:
                self._held.conn = None

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
