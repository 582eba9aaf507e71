"""The candidates of PostgreSQL's own indexes: BM25 over jieba tsvectors, pgvector HNSW; no per-agent state.

A `CandidateSource` for the one ranking (`hybrid`: the same signals, weights, fusion, joins and
neighbour spreading as over in-memory indexes), with every candidate list read from the database
at query time:

- ``kw`` / ``kw_ctx``: BM25 (the in-memory index's k1, b, word groups and crossing words) over the `fts_kw` and
  `fts_ctx` tsvectors (`pg_keywords`); rows written since the last query are indexed first (up to a
  bound; the embed task indexes a larger backlog), so a write is found by the next query. When BM25
  finds nothing, the store's LIKE lookup answers (a single CJK character, part of an identifier), as
  on SQLite;
- ``dense`` / ``ctx``: cosine through the agent's own HNSW graph of each view, or an exact scan of its
  rows where the view is small (`store.pg_vectors`, `store.agent_indexes`);
- ``time`` / ``speaker``: from the candidates' times and speakers, read for them alone;
- ``join``: `joins.session_joins` over the anchors' terms and their sessions' turns, read for them;
- ``neighbour``: the adjacent turns of the candidates that can still reach the top, read for them.

The keyword views and the HNSW walks of a larger view run side by side, each on a connection of its
own (`side_by_side`): their statements run in PostgreSQL while the threads wait, so a search takes
about its slowest lookup rather than their sum, as far as the cores allow. A lookup of a small view
(`SMALL_VIEW`) costs less than its round trip: the small views' keyword scoring is one statement on
the searching thread, their walks one on the dense half's, and each other read of a search (the
snapshot, the candidates' times and speakers, the join's sessions) one statement too. The searching
thread's reads share one connection and transaction (`Database.one_read`): one pool checkout, with
its ping, BEGIN and COMMIT, for them all; a keyword view scored beside it is one statement outside
any transaction (`Database.lookup`).

A server process therefore holds no per-agent index and starts in the same time at any size; the
query vectors of recent query texts are still remembered (`HybridSearch._query_vector`), and the
scripts of rows it ranked (`StoreRows.scripts`). Vectors of another size than `pg_vectors.DIM` have
no HNSW copy: those are searched by an in-memory index (`memory_source`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime
from typing import TypeVar, cast

from sqlalchemy import Connection, text

from tideline_core.domain.inputs import SearchIn
from tideline_core.embedding import Embedder
from tideline_core.numeric import np
from tideline_core.search import pg_keywords
from tideline_core.search.glossary import CROSSING_WEIGHT, crossing_terms
from tideline_core.search.hybrid import HybridSearch
from tideline_core.search.joins import JoinCorpus, session_joins
from tideline_core.search.memory_source import MemorySource
from tideline_core.search.pg_keywords import ViewAsk, ViewStats
from tideline_core.search.query import PREFIX_WORDS, expand_prefixes, named_speakers
from tideline_core.search.signals import Key, Signals, add_keyword_view, fallback_terms, speaker_signal, time_signal
from tideline_core.search.sources import Query, Snapshot, StoreRows
from tideline_core.search.when import TimeWindow
from tideline_core.store import fts, keywords, pg_terms, pg_vectors
from tideline_core.store.database import Database
from tideline_core.store.pg_terms import BASE
from tideline_core.text.terms import analyze
from tideline_core.text.tokens import is_prefix

KEYWORD_VIEWS = {"narrative": ("kw",), "context": ("kw", "kw_ctx")}
SCRIPTS_KEPT = 1024  # agents whose store's scripts are remembered (then forgotten all at once)
# A view of at most this many rows is looked up together with the search's other small views (its keyword
# scoring is then exact: `pg_keywords.EXACT_ROWS`).
SMALL_VIEW = pg_keywords.EXACT_ROWS
LOOKUP_THREADS = 16  # lookups run beside their searches' own threads at once, at most (more wait their turn)
CATCH_UP_ROWS = 500  # rows stored unindexed (by an earlier version) a search indexes before it answers, at most
_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


class PostgresSource:
    """`CandidateSource` on PostgreSQL with pgvector: every index in the database, read per query.

    `others`: the in-memory source that answers for vectors of another size than `pg_vectors.DIM`
    (it stays empty otherwise). `ef_search`: candidates each HNSW walk keeps (`TIDELINE_PG_EF_SEARCH`).
    """

    def __init__(
        self, db: Database, model: str, *, ef_search: int = pg_vectors.EF_SEARCH, extracts: bool = False
    ) -> None:
        self.db = db
        self.model = model
        self.extracts = extracts
        self.ef_search = ef_search
        self.others = MemorySource(db, model, extracts=extracts)
        self._store_scripts: dict[tuple[str, str], tuple[tuple[object, ...], bool]] = {}

    def snapshot(self, agent_id: str, kinds: Sequence[str], params: SearchIn) -> Snapshot:
        """What the search reads once. Rows stored before the keyword index was kept at write time, up to
        `CATCH_UP_ROWS` of them, are indexed first; the agent's embed task indexes the rest."""
        with self.db.read() as conn:
            unindexed, snapshot = _snapshot(conn, agent_id, kinds, params)
        if not unindexed:
            return snapshot
        with self.db.write() as conn:
            keywords.catch_up(conn, agent_id, most=CATCH_UP_ROWS)
        with self.db.read() as conn:
            return _snapshot(conn, agent_id, kinds, params)[1]

    def speaker_names(self, q: Query) -> Collection[str]:
        return q.snapshot.speakers

    def overlaps(self, agent_id: str, kinds: Sequence[str]) -> bool:
        # The model pass and the index walks wait on other processes: the keyword queries run meanwhile.
        return True

    def reading(self) -> AbstractContextManager[None]:
        """The searching thread's reads on one connection (`Database.one_read`); the lookups run side by side
        (on other threads) take one each."""
        return self.db.one_read()

    def nearest(
        self, q: Query, walks: Sequence[tuple[str, str]], vector: np.ndarray, depth: int
    ) -> list[list[tuple[int, float]]]:
        """The HNSW walks: those over small views in one statement, each larger one on a connection of its own
        beside it."""
        if len(vector) != pg_vectors.DIM:  # no HNSW copy of this size: the in-memory index
            return self.others.nearest(q, walks, vector, depth)
        rows = q.snapshot.rows or {}

        def look(lookup: Sequence[tuple[str, str]]) -> list[list[tuple[int, float]]]:
            with self.db.read() as conn:
                return pg_vectors.nearest_views(
                    conn,
                    q.agent_id,
                    lookup,
                    self.model,
                    vector,
                    depth,
                    q.params.since,
                    q.params.until,
                    extracts=self.extracts,
                    ef_search=self.ef_search,
                )

        # A walk over a small view costs less than a round trip and a connection.
        lookups = lookup_groups(walks, lambda walk: rows.get(walk[0], SMALL_VIEW + 1) <= SMALL_VIEW)
        walked = [found for lookup_found in side_by_side(look, lookups) for found in lookup_found]
        found_by = dict(zip([walk for lookup in lookups for walk in lookup], walked, strict=True))
        return [found_by[walk] for walk in walks]

    def keyword_candidates(self, q: Query, signals: Signals) -> None:
        """Every keyword view scored at once: the views small enough to be scored exactly in one statement on the
        connection that read their statistics, each larger one on a connection of its own beside it (the server's
        cores share the work)."""
        agent_id, params = q.agent_id, q.params
        views = [(kind, view) for kind in q.kinds for view in KEYWORD_VIEWS[kind]]
        terms, groups = q.terms, q.groups
        with self.db.read() as conn:
            if any(is_prefix(term) for term in terms):
                terms, begun = expand_prefixes(
                    terms, lambda forms: pg_keywords.words_beginning(conn, agent_id, views, forms, PREFIX_WORDS)
                )
                groups = {**groups, **begun}
            # A word of the question in the other language is the same word: asked for as one of its own, of each
            # kind whose rows hold both scripts (as the in-memory index asks each kind's shard). Their row counts
            # are read with the question's own where the last search found the store bilingual.
            bilingual_before = any(self._store_scripts.get((agent_id, kind), ((), False))[1] for kind in q.kinds)
            read_with = _crossing_words(terms) if bilingual_before else {}
            stats = pg_keywords.view_stats(conn, agent_id, views, [*terms, *read_with])
            crossed = [kind for kind in q.kinds if self._bilingual(conn, agent_id, kind, stats)]
            crossing = (read_with or _crossing_words(terms)) if crossed else {}
            if crossing.keys() - read_with.keys():  # only the crossing words' row counts are new
                more = pg_keywords.view_stats(conn, agent_id, views, crossing)
                stats = {
                    view: replace(read, df={**read.df, **more[view].df}) if view in more else read
                    for view, read in stats.items()
                }
            asked = {kind: {**terms, **crossing} if kind in crossed else terms for kind in q.kinds}
            asks = [
                (
                    ViewAsk(kind, view, asked[kind], q.depth, params.since, params.until, groups, self.extracts),
                    stats[(kind, view)],
                )
                for kind, view in views
                if (kind, view) in stats
            ]

        def score(group: Sequence[tuple[ViewAsk, ViewStats]]) -> list[list[tuple[int, float]]]:
            with self.db.lookup() as conn:
                return pg_keywords.search_views(conn, agent_id, group)

        # A round trip and a connection cost more than scoring a small view.
        lookups = lookup_groups(asks, lambda ask: ask[1].rows <= SMALL_VIEW)
        scored = [hits for found in side_by_side(score, lookups) for hits in found]
        asked_in_turn = [ask for lookup in lookups for ask, _ in lookup]
        results = {(ask.kind, ask.view): hits for ask, hits in zip(asked_in_turn, scored, strict=True)}
        for kind in q.kinds:
            found_any = False
            for view in KEYWORD_VIEWS[kind]:
                found = results.get((kind, view), [])
                add_keyword_view(signals, kind, view, found)
                found_any = found_any or bool(found)
            fts_terms = fallback_terms(params, q.lines) if not found_any else []
            if fts_terms:
                with self.db.read() as conn:
                    hits = fts.search(conn, kind, agent_id, fts_terms, q.depth, params.since, params.until)
                signals.setdefault("kw", {}).update({(kind, i): s for i, s in hits})

    def _bilingual(
        self, conn: Connection, agent_id: str, kind: str, stats: Mapping[tuple[str, str], ViewStats]
    ) -> bool:
        """Whether the agent's rows of `kind` hold words of both scripts, asked again once that kind's totals change."""
        key = (agent_id, kind)
        mark = tuple(sorted((view, s.rows, s.tokens) for (of, view), s in stats.items() if of == kind))
        known = self._store_scripts.get(key)
        if known is not None and known[0] == mark:
            return known[1]
        found = pg_keywords.bilingual(conn, agent_id, kind)
        if len(self._store_scripts) >= SCRIPTS_KEPT:
            self._store_scripts.clear()
        self._store_scripts[key] = (mark, found)
        return found

    def row_signals(
        self, q: Query, windows: Sequence[TimeWindow], named_in: Sequence[str] | None, signals: Signals
    ) -> None:
        """The candidates' times (when the query names a time) and speakers (when it names one), for them alone.

        A keyword view hands over up to `q.depth` candidates: most queries name neither, and then
        nothing is read at all.
        """
        named = named_speakers([t for t in named_in if t], q.snapshot.speakers) if named_in is not None else set()
        if not windows and not named:
            return
        with self.db.read() as conn:
            times, spoken = _times_and_speakers(conn, q.agent_id, _candidate_ids(signals), bool(windows), named)
        if windows:
            time_signal(windows, times, signals)
        if named:
            speaker_signal(named, spoken, signals)

    def session_joins(
        self, q: Query, ranked: Sequence[tuple[int, float]], turns: Mapping[int, float]
    ) -> Mapping[int, float]:
        """The corpus read from the database for the anchors and their sessions."""
        with self.db.read() as conn:
            corpus = _JoinReader(conn, q.agent_id, [i for i, _ in ranked], q.snapshot.speakers)
            return session_joins(ranked, q.terms, turns, corpus.corpus())

    def adjacent(self, agent_id: str, turn_ids: Sequence[int]) -> Mapping[int, tuple[int, ...]]:
        with self.db.read() as conn:
            return _adjacent(conn, agent_id, turn_ids)


