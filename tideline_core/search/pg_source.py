"""The candidates of PostgreSQL's own indexes: BM25 over jieba tsvectors, pgvector HNSW; no per-agent state.

A `CandidateSource` for the one ranking (`hybrid`: the same signals, weights, fusion, joins and
neighbour spreading as over in-memory indexes), with every candidate list read from the database
at query time:

- ``kw`` / ``kw_ctx``: BM25 (the in-memory index's k1, b, word groups and crossing words) over the `fts_kw` and
  `fts_ctx` tsvectors (`pg_keywords`); rows written since the last query are indexed first (up to a
  bound; the embed task indexes a larger backlog), so a write is found by the next query. When BM25
  finds nothing, the store's LIKE lookup answers (a single CJK character, part of an identifier), as
  on SQLite;
- ``dense`` / ``ctx``: cosine through the HNSW index of each view (`store.pg_vectors`);
- ``time`` / ``speaker``: from the candidates' times and speakers, read for them alone;
- ``join``: `joins.session_joins` over the anchors' terms and their sessions' turns, read for them;
- ``neighbour``: the adjacent turns of the candidates that can still reach the top, read for them.

The keyword views and the HNSW walks of one search run side by side, each on a connection of its own
(`side_by_side`): their statements run in PostgreSQL while the threads wait, so a search takes about
its slowest lookup rather than their sum, as far as the cores allow.

A server process therefore holds no per-agent index and starts in the same time at any size; the
query vectors of recent query texts are still remembered (`HybridSearch._query_vector`). Vectors of
another size than `pg_vectors.DIM` have no HNSW copy: those are searched by an in-memory index
(`memory_source`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
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
from tideline_core.search.pg_keywords import ViewStats
from tideline_core.search.query import PREFIX_WORDS, expand_prefixes, named_speakers
from tideline_core.search.signals import Key, Signals, add_keyword_view, fallback_terms, speaker_signal, time_signal
from tideline_core.search.sources import KEYWORD_DEPTH, Query, Snapshot, StoreRows
from tideline_core.search.when import TimeWindow
from tideline_core.store import fts, keywords, pg_vectors
from tideline_core.store.database import Database
from tideline_core.store.embeddings import unembedded
from tideline_core.text.terms import analyze
from tideline_core.text.tokens import is_prefix

KEYWORD_VIEWS = {"narrative": ("kw",), "context": ("kw", "kw_ctx")}
SCRIPTS_KEPT = 1024  # agents whose store's scripts are remembered (then forgotten all at once)
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
            if not keywords.has_unindexed(conn, agent_id):
                return self._snapshot(conn, agent_id, kinds, params)
        with self.db.write() as conn:
            keywords.catch_up(conn, agent_id, most=CATCH_UP_ROWS)
        with self.db.read() as conn:
            return self._snapshot(conn, agent_id, kinds, params)

    def _snapshot(self, conn: Connection, agent_id: str, kinds: Sequence[str], params: SearchIn) -> Snapshot:
        waiting = unembedded(conn, agent_id, kinds) if params.mode != "keyword" else 0
        speakers = pg_keywords.speakers(conn, agent_id) if "context" in kinds else set()
        return Snapshot(version=None, waiting=waiting, speakers=frozenset(speakers))

    def speaker_names(self, q: Query) -> Collection[str]:
        return q.snapshot.speakers

    def overlaps(self, agent_id: str, kinds: Sequence[str]) -> bool:
        # The model pass and the index walks wait on other processes: the keyword queries run meanwhile.
        return True

    def walk(self, q: Query, kind: str, view: str, vector: np.ndarray, depth: int) -> list[tuple[int, float]]:
        """The HNSW walk of one dense view: its `depth` nearest rows of `kind` to `vector`, as (id, cosine)."""
        if len(vector) != pg_vectors.DIM:  # no HNSW copy of this size: the in-memory index
            return self.others.walk(q, kind, view, vector, depth)
        model, since, until = self.model, q.params.since, q.params.until
        with self.db.read() as conn:
            return pg_vectors.nearest(
                conn,
                q.agent_id,
                kind,
                view,
                model,
                vector,
                depth,
                since,
                until,
                extracts=self.extracts,
                ef_search=self.ef_search,
            )

    def nearest(
        self, q: Query, walks: Sequence[tuple[str, str]], vector: np.ndarray, depth: int
    ) -> list[list[tuple[int, float]]]:
        """The HNSW walks side by side, each on a connection of its own."""
        return side_by_side(lambda walk: self.walk(q, walk[0], walk[1], vector, depth), walks)

    def keyword_candidates(self, q: Query, signals: Signals) -> None:
        """Every keyword view scored at once, each on a connection of its own: the server's cores share the work."""
        agent_id, params = q.agent_id, q.params
        views = [(kind, view) for kind in q.kinds for view in KEYWORD_VIEWS[kind]]
        terms, groups = q.terms, q.groups
        with self.db.read() as conn:
            if any(is_prefix(term) for term in terms):
                terms, begun = expand_prefixes(
                    terms, lambda forms: pg_keywords.words_beginning(conn, agent_id, views, forms, PREFIX_WORDS)
                )
                groups = {**groups, **begun}
            stats = pg_keywords.view_stats(conn, agent_id, views, terms)
            # A word of the question in the other language is the same word: asked for as one of its own, of each
            # kind whose rows hold both scripts (as the in-memory index asks each kind's shard).
            crossed = [kind for kind in q.kinds if self._bilingual(conn, agent_id, kind, stats)]
            crossing = dict.fromkeys(crossing_terms(terms, lambda _: True) if crossed else (), CROSSING_WEIGHT)
            if crossing:  # only the crossing words' row counts are new: the views' totals were just read
                more = pg_keywords.view_stats(conn, agent_id, views, crossing)
                stats = {
                    view: replace(read, df={**read.df, **more[view].df}) if view in more else read
                    for view, read in stats.items()
                }
        asked = {kind: {**terms, **crossing} if kind in crossed else terms for kind in q.kinds}
        scored = [view for view in views if view in stats]

        def score(kind_view: tuple[str, str]) -> list[tuple[int, float]]:
            kind, view = kind_view
            with self.db.read() as conn:
                return pg_keywords.search_view(
                    conn,
                    agent_id,
                    kind,
                    view,
                    asked[kind],
                    KEYWORD_DEPTH,
                    params.since,
                    params.until,
                    groups,
                    extracts=self.extracts,
                    stats=stats[kind_view],
                )

        results = dict(zip(scored, side_by_side(score, scored), strict=True))
        for kind in q.kinds:
            found_any = False
            for view in KEYWORD_VIEWS[kind]:
                found = results.get((kind, view), [])
                add_keyword_view(signals, kind, view, found)
                found_any = found_any or bool(found)
            fts_terms = fallback_terms(params, q.lines) if not found_any else []
            if fts_terms:
                with self.db.read() as conn:
                    hits = fts.search(conn, kind, agent_id, fts_terms, KEYWORD_DEPTH, params.since, params.until)
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

        A keyword view hands over up to `KEYWORD_DEPTH` candidates: most queries name neither, and then
        nothing is read at all.
        """
        named = named_speakers([t for t in named_in if t], q.snapshot.speakers) if named_in is not None else set()
        if not windows and not named:
            return
        with self.db.read() as conn:
            candidates = _candidate_ids(signals)
            times = _times(conn, q.agent_id, candidates) if windows else {}
            spoken = _spoken_by(conn, q.agent_id, candidates["context"], named) if named else {}
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


def side_by_side(call: Callable[[_Item], _Result], items: Sequence[_Item]) -> list[_Result]:
    """`call` of each item, in their order: all but the first on threads of their own, the first on this one.

    Each call here is a statement PostgreSQL runs while the thread waits: a search's several index
    lookups then take about as long as its slowest one instead of their sum, as the cores allow.
    """
    if len(items) < 2:
        return [call(item) for item in items]
    with ThreadPoolExecutor(max_workers=len(items) - 1, thread_name_prefix="tideline-pg") as pool:
        later = [pool.submit(call, item) for item in items[1:]]
        first = call(items[0])
        return [first, *(future.result() for future in later)]


class _JoinReader:
    """What `session_joins` reads (`JoinCorpus`), loaded from the database as it is asked for."""

    def __init__(self, conn: Connection, agent_id: str, anchors: Sequence[int], speakers: Collection[str]) -> None:
        self.conn = conn
        self.agent_id = agent_id
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
            mates = self.conn.execute(
                text(
                    "SELECT m.id, tsvector_to_array(m.fts_kw) AS terms FROM context_turns a JOIN context_turns m "
                    "ON m.agent_id = a.agent_id AND m.session_id = a.session_id "
                    "WHERE a.id = :id AND a.agent_id = :agent ORDER BY m.created_at, m.id"
                ),
                {"id": anchor, "agent": self.agent_id},
            ).all()
            self.tokens.update({int(m.id): tuple(m.terms or ()) for m in mates})
            self.sessions[anchor] = [int(m.id) for m in mates]
        return self.sessions[anchor]


def _candidate_ids(signals: Mapping[str, Mapping[Hashable, float]]) -> dict[str, list[int]]:
    """Every candidate's id, by kind, in id order."""
    ids: dict[str, set[int]] = {"narrative": set(), "context": set()}
    for values in signals.values():
        for kind, row_id in cast(Collection[Key], values):
            ids.setdefault(kind, set()).add(row_id)
    return {kind: sorted(found) for kind, found in ids.items()}


