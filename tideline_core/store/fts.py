"""The SQLite FTS5 keyword tables: indexing rows as they are inserted, and the fallback keyword lookup.

The one module with FTS5 SQL. Text (`memory_text`'s search views) is indexed as jieba-segmented
tokens so 2-character Chinese words match; every query term is quoted, so FTS syntax in user input
is only text. Search answers from the in-memory BM25 index first; this lookup serves what BM25
cannot (a single CJK character, a run of an identifier's parts), and on PostgreSQL it is an escaped
LIKE over the base tables. Both keep to words (`tokens.holds_word`): a Latin-script term is never
found as the start or the middle of a longer word. `ranked` is the whole keyword lookup of a process without that index
(`search.cold`): FTS5's own ranking, the LIKE lookup after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, text

from tideline_core.domain.memory_text import NARRATIVE_SEARCH_COLUMNS
from tideline_core.text.dates import as_utc
from tideline_core.text.tokens import PREFIX, escape_like, fts_any, fts_term, holds_word, index_text, is_prefix

TABLES = {"narrative": "narratives_fts", "context": "context_fts"}
# The base tables and the SQL form of each kind's search text, for the LIKE fallback.
BASE = {
    "narrative": ("narratives", " || ' ' || ".join(NARRATIVE_SEARCH_COLUMNS)),
    "context": ("context_turns", "speaker || ' ' || content"),
}
# How many LIKE candidates per wanted row the word check reads: a term found inside longer words (a
# short one) must still leave room for the rows holding it as a word.
SUBSTRING_CANDIDATES = 20
TIME = {"narrative": "occurred_at", "context": "created_at"}
# A memory's amendments are part of its text (`memory_text`): the LIKE lookup reads them beside its columns.
_NOTES = {
    "sqlite": "coalesce((SELECT group_concat(a.note, ' ') FROM amendments a WHERE a.narrative_id = b.id), '')",
    "postgresql": "coalesce((SELECT string_agg(a.note, ' ') FROM amendments a WHERE a.narrative_id = b.id), '')",
}


@dataclass(frozen=True)
class _Lookup:
    """Whose rows of which kind a lookup reads, how many at most, and within which times."""

    kind: str
    agent_id: str
    limit: int
    since: datetime | None
    until: datetime | None


def index_new(conn: Connection, kind: str, rows: Sequence[tuple[int, str, str]]) -> None:
    """Index new rows given as (id, agent_id, search text): segmented, so short Chinese words match.

    A row's own text is never edited; an amendment adds to it (`reindex`).
    """
    if conn.dialect.name != "sqlite" or not rows:
        return
    conn.execute(
        text(f"INSERT INTO {TABLES[kind]}(rowid, agent_id, body) VALUES (:id, :agent, :body)"),
        [{"id": row_id, "agent": agent_id, "body": index_text(body)} for row_id, agent_id, body in rows],
    )


def reindex(conn: Connection, kind: str, rows: Sequence[tuple[int, str, str]]) -> None:
    """Index rows again with their whole search text now (a memory amended): same form as `index_new`."""
    if conn.dialect.name != "sqlite" or not rows:
        return
    conn.execute(text(f"DELETE FROM {TABLES[kind]} WHERE rowid = :id"), [{"id": row_id} for row_id, _a, _b in rows])
    index_new(conn, kind, rows)


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
    # What the segmenter does not produce as a token (one Chinese character, a run of an identifier's
    # parts) still deserves an answer: fall back to a literal, escaped LIKE on the base table, kept to words.
    return _substring_search(conn, _Lookup(kind, agent_id, limit, since, until), terms)


def _substring_search(conn: Connection, q: _Lookup, terms: Sequence[str]) -> list[tuple[int, float]]:
    """Rows holding the terms as words (`tokens.holds_word`), most terms first, then newest.

    LIKE finds the rows holding a term anywhere; of those (up to `SUBSTRING_CANDIDATES` times the
    limit, most terms first) only the rows holding it as a word count, so "go" does not find "goggles".
    """
    kind, agent_id, limit, since, until = q.kind, q.agent_id, q.limit, q.since, q.until
    table, body = BASE[kind]
    if kind == "narrative":
        body = f"{body} || ' ' || {_NOTES.get(conn.dialect.name, _NOTES['sqlite'])}"
    time_sql, params = _time_clause(kind, since, until, "b")
    kept = list(terms[:8])
    likes = []
    for i, term in enumerate(kept):
        literal = term[: -len(PREFIX)] if is_prefix(term) else term
        params[f"t{i}"] = f"%{escape_like(literal.lower())}%"
        likes.append(f"(CASE WHEN lower({body}) LIKE :t{i} ESCAPE '\\' THEN 1 ELSE 0 END)")
    score = " + ".join(likes)
    sql = (
        f"SELECT id, body FROM (SELECT b.id AS id, {body} AS body, ({score}) AS score FROM {table} b "
        f"WHERE b.agent_id = :agent{time_sql}) s WHERE score > 0 ORDER BY score DESC, id DESC LIMIT :candidates"
    )
    rows = conn.execute(text(sql), {"agent": agent_id, "candidates": limit * SUBSTRING_CANDIDATES, **params}).all()
    scored = [(int(r.id), float(sum(holds_word(r.body or "", term.lower()) for term in kept))) for r in rows]
    return sorted(((i, s) for i, s in scored if s > 0), key=lambda hit: (-hit[1], -hit[0]))[:limit]


def ranked(
    conn: Connection,
    kind: str,
    agent_id: str,
    terms: Sequence[str],
    limit: int,
    since: datetime | None = None,
    until: datetime | None = None,
    *,
    wanted: int,
) -> list[tuple[int, float]]:
    """Like `search`, for a caller without the in-memory index (a hook's process): FTS5's own ranking, made cheap.

    FTS5's bm25() gives a term found in at least half the indexed rows no weight (its idf, zero or
    less, is clamped to 1e-6), yet scores every row such a term matches: at 100,000 memories a query
    with a common word (a frequent name, 觉得) scores nearly all of them. So the other terms are
    matched first; only when they find fewer than `wanted` rows of the agent's are the common ones
    matched too (their rows rank after the others, as they would have). Then, as in `search`, the
    LIKE lookup when nothing matched; on PostgreSQL, the LIKE lookup alone.
    """
    if not terms:
        return []
    q = _Lookup(kind, agent_id, limit, since, until)
    if conn.dialect.name != "sqlite":
        return _substring_search(conn, q, terms)
    weighing = _weighing_terms(conn, kind, terms)
    hits = []
    if weighing and len(weighing) < len(terms):
        hits = _fts_ranked(conn, q, weighing)
    if len(hits) < wanted:
        hits = _fts_ranked(conn, q, terms)
    return hits or _substring_search(conn, q, terms)


def _weighing_terms(conn: Connection, kind: str, terms: Sequence[str]) -> list[str]:
    """The terms found in fewer than half the rows of the kind's FTS5 table (of every agent, as bm25() counts)."""
    table = TABLES[kind]
    # The docsize shadow table holds one row per indexed row: counting it reads no text.
    total = conn.execute(text(f"SELECT count(*) FROM {table}_docsize")).scalar_one()
    rows = text(f"SELECT count(*) FROM {table} WHERE {table} MATCH :term")
    return [term for term in terms if 2 * conn.execute(rows, {"term": fts_term(term)}).scalar_one() < total]


def _fts_ranked(conn: Connection, q: _Lookup, terms: Sequence[str]) -> list[tuple[int, float]]:
    kind, agent_id, limit, since, until = q.kind, q.agent_id, q.limit, q.since, q.until
    table = TABLES[kind]
    time_sql, params = _time_clause(kind, since, until, "b")
    # `rank` is bm25() sorted inside FTS5, cheaper than ordering by the bm25() function in SQL.
    join = f" JOIN {BASE[kind][0]} b ON b.id = f.rowid" if time_sql else ""
    sql = (
        f"SELECT f.rowid AS id, f.rank AS rank FROM {table} f{join} "
        f"WHERE {table} MATCH :match AND f.agent_id = :agent{time_sql} ORDER BY f.rank LIMIT :limit"
    )
    rows = conn.execute(text(sql), {"match": fts_any(terms), "agent": agent_id, "limit": limit, **params}).all()
    return [(int(r.id), -float(r.rank)) for r in rows]