def searcher(
    db: Database,
    embedder: Embedder,
    *,
    ef_search: int = pg_vectors.EF_SEARCH,
    query_timeout: float = 2.0,
    extracts: bool = False,
) -> HybridSearch:
    """The ranking over PostgreSQL's own indexes of `db` (no per-agent state in the process)."""
    source = PostgresSource(db, embedder.model, ef_search=ef_search, extracts=extracts)
    return HybridSearch(embedder, source, StoreRows(db), query_timeout=query_timeout, extracts=extracts)


def _crossing_words(terms: Mapping[str, float]) -> dict[str, float]:
    """The question's words in the other language (`glossary.crossing_terms`), each with its weight."""
    return dict.fromkeys(crossing_terms(terms, lambda _: True), CROSSING_WEIGHT)


def lookup_groups(items: Sequence[_Item], small: Callable[[_Item], bool]) -> list[list[_Item]]:
    """The lookups of one search as `side_by_side` runs them: every small one together, first (one statement on
    the calling thread's connection), then each other one alone, in their order."""
    together = [item for item in items if small(item)]
    return ([together] if together else []) + [[item] for item in items if not small(item)]


def side_by_side(call: Callable[[_Item], _Result], items: Sequence[_Item]) -> list[_Result]:
    """`call` of each item, in their order: all but the first on the process's lookup threads, the first on this one.

    Each call here is a statement PostgreSQL runs while the thread waits: a search's several index
    lookups then take about as long as its slowest one instead of their sum, as the cores allow.
    """
    if len(items) < 2:
        return [call(item) for item in items]
    pool = _lookup_threads()
    later = [pool.submit(call, item) for item in items[1:]]
    first = call(items[0])
    return [first, *(future.result() for future in later)]


