"""The keyword index kept with the rows, one port for both backends: SQLite's FTS5 tables, PostgreSQL's tsvectors.

Every write, amendment and deletion of the keyword index goes through here, in the transaction
that changes the rows, on both backends: SQLite's FTS5 rows (`fts`), PostgreSQL's tsvectors and
BM25 statistics (`pg_terms`). `catch_up` indexes PostgreSQL rows stored before the index was kept
at write time.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, text

from tideline_core.store import fts, pg_terms

# A row to index: (id, agent_id, its search text as `memory_text` gives it).
IndexRow = tuple[int, str, str]


def index_new(conn: Connection, kind: str, rows: Sequence[IndexRow]) -> None:
    """Rows just inserted, given as (id, agent_id, search text)."""
    if conn.dialect.name == "sqlite":
        fts.index_new(conn, kind, rows)
    else:
        pg_terms.index_new(conn, kind, rows)


def index_again(conn: Connection, rows: Sequence[IndexRow]) -> None:
    """Narratives whose search text grew (an amendment), given with their whole text now.

    Call in the write that changed them, after locking their rows (`store.narratives.amend` does), so
    a catch-up indexing them at the same moment is waited for and not counted twice.
    """
    if conn.dialect.name == "sqlite":
        fts.reindex(conn, "narrative", rows)
    else:
        pg_terms.index_again(conn, rows)


def forget_narratives(conn: Connection, ids: Sequence[int]) -> None:
    """Narratives about to be deleted (a dream's undo): out of the index and its statistics."""
    if not ids:
        return
    if conn.dialect.name == "sqlite":
        conn.execute(text(f"DELETE FROM {fts.TABLES['narrative']} WHERE rowid = :id"), [{"id": i} for i in ids])
    else:
        pg_terms.forget_narratives(conn, ids)


def catch_up(conn: Connection, agent_id: str | None = None, *, most: int | None = None) -> int:
    """Index the rows (of `agent_id`, or of all agents; at most about `most`) stored unindexed; how many it indexed.

    Only PostgreSQL's rows stored before the index was kept at write time wait: on SQLite this indexes nothing.
    """
    if conn.dialect.name != "postgresql":
        return 0
    return pg_terms.catch_up(conn, agent_id, most=most)


def has_unindexed(conn: Connection, agent_id: str) -> bool:
    """Whether any of the agent's rows waits for `catch_up` (never on SQLite)."""
    return conn.dialect.name == "postgresql" and pg_terms.has_unindexed(conn, agent_id)
