"""PostgreSQL's keyword index: jieba-analyzed text as `tsvector` columns and BM25 statistics in `fts_terms`.

Each row's terms are exactly `bm25.analyze`'s (jieba for Chinese, so 1–2 character words are
terms of their own; light stemming for English), written as a tsvector literal rather than
through a text search configuration, so PostgreSQL never re-parses them: a lexeme is the term
with the positions it holds (its term frequency). Views, as the in-memory index keeps them:
`fts_kw` (narratives and turns: the row's search text) and `fts_ctx` (turns: the previous turn of
the session followed by this one). A GIN index over each finds the rows holding a term.

BM25 needs each term's document frequency and the view's row count and mean length: `fts_terms`
keeps them per (agent, kind, view), updated in the transaction that indexes the rows (the totals
under the term ''; a turn's speaker under view 'speaker', for the speaker signal). Scoring is the
in-memory index's formula (k1, b, word groups scoring their best member) in one SQL statement over
the rows holding a query term.

Rows are indexed by `catch_up` (the analyzer is search's, and the store may not depend on search),
never in the write itself, which stays a plain insert (indexing there made a write 3-10x slower).
A search that finds rows waiting (`has_unindexed`, a read of a small partial index) indexes up to
a bound of them first, so a write is found by the next query, as with the in-memory index; the
agent's embed task, queued by every write, indexes whatever is left in committed batches (a large
import, a dream stage's rows). Rows being indexed are locked (SKIP LOCKED), so two processes never
count a row twice.

A row is scored from only the query's lexemes of its tsvector (`setweight` marks them, `ts_filter`
keeps them: about 5 µs a row instead of 35 µs for unnesting every lexeme). Up to `EXACT_ROWS` rows
a view (a LoCoMo conversation is far below it) every row holding a query term is scored: the
in-memory index's scores. A larger view scores the rows `candidate_query` picks, about
`POSTINGS_BUDGET` of them: those holding the rarest query terms, or several of them at once when
each alone is common. The bench measures how much of the exact top 10 that keeps
(`bench/scale.py`, "keyword recall").
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, text

from tideline_core.domain.memory_text import NarrativeFields, narrative_search_text, turn_text
from tideline_core.search.bm25 import analyze
from tideline_core.store.schema import EXTRACT_SQL
from tideline_core.text.tokens import CJK_CLASS, escape_like

K1 = 0.9  # the in-memory index's (search.keyword_index), measured there
B = 0.4
TOTAL = ""  # the term under which a view's row count and token total are kept (analyze yields no empty term)
HAN_TERM, LATIN_TERM = CJK_CLASS, "^[A-Za-z]+$"  # a term of each script, as the in-memory index tells them apart
EXACT_ROWS = 5_000  # a view of at most this many rows is scored exactly, every row holding a query term
POSTINGS_BUDGET = 2_000  # beyond it, about this many rows are scored per view (measured: ~5-10 µs a row)
SEVERAL_BUDGET = 1_000  # rows expected to hold several rare terms at once: fewer, better candidates
RAREST = 4  # past the budget, rows holding several of this many rarest query terms are the candidates
MAX_POSITION = 16_383  # PostgreSQL's bounds: a lexeme's position, its positions, its length in bytes
MAX_POSITIONS = 256
MAX_LEXEME_BYTES = 2046
BASE = {"narrative": ("narratives", "occurred_at"), "context": ("context_turns", "created_at")}
COLUMNS = {"kw": ("fts_kw", "fts_kw_len"), "kw_ctx": ("fts_ctx", "fts_ctx_len")}


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
    if conn.dialect.name != "postgresql" or not ids:
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
    if conn.dialect.name != "postgresql" or not ids:
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


def words_beginning(
    conn: Connection, agent_id: str, views: Iterable[tuple[str, str]], beginnings: Sequence[str], most: int
) -> list[str]:
    """The agent's indexed terms of `views` beginning with any of `beginnings`, most frequent first, at most `most`."""
    wanted = set(views)
    likes = " OR ".join(f"term LIKE :b{i} ESCAPE '\\'" for i in range(len(beginnings)))
    if not likes or not wanted:
        return []
    found = conn.execute(
        text(
            "SELECT term, max(rows) AS rows FROM fts_terms WHERE agent_id = :agent AND kind = ANY(:kinds) "
            f"AND view = ANY(:views) AND rows > 0 AND term <> :total AND ({likes}) "
            "GROUP BY term ORDER BY max(rows) DESC, term LIMIT :most"
        ),
        {
            "agent": agent_id,
            "kinds": sorted({k for k, _ in wanted}),
            "views": sorted({v for _, v in wanted}),
            "total": TOTAL,
            "most": most,
            **{f"b{i}": escape_like(b) + "%" for i, b in enumerate(beginnings)},
        },
    ).all()
    return [str(r.term) for r in found]


