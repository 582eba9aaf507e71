"""Operating on whole databases: bring one to the newest schema and indexes, copy one into another.

What `tideline db upgrade` and `tideline db copy` do. On PostgreSQL an upgrade also sets up
pgvector (installed after the first migration, say; a database without it is refused, after
migrating, with what to install) and indexes every row for keyword search in batches, each
committed, so an interrupted upgrade resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url

from tideline_core.errors import InvalidInput
from tideline_core.store import agent_indexes, keywords, pg_vectors, transfer
from tideline_core.store.database import Database
from tideline_core.store.transfer import Progress, TableCheck

KEYWORD_BATCH = 2000  # rows indexed per committed transaction


@dataclass(frozen=True)
class UpgradeReport:
    dialect: str
    keyword_rows: int  # rows indexed for keyword search now
    agent_indexes: int = 0  # agents' own indexes built now (views grown to `agent_indexes.OWN_ROWS` rows)


@dataclass(frozen=True)
class CopyReport:
    copied: dict[str, int]  # rows copied by this run, per table
    checks: list[TableCheck]
    keyword_rows: int

    @property
    def verified(self) -> bool:
        return all(check.matches for check in self.checks)


def upgrade(url: str, progress: Callable[[int], None] | None = None) -> UpgradeReport:
    """Migrate the database at `url`; on PostgreSQL also pgvector (where installed) and the keyword index."""
    db = Database.open(url)
    try:
        return _finish(db, progress)
    finally:
        db.close()


def _finish(db: Database, progress: Callable[[int], None] | None) -> UpgradeReport:
    if db.dialect != "postgresql":
        return UpgradeReport(db.dialect, 0)
    _set_up_vectors(db)  # migrated all the same: once pgvector is there, the next upgrade adds it
    indexed = 0
    while True:
        with db.write() as conn:
            done = keywords.catch_up(conn, most=KEYWORD_BATCH)
        if not done:
            # Without blocking writes: an upgrade may run beside a serving system.
            return UpgradeReport(db.dialect, indexed, len(agent_indexes.build(db.engine)))
        indexed += done
        if progress is not None:
            progress(indexed)


def _set_up_vectors(db: Database) -> None:
    """pgvector's column where the server has pgvector; ConfigurationError, saying what to install, where it has
    not (PostgreSQL only)."""
    with db.write() as conn:
        pg_vectors.ensure(conn, build_indexes=False)
    with db.read() as conn:
        pg_vectors.require(conn)


def copy(
    source_url: str,
    target_url: str,
    *,
    batch: int = 2000,
    progress: Progress | None = None,
    indexed: Callable[[int], None] | None = None,
) -> CopyReport:
    """Copy every table of the store at `source_url` into the one at `target_url` (migrated first), resuming a copy
    that was interrupted; then build the target's keyword index and verify counts and checksums table by table."""
    if make_url(source_url).get_backend_name() == make_url(target_url).get_backend_name() == "sqlite" and (
        make_url(source_url).database == make_url(target_url).database
    ):
        raise InvalidInput("--to", "must be another database than --from")
    if not 1 <= batch <= 100_000:
        raise InvalidInput("--batch", f"must be between 1 and 100000 rows, got {batch}")
    origin = make_url(source_url)
    if origin.get_backend_name() == "sqlite" and not (origin.database and Path(origin.database).expanduser().is_file()):
        raise InvalidInput("--from", f"no SQLite file at {origin.database!r}")
    # Both at the newest schema (what any process started on the source would do first).
    source = Database.open(source_url)
    try:
        target = Database.open(target_url)
        try:
            if target.dialect == "postgresql":  # refused before a row is copied, not after all of them
                _set_up_vectors(target)  # the agents' own indexes are built once the rows are in
            copied = transfer.copy_all(source.engine, target, batch=batch, progress=progress)
            keyword_rows = _finish(target, indexed).keyword_rows
            checks = transfer.verify(source.engine, target.engine)
            return CopyReport(copied, checks, keyword_rows)
        finally:
            target.close()
    finally:
        source.close()
