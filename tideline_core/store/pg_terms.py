"""PostgreSQL's keyword index kept: each row's terms as `tsvector` columns, their BM25 statistics in `fts_terms`.

Each row's terms are exactly `text.terms.analyze`'s (jieba for Chinese, so 1–2 character words
are terms of their own; light stemming for English), written as a tsvector literal rather than
through a text search configuration, so PostgreSQL never re-parses them: a lexeme is the term
with the positions it holds (its term frequency). Views, as the in-memory index keeps them:
`fts_kw` (narratives and turns: the row's search text) and `fts_ctx` (turns: the previous turn of
the session followed by this one). `fts_terms` keeps each term's document frequency and each
view's row count and length per (agent, kind, view), updated in the transaction that indexes the
rows (the totals under the term ''; a turn's speaker under view 'speaker', for the speaker signal).
Searching them is `search.pg_keywords`'.

Rows are indexed by `catch_up`, never in the write itself, which stays a plain insert: indexing
there made a write several times slower, and every writer of an agent would queue on its
`fts_terms` totals. A search that finds rows waiting (`has_unindexed`, a read of a small partial
index) indexes up to a bound of them first, so a write is found by the next query, as with the
in-memory index; the agent's embed task, queued by every write, indexes whatever is left in
committed batches (a large import, a dream stage's rows). Rows being indexed are locked (SKIP
LOCKED), so two processes never count a row twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, Row, text

from tideline_core.domain.memory_text import NarrativeFields, narrative_search_text, turn_text
from tideline_core.text.terms import analyze

TOTAL = ""  # the term under which a view's row count and token total are kept (analyze yields no empty term)
MAX_POSITION = 16_383  # PostgreSQL's bounds: a lexeme's position, its positions, its length in bytes
MAX_POSITIONS = 256
MAX_LEXEME_BYTES = 2046
BASE = {"narrative": ("narratives", "occurred_at"), "context": ("context_turns", "created_at")}


def quote(term: str) -> str:
    """A term as a tsvector/tsquery lexeme literal (quoted, so any character is only text)."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector(tokens: Sequence[str]) -> str:
    """The tsvector literal of a token sequence: each term once, with the positions it holds."""
    positions: dict[str, list[int]] = {}
    for at, token in enumerate(tokens, start=1):
        if len(token.encode("utf-8")) <= MAX_LEXEME_BYTES:
            held = positions.setdefault(token, [])
            if len(held) < MAX_POSITIONS and (not held or held[-1] < MAX_POSITION):
                held.append(min(at, MAX_POSITION))
    return " ".join(f"{quote(term)}:{','.join(map(str, held))}" for term, held in positions.items())


def _terms_delta(agent_id: str, kind: str, view: str, docs: Iterable[Sequence[str]], sign: int) -> Counter[tuple]:
    delta: Counter[tuple] = Counter()
    for tokens in docs:
        delta[(agent_id, kind, view, TOTAL, "rows")] += sign
        delta[(agent_id, kind, view, TOTAL, "tokens")] += sign * len(tokens)
        for term in set(tokens):
            delta[(agent_id, kind, view, term, "rows")] += sign
    return delta


def _apply(conn: Connection, delta: Counter[tuple]) -> None:
    """Add `delta` to `fts_terms`, rows in key order (two writers lock shared terms in the same order: no deadlock)."""
    merged: dict[tuple[str, str, str, str], list[int]] = {}
    for (agent, kind, view, term, what), value in delta.items():
        merged.setdefault((agent, kind, view, term), [0, 0])[0 if what == "rows" else 1] += value
    params = [
        {"agent": a, "kind": k, "view": v, "term": t, "rows": r, "tokens": n}
        for (a, k, v, t), (r, n) in sorted(merged.items())
        if r or n
    ]
    if params:
        conn.execute(
            text(
                "INSERT INTO fts_terms (agent_id, kind, view, term, rows, tokens) "
                "VALUES (:agent, :kind, :view, :term, :rows, :tokens) "
                "ON CONFLICT (agent_id, kind, view, term) DO UPDATE SET "
                "rows = fts_terms.rows + excluded.rows, tokens = fts_terms.tokens + excluded.tokens"
            ),
            params,
        )