def bilingual(conn: Connection, agent_id: str, kind: str) -> bool:
    """Whether the agent's keyword terms of `kind` hold words of both Chinese and Latin script (then a question
    may cross, `search.glossary`)."""
    # Each pattern written into the statement, not bound: the planner matches it to its partial index (0010).
    exists = [
        "EXISTS (SELECT 1 FROM fts_terms WHERE agent_id = :agent AND kind = :kind AND view = 'kw' "
        f"AND rows > 0 AND term ~ '{pattern}')"
        for pattern in (HAN_TERM, LATIN_TERM)
    ]
    found = conn.execute(text(" AND ".join(["SELECT true", *exists])), {"agent": agent_id, "kind": kind}).scalar()
    return bool(found)


def statistics(conn: Connection, agent_id: str, kind: str, view: str, terms: Iterable[str]) -> dict[str, int]:
    """Rows holding each of `terms` in the agent's `view` of `kind` (absent: none), and under '' the view's rows."""
    stats = view_stats(conn, agent_id, [(kind, view)], terms).get((kind, view))
    return dict(stats.df) if stats is not None else {}


@dataclass(frozen=True)
class ViewStats:
    """What BM25 needs of one view besides the rows: its row count, token total and the query terms' row counts."""

    rows: int
    tokens: int
    df: Mapping[str, int]


def view_stats(
    conn: Connection, agent_id: str, views: Iterable[tuple[str, str]], terms: Iterable[str]
) -> dict[tuple[str, str], ViewStats]:
    """`ViewStats` of each (kind, view) of the agent, for `terms`, in one read (a view without rows is left out)."""
    wanted_views = set(views)
    found = conn.execute(
        text(
            "SELECT kind, view, term, rows, tokens FROM fts_terms WHERE agent_id = :agent AND kind = ANY(:kinds) "
            "AND view = ANY(:views) AND term = ANY(:terms) AND rows > 0"
        ),
        {
            "agent": agent_id,
            "kinds": sorted({k for k, _ in wanted_views}),
            "views": sorted({v for _, v in wanted_views}),
            "terms": sorted({*terms, TOTAL}),
        },
    ).all()
    df: dict[tuple[str, str], dict[str, int]] = {}
    tokens: dict[tuple[str, str], int] = {}
    for r in found:
        if (r.kind, r.view) in wanted_views:
            df.setdefault((r.kind, r.view), {})[r.term] = int(r.rows)
            if r.term == TOTAL:
                tokens[(r.kind, r.view)] = int(r.tokens)
    return {
        key: ViewStats(rows=counts[TOTAL], tokens=tokens[key], df=counts)
        for key, counts in df.items()
        if TOTAL in counts
    }


def search_view(
    conn: Connection,
    agent_id: str,
    kind: str,
    view: str,
    terms: Mapping[str, float],
    k: int,
    since: datetime | None = None,
    until: datetime | None = None,
    groups: Mapping[str, str] | None = None,
    *,
    extracts: bool = True,
    exact: bool | None = None,
    stats: ViewStats | None = None,
) -> list[tuple[int, float]]:
    """Top-k (row id, BM25 score) of the agent's rows of `kind` in `view` ('kw' or 'kw_ctx'), best first, ties by id.

    `exact`: score every row holding a query term (default: only up to `EXACT_ROWS` rows a view; a
    larger view scores the rows `candidate_query` finds). `stats`: the view's `view_stats` for these
    terms, when already read.
    """
    column, length = COLUMNS[view]
    wanted = {t: w for t, w in terms.items() if w > 0}
    if not wanted:
        return []
    if stats is None:
        stats = view_stats(conn, agent_id, [(kind, view)], wanted).get((kind, view))
    if stats is None or not stats.rows:
        return []
    df = stats.df
    held = sorted((t for t in wanted if df.get(t)), key=lambda t: (df[t], t))
    if not held:
        return []
    rows, avgdl = stats.rows, (stats.tokens / stats.rows if stats.tokens > 0 else 1.0)
    exact = rows <= EXACT_ROWS if exact is None else exact
    lookup, capped = (" | ".join(quote(t) for t in held), False) if exact else candidate_query(held, df, rows)
    weights = [wanted[t] * _idf(df[t], rows) for t in held]
    group = [groups.get(t, t) if groups else t for t in held]
    table, stamp = BASE[kind]
    clauses = ["b.agent_id = :agent", f"b.{column} @@ CAST(:query AS tsquery)"]
    params: dict[str, object] = {
        "agent": agent_id,
        "query": lookup,
        "terms": held,
        "groups": group,
        "weights": weights,
        "k": k,
        "cap": POSTINGS_BUDGET,
        "k1": K1,
        "b": B,
        "avgdl": avgdl,
    }
    if since is not None:
        clauses.append(f"b.{stamp} >= :since")
        params["since"] = since
    if until is not None:
        clauses.append(f"b.{stamp} <= :until")
        params["until"] = until
    if kind == "narrative" and not extracts:
        clauses.append(f"NOT {EXTRACT_SQL}")
    cap = " ORDER BY b.id DESC LIMIT :cap" if capped else ""
    hits = f"SELECT b.id, b.{column} AS doc, b.{length} AS len FROM {table} b WHERE {' AND '.join(clauses)}{cap}"
    lexemes = "unnest(ts_filter(setweight(h.doc, 'A', CAST(:terms AS text[])), '{a}'))"
    tf = "cardinality(u.positions)"
    part = f"{tf} * (:k1 + 1.0) / ({tf} + :k1 * (1.0 - :b + :b * h.len / :avgdl))"
    if len(set(group)) == len(group):
        # No word groups: a row's score is a plain sum over its lexemes, each term's weight found by position.
        sql = f"""
            WITH hits AS ({hits})
            SELECT h.id, sum((CAST(:weights AS float8[]))[array_position(CAST(:terms AS text[]), u.lexeme)] * {part})
                AS score
            FROM hits h CROSS JOIN LATERAL {lexemes} AS u
            GROUP BY h.id ORDER BY score DESC, h.id LIMIT :k
        """
    else:
        sql = f"""
            WITH q AS (
                SELECT * FROM unnest(CAST(:terms AS text[]), CAST(:groups AS text[]), CAST(:weights AS float8[]))
                    AS q(term, grp, w)
            ), hits AS ({hits}), parts AS (
                SELECT h.id, q.grp, max(q.w * {part}) AS part
                FROM hits h CROSS JOIN LATERAL {lexemes} AS u JOIN q ON q.term = u.lexeme
                GROUP BY h.id, q.grp
            )
            SELECT id, sum(part) AS score FROM parts GROUP BY id ORDER BY score DESC, id LIMIT :k
        """
    return [(int(r.id), float(r.score)) for r in conn.execute(text(sql), params)]