_threads: tuple[int, ThreadPoolExecutor] | None = None
_threads_lock = threading.Lock()


def _lookup_threads() -> ThreadPoolExecutor:
    """The threads `side_by_side` hands lookups to, started with the process's first search and kept (starting
    them for every search cost every search process CPU); a forked child starts its own, its parent's are not
    there."""
    global _threads
    with _threads_lock:
        if _threads is None or _threads[0] != os.getpid():
            _threads = (os.getpid(), ThreadPoolExecutor(max_workers=LOOKUP_THREADS, thread_name_prefix="tideline-pg"))
        return _threads[1]


class _JoinReader:
    """What `session_joins` reads (`JoinCorpus`), loaded from the database as it is asked for."""

    def __init__(self, conn: Connection, agent_id: str, anchors: Sequence[int], speakers: Collection[str]) -> None:
        self.conn = conn
        self.agent_id = agent_id
        self.anchors = list(anchors)
        self.tokens = pg_keywords.terms_of(conn, anchors)
        words = {w for ts in self.tokens.values() for w in ts}
        self.df = pg_keywords.statistics(conn, agent_id, "context", "kw", words)
        self.rows = self.df.get(pg_keywords.TOTAL, 0)
        self.speakers = frozenset(word for name in speakers for word in analyze(name))
        self.sessions: dict[int, list[int]] = {}

    def corpus(self) -> JoinCorpus:
        return JoinCorpus(
            tokens_of=lambda i: self.tokens.get(i, ()),
            session_of=self._session_of,
            rows_with=self._rows_with,
            rows=self.rows,
            speakers=self.speakers,
        )

    def _rows_with(self, word: str) -> int:
        if word not in self.df:
            self.df.update(pg_keywords.statistics(self.conn, self.agent_id, "context", "kw", [word]))
            self.df.setdefault(word, 0)
        return self.df[word]

    def _session_of(self, anchor: int) -> list[int]:
        if anchor not in self.sessions:
            # The first anchor asked for brings every anchor's session in the same statement: a round trip
            # costs more than a few sessions' rows, and a second anchor is asked for as often as not.
            wanted = [a for a in dict.fromkeys([anchor, *self.anchors]) if a not in self.sessions]
            mates = self.conn.execute(
                text(
                    "SELECT a.id AS anchor, m.id, tsvector_to_array(m.fts_kw) AS terms FROM context_turns a "
                    "JOIN context_turns m ON m.agent_id = a.agent_id AND m.session_id = a.session_id "
                    "WHERE a.id = ANY(:ids) AND a.agent_id = :agent ORDER BY a.id, m.created_at, m.id"
                ),
                {"ids": wanted, "agent": self.agent_id},
            ).all()
            self.sessions.update({a: [] for a in wanted})
            for m in mates:
                self.tokens[int(m.id)] = tuple(m.terms or ())
                self.sessions[int(m.anchor)].append(int(m.id))
        return self.sessions[anchor]