def index_new(conn: Connection, kind: str, rows: Sequence[tuple[int, str, str]]) -> None:
    """Index new rows given as (id, agent_id, search text): their tsvectors and the BM25 statistics."""
    if not rows:
        return
    table = BASE[kind][0]
    docs = {row_id: analyze(body) for row_id, _agent, body in rows}
    conn.execute(
        text(f"UPDATE {table} SET fts_kw = CAST(:doc AS tsvector), fts_kw_len = :n WHERE id = :id"),
        [{"id": i, "doc": tsvector(tokens), "n": len(tokens)} for i, tokens in docs.items()],
    )
    delta: Counter[tuple] = Counter()
    for row_id, agent_id, _body in rows:
        delta += _terms_delta(agent_id, kind, "kw", [docs[row_id]], 1)
    if kind == "context":
        delta += _index_windows(conn, docs)
    _apply(conn, delta)


def forget_narratives(conn: Connection, ids: Sequence[int]) -> None:
    """Take indexed narratives out of the BM25 statistics, before they are deleted (a dream's undo)."""
    if not ids:
        return
    found = conn.execute(
        text(
            "SELECT agent_id, tsvector_to_array(fts_kw) AS terms, fts_kw_len AS n FROM narratives "
            "WHERE id = ANY(:ids) AND fts_kw IS NOT NULL"
        ),
        {"ids": list(ids)},
    )
    delta: Counter[tuple] = Counter()
    for r in found:
        delta[(r.agent_id, "narrative", "kw", TOTAL, "rows")] -= 1
        delta[(r.agent_id, "narrative", "kw", TOTAL, "tokens")] -= int(r.n or 0)
        for term in r.terms or ():
            delta[(r.agent_id, "narrative", "kw", term, "rows")] -= 1
    _apply(conn, delta)


def index_again(conn: Connection, ids: Sequence[int]) -> None:
    """Narratives whose search text grew (an amendment): out of the BM25 statistics now, indexed again with the
    whole text by the next catch-up (the next search, or the embed task the change queues).

    Call in the write that changed them, after locking their rows (`store.narratives.amend` does), so
    a catch-up indexing them at the same moment is waited for and not counted twice.
    """
    if not ids:
        return
    forget_narratives(conn, ids)
    conn.execute(
        text("UPDATE narratives SET fts_kw = NULL, fts_kw_len = NULL WHERE id = ANY(:ids)"), {"ids": list(ids)}
    )


def _index_windows(conn: Connection, docs: dict[int, list[str]]) -> Counter[tuple]:
    """`fts_ctx` of the new turns (`docs`: their tokens), and of the turn after each when it came before them."""
    turns = conn.execute(
        text(
            "SELECT id, agent_id, session_id, speaker, created_at FROM context_turns WHERE id = ANY(:ids) "
            "ORDER BY created_at, id"
        ),
        {"ids": list(docs)},
    ).all()
    known = dict(docs)
    delta: Counter[tuple] = Counter()
    updates = []
    for t in turns:
        delta[(t.agent_id, "context", "speaker", t.speaker, "rows")] += 1
        before = _beside(conn, t, before=True)
        prev = _tokens_of(conn, before.id, known) if before is not None else []
        window = prev + docs[t.id]
        updates.append({"id": t.id, "doc": tsvector(window), "n": len(window)})
        delta += _terms_delta(t.agent_id, "context", "kw_ctx", [window], 1)
        after = _beside(conn, t, before=False)
        if after is not None and after.id not in docs and after.fts_ctx_len is not None:
            # A turn that arrived late sits before one already indexed: that one's window now starts with it.
            old = conn.execute(
                text("SELECT tsvector_to_array(fts_ctx) AS terms FROM context_turns WHERE id = :id"), {"id": after.id}
            ).scalar_one()
            delta += _terms_delta(t.agent_id, "context", "kw_ctx", [old], -1)
            delta[(t.agent_id, "context", "kw_ctx", TOTAL, "tokens")] += len(old) - after.fts_ctx_len
            mate = docs[t.id] + _tokens_of(conn, after.id, known)
            updates.append({"id": after.id, "doc": tsvector(mate), "n": len(mate)})
            delta += _terms_delta(t.agent_id, "context", "kw_ctx", [mate], 1)
    conn.execute(
        text("UPDATE context_turns SET fts_ctx = CAST(:doc AS tsvector), fts_ctx_len = :n WHERE id = :id"), updates
    )
    return delta