def candidate_query(held: Sequence[str], df: Mapping[str, int], rows: int) -> tuple[str, bool]:
    """The tsquery finding the rows to score in a view past `EXACT_ROWS`, and whether its matches are capped.

    `held`: the query's terms the view holds, rarest first. The rarest terms are looked up whole while
    their rows together stay within `POSTINGS_BUDGET` (the commoner ones then only score the rows
    found: a row holding none of the rare terms rarely outranks one that does). When the rarest term
    alone is past it, a BM25 top row is one holding several of the query's rarer terms, so the lookup
    asks for rows holding at least m of the `RAREST` rarest, the smallest m whose expected matches
    (terms taken as independent) fit `SEVERAL_BUDGET`; the matches are still capped to the newest
    `POSTINGS_BUDGET` when that guess is short. GIN answers an AND inside its posting lists, so only
    the matches are read from the table. Measured against exact BM25 on 100k synthetic narratives
    (three question sets, 30 each): top-10 recall 0.94 / 0.60 / 0.95 at 17–26 ms a view, where the
    newest 2,000 rows of the rarest term gave 0.59 / 0.38 / 0.63 at 41–59 ms.
    """
    chosen, postings = [held[0]], df[held[0]]
    for term in held[1:]:
        if postings + df[term] > POSTINGS_BUDGET:
            break
        chosen.append(term)
        postings += df[term]
    if postings <= POSTINGS_BUDGET:
        return " | ".join(quote(t) for t in chosen), False
    rarest = list(held[:RAREST])
    for m in range(2, len(rarest) + 1):
        if rows * at_least(m, [df[t] / rows for t in rarest]) <= SEVERAL_BUDGET:
            break
    else:
        m = len(rarest)
    ands = [" & ".join(quote(t) for t in combo) for combo in itertools.combinations(rarest, m)]
    return " | ".join(f"({a})" for a in ands), True


def at_least(m: int, shares: Sequence[float]) -> float:
    """The chance that at least `m` of independent events of these probabilities happen."""
    exactly = [1.0] + [0.0] * len(shares)  # exactly[j]: j of the events so far
    for p in shares:
        for j in range(len(shares), 0, -1):
            exactly[j] = exactly[j] * (1 - p) + exactly[j - 1] * p
        exactly[0] *= 1 - p
    return sum(exactly[m:])


def _idf(rows_with: int, rows: int) -> float:
    """`bm25.BM25Index.idf`: positive for any term held by fewer than all rows."""
    n = max(rows, rows_with)
    return math.log(1.0 + (n - rows_with + 0.5) / (rows_with + 0.5))


def terms_of(conn: Connection, ids: Sequence[int]) -> dict[int, tuple[str, ...]]:
    """The distinct `fts_kw` terms of each context turn."""
    if not ids:
        return {}
    found = conn.execute(
        text("SELECT id, tsvector_to_array(fts_kw) AS terms FROM context_turns WHERE id = ANY(:ids)"),
        {"ids": list(ids)},
    )
    return {int(r.id): tuple(r.terms or ()) for r in found}


def speakers(conn: Connection, agent_id: str) -> set[str]:
    """Every speaker of the agent's context turns."""
    found = conn.execute(
        text(
            "SELECT term FROM fts_terms WHERE agent_id = :agent AND kind = 'context' AND view = 'speaker' AND rows > 0"
        ),
        {"agent": agent_id},
    )
    return {r.term for r in found}
