"""PostgreSQL's keyword search: BM25 over the rows' tsvectors and the statistics in `fts_terms`, in SQL.

The index itself (each row's terms, `fts_terms`) is kept by `store.pg_terms`. Scoring is the
in-memory index's formula (k1, b, word groups scoring their best member) in one SQL statement
over the rows holding a query term: the GIN index of the agent's view finds them where the view is
large enough to have one of its own (`store.agent_indexes`), else they are read among its rows.

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, text

from tideline_core.store.agent_indexes import owned_by
from tideline_core.store.pg_terms import BASE, TOTAL, quote
from tideline_core.store.schema import EXTRACT_SQL
from tideline_core.text.tokens import CJK_CLASS, escape_like

K1 = 0.9  # the in-memory index's (search.keyword_index), measured there
B = 0.4
HAN_TERM, LATIN_TERM = CJK_CLASS, "^[A-Za-z]+$"  # a term of each script, as the in-memory index tells them apart
EXACT_ROWS = 5_000  # a view of at most this many rows is scored exactly, every row holding a query term
POSTINGS_BUDGET = 2_000  # beyond it, about this many rows are scored per view (measured: ~5-10 µs a row)
SEVERAL_BUDGET = 1_000  # rows expected to hold several rare terms at once: fewer, better candidates
RAREST = 4  # past the budget, rows holding several of this many rarest query terms are the candidates
COLUMNS = {"kw": ("fts_kw", "fts_kw_len"), "kw_ctx": ("fts_ctx", "fts_ctx_len")}


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
    wanted = {t: w for t, w in terms.items() if w > 0}
    if not wanted:
        return []
    if stats is None:
        stats = view_stats(conn, agent_id, [(kind, view)], wanted).get((kind, view))
    ask = ViewAsk(kind, view, wanted, k, since, until, groups, extracts=extracts, exact=exact)
    return search_views(conn, agent_id, [(ask, stats)])[0]


@dataclass(frozen=True)
class ViewAsk:
    """One keyword view to score (`search_view`'s arguments but the connection, the agent and the statistics)."""

    kind: str
    view: str
    terms: Mapping[str, float]
    k: int
    since: datetime | None = None
    until: datetime | None = None
    groups: Mapping[str, str] | None = None
    extracts: bool = True
    exact: bool | None = None


def search_views(
    conn: Connection, agent_id: str, asks: Sequence[tuple[ViewAsk, ViewStats | None]]
) -> list[list[tuple[int, float]]]:
    """`search_view` of each ask with its view's statistics, in their order, in one statement (each ask's
    own query, joined by UNION ALL): a store's views on one round trip."""
    parts: list[str] = []
    params: dict[str, object] = {}
    for n, (ask, stats) in enumerate(asks):
        built = _view_query(agent_id, ask, stats, f"v{n}_")
        if built is not None:
            parts.append(f"SELECT {n} AS ask, id, score FROM ({built[0]}) AS v{n}")
            params.update(built[1])
    found: list[list[tuple[int, float]]] = [[] for _ in asks]
    if parts:
        for r in conn.execute(text(" UNION ALL ".join(parts)), params).all():
            found[int(r.ask)].append((int(r.id), float(r.score)))
    return [sorted(hits, key=lambda hit: (-hit[1], hit[0])) for hits in found]


def _view_query(agent_id: str, ask: ViewAsk, stats: ViewStats | None, p: str) -> tuple[str, dict[str, object]] | None:
    """The statement scoring one view of the agent's (its parameters named with the prefix `p`), or None when no
    row can match."""
    column, length = COLUMNS[ask.view]
    wanted = {t: w for t, w in ask.terms.items() if w > 0}
    if not wanted or stats is None or not stats.rows:
        return None
    df = stats.df
    held = sorted((t for t in wanted if df.get(t)), key=lambda t: (df[t], t))
    if not held:
        return None
    rows, avgdl = stats.rows, (stats.tokens / stats.rows if stats.tokens > 0 else 1.0)
    exact = rows <= EXACT_ROWS if ask.exact is None else ask.exact
    lookup, capped = (" | ".join(quote(t) for t in held), False) if exact else candidate_query(held, df, rows)
    weights = [wanted[t] * _idf(df[t], rows) for t in held]
    group = [ask.groups.get(t, t) if ask.groups else t for t in held]
    table, stamp = BASE[ask.kind]
    # The agent as a constant: its own GIN index where it has one (`agent_indexes`), else its rows alone.
    clauses = [owned_by(agent_id, "b."), f"b.{column} @@ CAST(:{p}query AS tsquery)"]
    params: dict[str, object] = {
        "query": lookup,
        "terms": held,
        "groups": group,
        "weights": weights,
        "k": ask.k,
        "cap": POSTINGS_BUDGET,
        "k1": K1,
        "b": B,
        "avgdl": avgdl,
    }
    if ask.since is not None:
        clauses.append(f"b.{stamp} >= :{p}since")
        params["since"] = ask.since
    if ask.until is not None:
        clauses.append(f"b.{stamp} <= :{p}until")
        params["until"] = ask.until
    if ask.kind == "narrative" and not ask.extracts:
        clauses.append(f"NOT {EXTRACT_SQL}")
    cap = f" ORDER BY b.id DESC LIMIT :{p}cap" if capped else ""
    hits = f"SELECT b.id, b.{column} AS doc, b.{length} AS len FROM {table} b WHERE {' AND '.join(clauses)}{cap}"
    lexemes = f"unnest(ts_filter(setweight(h.doc, 'A', CAST(:{p}terms AS text[])), '{{a}}'))"
    tf = "cardinality(u.positions)"
    part = f"{tf} * (:{p}k1 + 1.0) / ({tf} + :{p}k1 * (1.0 - :{p}b + :{p}b * h.len / :{p}avgdl))"
    if len(set(group)) == len(group):
        # No word groups: a row's score is a plain sum over its lexemes, each term's weight found by position.
        weight = f"(CAST(:{p}weights AS float8[]))[array_position(CAST(:{p}terms AS text[]), u.lexeme)]"
        sql = f"""
            WITH hits AS ({hits})
            SELECT h.id, sum({weight} * {part}) AS score
            FROM hits h CROSS JOIN LATERAL {lexemes} AS u
            GROUP BY h.id ORDER BY score DESC, h.id LIMIT :{p}k
        """
    else:
        sql = f"""
            WITH q AS (
                SELECT * FROM unnest(CAST(:{p}terms AS text[]), CAST(:{p}groups AS text[]),
                    CAST(:{p}weights AS float8[])) AS q(term, grp, w)
            ), hits AS ({hits}), parts AS (
                SELECT h.id, q.grp, max(q.w * {part}) AS part
                FROM hits h CROSS JOIN LATERAL {lexemes} AS u JOIN q ON q.term = u.lexeme
                GROUP BY h.id, q.grp
            )
            SELECT id, sum(part) AS score FROM parts GROUP BY id ORDER BY score DESC, id LIMIT :{p}k
        """
    return sql, {f"{p}{name}": value for name, value in params.items()}


def candidate_query(held: Sequence[str], df: Mapping[str, int], rows: int) -> tuple[str, bool]:
    """The tsquery finding the rows to score in a view past `EXACT_ROWS`, and whether its matches are capped.

    `held`: the query's terms the view holds, rarest first. The rarest terms are looked up whole while
    their rows together stay within `POSTINGS_BUDGET` (the commoner ones then only score the rows
    found: a row holding none of the rare terms rarely outranks one that does). When the rarest term
    alone is past it, a BM25 top row is one holding several of the query's rarer terms, so the lookup
    asks for rows holding at least m of the `RAREST` rarest, the smallest m whose expected matches
    (terms taken as independent) fit `SEVERAL_BUDGET`; the matches are still capped to the newest
    `POSTINGS_BUDGET` when that guess is short. The agent's GIN index answers an AND inside its
    posting lists, so only the matches are read from the table. Measured against exact BM25 on 100k synthetic narratives
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
    ).all()
    return {int(r.id): tuple(r.terms or ()) for r in found}


# Every speaker of the agent `:agent`'s turns, as a query a statement reading more can hold.
SPEAKERS_SQL = (
    "SELECT term FROM fts_terms WHERE agent_id = :agent AND kind = 'context' AND view = 'speaker' AND rows > 0"
)