def _times(conn: Connection, agent_id: str, candidates: Mapping[str, Sequence[int]]) -> dict[Key, datetime]:
    """When each candidate row happened."""
    times: dict[Key, datetime] = {}
    for kind, table, stamp in (("narrative", "narratives", "occurred_at"), ("context", "context_turns", "created_at")):
        ids = candidates[kind]
        if ids:
            found = conn.execute(
                text(f"SELECT id, {stamp} AS at FROM {table} WHERE agent_id = :agent AND id = ANY(:ids)"),
                {"agent": agent_id, "ids": ids},
            )
            times.update({(kind, int(r.id)): r.at for r in found})
    return times


def _spoken_by(conn: Connection, agent_id: str, ids: Sequence[int], named: Collection[str]) -> dict[int, str]:
    """Who spoke each of the candidate turns `ids` that one of the `named` speakers spoke."""
    if not ids:
        return {}
    found = conn.execute(
        text(
            "SELECT id, speaker FROM context_turns WHERE agent_id = :agent AND id = ANY(:ids) AND speaker = ANY(:named)"
        ),
        {"agent": agent_id, "ids": ids, "named": sorted(named)},
    )
    return {int(r.id): r.speaker for r in found}


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
    )
    return {int(r.id): tuple(int(j) for j in (r.prev, r.next) if j is not None) for r in found}
