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

Rows are indexed in the transaction that writes them, as SQLite's FTS5 rows are, so a write is
found by the next query and a search never indexes. What writers share is taken last: a row's
tsvectors are written with it, but the agent's `fts_terms` counts (its totals above all, which every
writer of the agent changes) are added once, in key order, just before the transaction commits
(`database.last_in_transaction`), so a writer holds them only for its commit and two writers never
wait on each other in a circle. A turn's `fts_ctx` holds the turn before it: turns of one session
are indexed one transaction at a time (an advisory lock on the session, taken in key order), so
two writers of a session each see the other's turn. `catch_up` indexes rows stored unindexed (by a
release that left the index to it, or copied in by `tideline db copy`): `tideline db upgrade`,
the embed task, and a search for the first rows it meets run it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, text

from tideline_core.domain.memory_text import NarrativeFields, narrative_search_text, turn_text
from tideline_core.store.database import last_in_transaction
from tideline_core.text.terms import analyze

TOTAL = ""  # the term under which a view's row count and token total are kept (analyze yields no empty term)
MAX_POSITION = 16_383  # PostgreSQL's bounds: a lexeme's position, its positions, its length in bytes
MAX_POSITIONS = 256
MAX_LEXEME_BYTES = 2046
BASE = {"narrative": ("narratives", "occurred_at"), "context": ("context_turns", "created_at")}
SESSION_LOCKS = 0x7464  # the advisory locks' first key: a session's turns being indexed (the second: its hash)
CATCH_UP_LOCK = 0x7465  # one catch-up at a time (its batches lock sessions across transactions' worth of rows)


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
    # Added to a delta with `Counter.update`, never `+`: `+` drops every count that is not positive.
    delta: Counter[tuple] = Counter()
    for tokens in docs:
        delta[(agent_id, kind, view, TOTAL, "rows")] += sign
        delta[(agent_id, kind, view, TOTAL, "tokens")] += sign * len(tokens)
        for term in set(tokens):
            delta[(agent_id, kind, view, term, "rows")] += sign
    return delta


class _Counts:
    """What one write transaction adds to `fts_terms`, added when it is about to commit."""

    def __init__(self) -> None:
        self.delta: Counter[tuple] = Counter()

    def __call__(self, conn: Connection) -> None:
        _apply(conn, self.delta)


def _count(conn: Connection, delta: Counter[tuple]) -> None:
    """Add `delta` to `fts_terms` last in this write transaction (now, outside one)."""
    counts = last_in_transaction(conn, "fts_terms", _Counts())
    if counts is None:
        _apply(conn, delta)
    else:
        counts.delta.update(delta)


def _apply(conn: Connection, delta: Counter[tuple]) -> None:
    """Add `delta` to `fts_terms`, rows in key order (two writers lock shared terms in the same order: no deadlock)."""
    merged: dict[tuple[str, str, str, str], list[int]] = {}
    for (agent, kind, view, term, what), value in delta.items():
        merged.setdefault((agent, kind, view, term), [0, 0])[0 if what == "rows" else 1] += value
    keys = [(key, counts) for key, counts in sorted(merged.items()) if counts[0] or counts[1]]
    if keys:
        # One statement over arrays: the rows are taken in the order given (ORDINALITY), whatever the plan.
        conn.execute(
            text(
                "INSERT INTO fts_terms (agent_id, kind, view, term, rows, tokens) "
                "SELECT a, k, v, t, r, n FROM unnest("
                "CAST(:agents AS text[]), CAST(:kinds AS text[]), CAST(:views AS text[]), CAST(:terms AS text[]), "
                "CAST(:rows AS bigint[]), CAST(:tokens AS bigint[])) WITH ORDINALITY AS d(a, k, v, t, r, n, at) "
                "ORDER BY at "
                "ON CONFLICT (agent_id, kind, view, term) DO UPDATE SET "
                "rows = fts_terms.rows + excluded.rows, tokens = fts_terms.tokens + excluded.tokens"
            ),
            {
                "agents": [k[0] for k, _ in keys],
                "kinds": [k[1] for k, _ in keys],
                "views": [k[2] for k, _ in keys],
                "terms": [k[3] for k, _ in keys],
                "rows": [c[0] for _, c in keys],
                "tokens": [c[1] for _, c in keys],
            },
        )


def index_new(conn: Connection, kind: str, rows: Sequence[tuple[int, str, str]]) -> None:
    """Index new rows given as (id, agent_id, search text): their tsvectors and the BM25 statistics."""
    if not rows:
        return
    docs = {row_id: analyze(body) for row_id, _agent, body in rows}
    delta: Counter[tuple] = Counter()
    for row_id, agent_id, _body in rows:
        delta.update(_terms_delta(agent_id, kind, "kw", [docs[row_id]], 1))
    if kind == "context":
        delta.update(_index_windows(conn, docs))
    else:
        conn.execute(
            text("UPDATE narratives SET fts_kw = CAST(:doc AS tsvector), fts_kw_len = :n WHERE id = :id"),
            [{"id": i, "doc": tsvector(tokens), "n": len(tokens)} for i, tokens in docs.items()],
        )
    _count(conn, delta)


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
    _count(conn, delta)


def index_again(conn: Connection, rows: Sequence[tuple[int, str, str]]) -> None:
    """Narratives whose search text grew (an amendment), given with their whole text now: counted out and in again.

    Call in the write that changed them, after locking their rows (`store.narratives.amend` does), so
    a catch-up indexing them at the same moment is waited for and not counted twice.
    """
    if not rows:
        return
    forget_narratives(conn, [row_id for row_id, _agent, _text in rows])
    index_new(conn, "narrative", rows)