def _snapshot(conn: Connection, agent_id: str, kinds: Sequence[str], params: SearchIn) -> tuple[bool, Snapshot]:
    """Whether any of the agent's rows waits to be indexed, and the `Snapshot`, in one statement: on a small store
    each round trip costs about as much as the work it asks for."""
    columns = [f"{pg_terms.UNINDEXED_SQL} AS unindexed"]
    columns += [
        f"(SELECT rows FROM fts_terms WHERE agent_id = :agent AND kind = '{kind}' AND view = 'kw' AND term = :total) "
        f"AS rows_{kind}"
        for kind in kinds
    ]
    if params.mode != "keyword":
        columns += [
            f"(SELECT count(*) FROM {BASE[kind][0]} WHERE embedding_state = 'pending' AND agent_id = :agent) "
            f"AS waiting_{kind}"
            for kind in kinds
        ]
    if "context" in kinds:
        columns.append(f"ARRAY({pg_keywords.SPEAKERS_SQL}) AS speakers")
    found = conn.execute(text(f"SELECT {', '.join(columns)}"), {"agent": agent_id, "total": pg_terms.TOTAL})
    row = found.one()._mapping
    waiting = sum(int(row[f"waiting_{kind}"]) for kind in kinds) if params.mode != "keyword" else 0
    speakers = frozenset(row["speakers"] or ()) if "context" in kinds else frozenset()
    rows = {kind: int(row[f"rows_{kind}"] or 0) for kind in kinds}
    snapshot = Snapshot(version=None, waiting=waiting, speakers=speakers, rows=rows)
    return bool(row["unindexed"]), snapshot