def _beside(conn: Connection, turn: Row[Any], *, before: bool) -> Row[Any] | None:
    op, order = ("<", "DESC") if before else (">", "ASC")
    return conn.execute(
        text(
            "SELECT id, fts_ctx_len FROM context_turns WHERE agent_id = :agent AND session_id = :session "
            f"AND (created_at, id) {op} (:at, :id) ORDER BY created_at {order}, id {order} LIMIT 1"
        ),
        {"agent": turn.agent_id, "session": turn.session_id, "at": turn.created_at, "id": turn.id},
    ).first()


def _tokens_of(conn: Connection, turn_id: int, known: dict[int, list[str]]) -> list[str]:
    if turn_id not in known:
        row = conn.execute(text("SELECT speaker, content FROM context_turns WHERE id = :id"), {"id": turn_id}).one()
        known[turn_id] = analyze(turn_text(row.speaker, row.content))
    return known[turn_id]


def catch_up(conn: Connection, agent_id: str | None = None, batch: int = 500, *, most: int | None = None) -> int:
    """Index every row (of `agent_id`, or of all agents; at most about `most`) without its tsvector yet; returns how
    many it indexed.

    Call in a write transaction: the rows are locked as they are read (SKIP LOCKED: what another
    process is indexing right now is left to it).
    """
    done = 0
    for kind in ("narrative", "context"):
        while (most is None or done < most) and (
            rows := _unindexed(conn, kind, agent_id, batch if most is None else min(batch, most - done))
        ):
            index_new(conn, kind, rows)
            done += len(rows)
    return done


def has_unindexed(conn: Connection, agent_id: str) -> bool:
    """Whether any of the agent's rows waits to be indexed (a read of the small pending indexes)."""
    return bool(
        conn.execute(
            text(
                "SELECT EXISTS (SELECT 1 FROM narratives WHERE agent_id = :agent AND fts_kw IS NULL) "
                "OR EXISTS (SELECT 1 FROM context_turns WHERE agent_id = :agent AND fts_kw IS NULL)"
            ),
            {"agent": agent_id},
        ).scalar()
    )


def _unindexed(conn: Connection, kind: str, agent_id: str | None, batch: int) -> list[tuple[int, str, str]]:
    owner = " AND agent_id = :agent" if agent_id is not None else ""
    params = {"agent": agent_id, "batch": batch}
    if kind == "context":
        found = conn.execute(
            text(
                f"SELECT id, agent_id, speaker, content FROM context_turns WHERE fts_kw IS NULL{owner} "
                "ORDER BY id LIMIT :batch FOR UPDATE SKIP LOCKED"
            ),
            params,
        ).all()
        return [(r.id, r.agent_id, turn_text(r.speaker, r.content)) for r in found]
    found = conn.execute(
        text(
            "SELECT id, agent_id, gesture, context, moment, cognition_direction, entities_role FROM narratives "
            f"WHERE fts_kw IS NULL{owner} ORDER BY id LIMIT :batch FOR UPDATE SKIP LOCKED"
        ),
        params,
    ).all()
    tags: dict[int, list[str]] = {}
    notes: dict[int, list[str]] = {}
    if found:
        ids = {"ids": [r.id for r in found]}
        for r in conn.execute(text("SELECT narrative_id, tag FROM narrative_tags WHERE narrative_id = ANY(:ids)"), ids):
            tags.setdefault(int(r.narrative_id), []).append(r.tag)
        for r in conn.execute(
            text("SELECT narrative_id, note FROM amendments WHERE narrative_id = ANY(:ids) ORDER BY id"), ids
        ):
            notes.setdefault(int(r.narrative_id), []).append(r.note)
    return [
        (
            r.id,
            r.agent_id,
            narrative_search_text(
                NarrativeFields(
                    r.gesture, r.context, r.moment, r.cognition_direction, r.entities_role, tuple(tags.get(r.id, ()))
                ),
                notes.get(r.id, ()),
            ),
        )
        for r in found
    ]