def _index_windows(conn: Connection, docs: dict[int, list[str]]) -> Counter[tuple]:
    """The new turns' tsvectors (`docs`: their tokens; `fts_ctx` with the turn before each), and the window of the
    turn after each when it came before them."""
    ids = {"ids": list(docs)}
    conn.execute(  # in one order for every writer: no two wait on each other's sessions in a circle
        text(
            "SELECT pg_advisory_xact_lock(:space, hashtext(s.agent_id || chr(31) || s.session_id)) FROM "
            "(SELECT DISTINCT agent_id, session_id FROM context_turns WHERE id = ANY(:ids) "
            "ORDER BY agent_id, session_id) AS s"
        ),
        {"space": SESSION_LOCKS, **ids},
    )
    turns = conn.execute(_NEIGHBOURS, ids).all()
    known = dict(docs)
    delta: Counter[tuple] = Counter()
    new, later = [], []
    for t in turns:
        delta[(t.agent_id, "context", "speaker", t.speaker, "rows")] += 1
        if t.before_id is not None and t.before_id not in known:
            known[t.before_id] = analyze(turn_text(t.before_speaker, t.before_content))
        window = (known[t.before_id] if t.before_id is not None else []) + docs[t.id]
        new.append(
            {"id": t.id, "kw": tsvector(docs[t.id]), "kw_n": len(docs[t.id]), "ctx": tsvector(window), "n": len(window)}
        )
        delta.update(_terms_delta(t.agent_id, "context", "kw_ctx", [window], 1))
        if t.after_id is not None and t.after_id not in docs and t.after_len is not None:
            # A turn that arrived late sits before one already indexed: that one's window now starts with it.
            old = list(t.after_terms or ())
            delta.update(_terms_delta(t.agent_id, "context", "kw_ctx", [old], -1))
            delta[(t.agent_id, "context", "kw_ctx", TOTAL, "tokens")] += len(old) - t.after_len
            if t.after_id not in known:
                known[t.after_id] = analyze(turn_text(t.after_speaker, t.after_content))
            mate = docs[t.id] + known[t.after_id]
            later.append({"id": t.after_id, "ctx": tsvector(mate), "n": len(mate)})
            delta.update(_terms_delta(t.agent_id, "context", "kw_ctx", [mate], 1))
    conn.execute(
        text(
            "UPDATE context_turns SET fts_kw = CAST(:kw AS tsvector), fts_kw_len = :kw_n, "
            "fts_ctx = CAST(:ctx AS tsvector), fts_ctx_len = :n WHERE id = :id"
        ),
        new,
    )
    if later:
        conn.execute(
            text("UPDATE context_turns SET fts_ctx = CAST(:ctx AS tsvector), fts_ctx_len = :n WHERE id = :id"), later
        )
    return delta


# Each new turn with the turns just before and after it in its session (after its session is locked:
# the statement sees every turn committed before).
_NEIGHBOURS = text(
    "SELECT t.id, t.agent_id, t.speaker, "
    "b.id AS before_id, b.speaker AS before_speaker, b.content AS before_content, "
    "a.id AS after_id, a.speaker AS after_speaker, a.content AS after_content, a.fts_ctx_len AS after_len, "
    "tsvector_to_array(a.fts_ctx) AS after_terms "
    "FROM context_turns t "
    "LEFT JOIN LATERAL (SELECT c.id, c.speaker, c.content FROM context_turns c "
    "WHERE c.agent_id = t.agent_id AND c.session_id = t.session_id AND (c.created_at, c.id) < (t.created_at, t.id) "
    "ORDER BY c.created_at DESC, c.id DESC LIMIT 1) AS b ON true "
    "LEFT JOIN LATERAL (SELECT c.id, c.speaker, c.content, c.fts_ctx, c.fts_ctx_len FROM context_turns c "
    "WHERE c.agent_id = t.agent_id AND c.session_id = t.session_id AND (c.created_at, c.id) > (t.created_at, t.id) "
    "ORDER BY c.created_at, c.id LIMIT 1) AS a ON true "
    "WHERE t.id = ANY(:ids) ORDER BY t.created_at, t.id"
)


def catch_up(conn: Connection, agent_id: str | None = None, batch: int = 500, *, most: int | None = None) -> int:
    """Index every row (of `agent_id`, or of all agents; at most about `most`) without its tsvector yet; returns how
    many it indexed.

    Call in a write transaction: the rows are locked as they are read (SKIP LOCKED: what another
    process is indexing right now is left to it), and one catch-up runs at a time: its batches lock
    sessions in an order no other catch-up's share.
    """
    conn.execute(text("SELECT pg_advisory_xact_lock(:space, 0)"), {"space": CATCH_UP_LOCK})
    done = 0
    for kind in ("narrative", "context"):
        while (most is None or done < most) and (
            rows := _unindexed(conn, kind, agent_id, batch if most is None else min(batch, most - done))
        ):
            index_new(conn, kind, rows)
            done += len(rows)
    return done


# Whether any row of the agent `:agent` waits to be indexed: an expression, so a statement reading more can hold it.
UNINDEXED_SQL = (
    "(EXISTS (SELECT 1 FROM narratives WHERE agent_id = :agent AND fts_kw IS NULL) "
    "OR EXISTS (SELECT 1 FROM context_turns WHERE agent_id = :agent AND fts_kw IS NULL))"
)


def has_unindexed(conn: Connection, agent_id: str) -> bool:
    """Whether any of the agent's rows waits to be indexed (a read of the small pending indexes)."""
    return bool(conn.execute(text(f"SELECT {UNINDEXED_SQL}"), {"agent": agent_id}).scalar())


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