def _candidate_ids(signals: Mapping[str, Mapping[Hashable, float]]) -> dict[str, list[int]]:
    """Every candidate's id, by kind, in id order."""
    ids: dict[str, set[int]] = {"narrative": set(), "context": set()}
    for values in signals.values():
        for kind, row_id in cast(Collection[Key], values):
            ids.setdefault(kind, set()).add(row_id)
    return {kind: sorted(found) for kind, found in ids.items()}


def _times_and_speakers(
    conn: Connection, agent_id: str, candidates: Mapping[str, Sequence[int]], timed: bool, named: Collection[str]
) -> tuple[dict[Key, datetime], dict[int, str]]:
    """When each candidate row happened (when `timed`), and who spoke each candidate turn one of the `named`
    speakers spoke, in one statement."""
    parts: list[str] = []
    params: dict[str, object] = {"agent": agent_id, "named": sorted(named)}
    for kind, table, stamp, speaker in (
        ("narrative", "narratives", "occurred_at", "CAST(NULL AS text)"),
        ("context", "context_turns", "created_at", "speaker"),
    ):
        if not candidates[kind] or not (timed or (kind == "context" and named)):
            continue
        only_named = "" if timed else " AND speaker = ANY(:named)"
        parts.append(
            f"SELECT '{kind}' AS kind, id, {stamp} AS at, {speaker} AS speaker FROM {table} "
            f"WHERE agent_id = :agent AND id = ANY(:{kind}){only_named}"
        )
        params[kind] = list(candidates[kind])
    times: dict[Key, datetime] = {}
    spoken: dict[int, str] = {}
    if not parts:
        return times, spoken
    for r in conn.execute(text(" UNION ALL ".join(parts)), params).all():
        if timed:
            times[(r.kind, int(r.id))] = r.at
        if r.kind == "context" and r.speaker in named:
            spoken[int(r.id)] = r.speaker
    return times, spoken


def _adjacent(conn: Connection, agent_id: str, ids: Sequence[int]) -> dict[int, tuple[int, ...]]:
    """The turns just before and after each turn in its session, in conversation order (created_at, id)."""
    found = conn.execute(
        text(
            """
            SELECT t.id,
                (SELECT p.id FROM context_turns p WHERE p.agent_id = t.agent_id AND p.session_id = t.session_id
                    AND (p.created_at, p.id) < (t.created_at, t.id)
                    ORDER BY p.created_at DESC, p.id DESC LIMIT 1) AS prev,
                (SELECT n.id FROM context_turns n WHERE n.agent_id = t.agent_id AND n.session_id = t.session_id
                    AND (n.created_at, n.id) > (t.created_at, t.id) ORDER BY n.created_at, n.id LIMIT 1) AS next
            FROM context_turns t WHERE t.agent_id = :agent AND t.id = ANY(:ids)
            """
        ),
        {"agent": agent_id, "ids": list(ids)},
    ).all()
    return {int(r.id): tuple(int(j) for j in (r.prev, r.next) if j is not None) for r in found}
