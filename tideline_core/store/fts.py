"""The SQLite FTS5 keyword tables: indexing rows as they are inserted, and the fallback keyword lookup.

The one module with FTS5 SQL. Text (`memory_text`'s search views) is indexed as jieba-segmented
tokens so 2-character Chinese words match; every query term is quoted, so FTS syntax in user input
is only text. Search answers from the in-memory BM25 index first; this lookup serves what BM25
cannot (a single CJK character, part of an identifier), and on PostgreSQL it is an escaped LIKE
over the base tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, text

from tideline_core.memory_text import NARRATIVE_SEARCH_COLUMNS
from tideline_core.timeutil import as_utc
from tideline_core.tokens import escape_like, fts_any, index_text

TABLES = {"narrative": "narratives_fts", "context": "context_fts"}
# The base tables and the SQL form of each kind's search text, for the LIKE fallback.
BASE = {
    "narrative": ("narratives", " || ' ' || ".join(NARRATIVE_SEARCH_COLUMNS)),
    "context": ("context_turns", "speaker || ' ' || content"),
}
TIME = {"narrative": "occurred_at", "context": "created_at"}


def index_new(conn: Connection, kind: str, rows: Sequence[tuple[int, str, str]]) -> None:
    """Index new rows given as (id, agent_id, search text): segmented, so short Chinese words match.

    Rows are never edited (an amendment is a separate note), so a row is indexed once, at insert.
    """
    if conn.dialect.name != "sqlite" or not rows:
        return
    conn.execute(
        text(f"INSERT INTO {TABLES[kind]}(rowid, agent_id, body) VALUES (:id, :agent, :body)"),
        [{"id": row_id, "agent": agent_id, "body": index_text(body)} for row_id, agent_id, body in rows],
    )


def bind_time(value: datetime) -> str:
    """A UTC instant in the text form SQLAlchemy stores on SQLite, so raw SQL compares like with like."""
    return as_utc(value).strftime("%Y-%m-%d %H:%M:%S.%f")


def _time_clause(
    kind: str, since: datetime | None, until: datetime | None, alias: str
) -> tuple[str, dict[str, object]]:
    clauses: list[str] = []
    params: dict[str, object] = {}
    if since is not None:
        clauses.append(f"{alias}.{TIME[kind]} >= :since")
        params["since"] = bind_time(since)
    if until is not None:
        clauses.append(f"{alias}.{TIME[kind]} <= :until")
        params["until"] = bind_time(until)
    return "".join(f" AND {c}" for c in clauses), params


def search(
    conn: Connection,
    kind: str,
    agent_id: str,
    terms: Sequence[str],
    limit: int,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[tuple[int, float]]:
    """Rows of `agent_id` matching any term, best first, as (id, score) with higher = better."""
    if not terms:
        return []
    if conn.dialect.name == "sqlite":
        table, _ = BASE[kind]
        time_sql, params = _time_clause(kind, since, until, "b")
        sql = (
            f"SELECT f.rowid AS id, bm25({TABLES[kind]}) AS rank FROM {TABLES[kind]} f "
            f"JOIN {table} b ON b.id = f.rowid "
            f"WHERE {TABLES[kind]} MATCH :match AND f.agent_id = :agent{time_sql} "
            "ORDER BY rank LIMIT :limit"
        )
        rows = conn.execute(text(sql), {"match": fts_any(terms), "agent": agent_id, "limit": limit, **params}).all()
        hits = [(int(r.id), -float(r.rank)) for r in rows]
        if hits:
            return hits
    # Substrings the segmenter does not produce as words (one Chinese character, part of an
    # identifier) still deserve an answer: fall back to a literal, escaped LIKE on the base table.
    return _substring_search(conn, kind, agent_id, terms, limit, since, until)


def _substring_search(
    conn: Connection,
    kind: str,
    agent_id: str,
    terms: Sequence[str],
    limit: int,
    since: datetime | None,
    until: datetime | None,
) -> list[tuple[int, float]]:
    table, body = BASE[kind]
    time_sql, params = _time_clause(kind, since, until, "b")
    likes = []
    for i, term in enumerate(terms[:8]):
        params[f"t{i}"] = f"%{escape_like(term.lower())}%"
        likes.append(f"(CASE WHEN lower({body}) LIKE :t{i} ESCAPE '\\' THEN 1 ELSE 0 END)")
    score = " + ".join(likes)
    sql = (
        f"SELECT id, score FROM (SELECT b.id AS id, ({score}) AS score FROM {table} b "
        f"WHERE b.agent_id = :agent{time_sql}) s WHERE score > 0 ORDER BY score DESC, id DESC LIMIT :limit"
    )
    rows = conn.execute(text(sql), {"agent": agent_id, "limit": limit, **params}).all()
    return [(int(r.id), float(r.score)) for r in rows]
