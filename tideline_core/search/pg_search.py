"""Hybrid search answered by PostgreSQL's indexes: BM25 over jieba tsvectors, pgvector HNSW; no per-agent state.

`HybridSearch`'s recipe and contract (`SearchOutcome`, the same signals, weights, fusion, joins
and neighbour spreading), with every candidate list read from the database at query time:

- ``kw`` / ``kw_ctx``: BM25 (the in-memory index's k1, b and word groups) over the `fts_kw` and
  `fts_ctx` tsvectors (`pg_keywords`); rows written since the last query are indexed first
  (`pg_keywords.catch_up`), so a write is found by the next query. When BM25 finds nothing, the
  store's LIKE lookup answers (a single CJK character, part of an identifier), as on SQLite;
- ``dense`` / ``ctx``: cosine through the HNSW index of each view (`store.pg_vectors`);
- ``time`` / ``speaker``: from the candidates' times and speakers, read for them alone;
- ``join``: `joins.session_joins` over the anchors' terms and their sessions' turns, read for them;
- ``neighbour``: the adjacent turns of the candidates that can still reach the top, read for them.

A server process therefore holds no per-agent index and starts in the same time at any size; the
query vectors of recent query texts are still remembered (`HybridSearch._query_vector`). Vectors of
another size than `pg_vectors.DIM` have no HNSW copy: those are searched by the in-memory index.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Hashable, Mapping, Sequence
from datetime import datetime
from typing import cast

from sqlalchemy import Connection, text

from tideline_core.inputs import ConversationLine, SearchIn
from tideline_core.search import pg_keywords
from tideline_core.search.bm25 import analyze
from tideline_core.search.fusion import combine, rank, spread_to_neighbours
from tideline_core.search.hybrid import (
    CONVERSATION_WEIGHTS,
    DENSE_DEPTH,
    FLAT,
    FLOORS,
    GAMMA,
    HIDDEN_MARGIN,
    KEYWORD_DEPTH,
    KEYWORD_QUESTION_WEIGHTS,
    KINDS,
    MIN_CLOSENESS,
    QUESTION_WEIGHTS,
    TIME_LINES,
    HybridSearch,
    Key,
    SearchOutcome,
    _Semantic,
)
from tideline_core.search.joins import JoinCorpus, JoinRules, session_joins
from tideline_core.search.query import (
    conversation_terms,
    conversation_texts,
    merge_terms,
    named_speakers,
    question_terms,
    without_names,
    word_groups,
)
from tideline_core.search.when import TimeWindow, closeness, mentioned_times
from tideline_core.store import fts, pg_vectors
from tideline_core.store.embeddings import unembedded
from tideline_core.timeutil import utcnow
from tideline_core.tokens import query_terms

Signals = dict[str, dict[Hashable, float]]


class PostgresSearch(HybridSearch):
    """`HybridSearch` on PostgreSQL with pgvector: the same ranking, every index in the database.

    Only `search` is its own; the parent's in-memory indexes stay empty unless vectors of another
    size than `pg_vectors.DIM` must be searched.
    """

    def search(self, agent_id: str, params: SearchIn, *, exclude: Collection[Key] = ()) -> SearchOutcome:
        lines = list(params.conversation)
        if lines:
            terms = merge_terms(conversation_terms(lines), question_terms(params.query))
            texts = conversation_texts(lines) + ([params.query] if params.query else [])
            weights = CONVERSATION_WEIGHTS
        else:
            terms, texts, weights = question_terms(params.query), [params.query], QUESTION_WEIGHTS
        kinds = KINDS[params.kinds]
        groups = word_groups([params.query, *(x.text for x in lines)])
        with self.db.write() as conn:
            pg_keywords.catch_up(conn, agent_id)
        with self.db.read() as conn:
            waiting = unembedded(conn, agent_id, kinds) if params.mode != "keyword" else 0
            speakers = pg_keywords.speakers(conn, agent_id) if "context" in kinds else set()
        if not lines and kinds == ("context",) and params.mode != "keyword":
            texts = [without_names(params.query, speakers)]  # see HybridSearch.search
        signals: Signals = {}
        semantic = _Semantic()
        if params.mode == "hybrid":
            # The model pass and the index walks wait on other processes: the keyword queries run meanwhile.
            worker = threading.Thread(target=self._dense, args=(agent_id, kinds, texts, params, semantic), daemon=True)
            worker.start()
            self._keywords(agent_id, kinds, terms, params, lines, signals, groups)
            worker.join()
        elif params.mode == "dense":
            self._dense(agent_id, kinds, texts, params, semantic)
        if semantic.error is not None:
            raise semantic.error
        vector, degraded, embed_ms = semantic.vector, semantic.degraded, semantic.embed_ms
        mode = params.mode if vector is not None or params.mode == "keyword" else "keyword"
        if mode == "keyword" and params.mode != "hybrid":
            self._keywords(agent_id, kinds, terms, params, lines, signals, groups)
        for name, found in semantic.signals.items():
            signals.setdefault(name, {}).update(found)
        now = utcnow()
        windows = [
            w
            for text_ in (params.query, *(x.text for x in lines[-TIME_LINES:]))
            if text_
            for w in mentioned_times(text_, now)
        ]
        with self.db.read() as conn:
            times, spoken = _about(conn, agent_id, signals, with_speakers="context" in kinds and mode != "dense")
        _time_signal(windows, times, signals)
        if "context" in kinds and mode != "dense":
            named = named_speakers([t for t in (params.query, *(x.text for x in lines)) if t], speakers)
            lifted: dict[Hashable, float] = {("context", i): 1.0 for i, sp in spoken.items() if sp in named}
            if lifted:
                signals["speaker"] = lifted
        if mode == "keyword" and weights is QUESTION_WEIGHTS:
            weights = KEYWORD_QUESTION_WEIGHTS
        scores, parts = combine(signals, weights=weights, floors=FLOORS, flat=FLAT)
        with self.db.read() as conn:
            if "context" in kinds and mode != "dense":
                self._join_pg(conn, agent_id, terms, scores, parts, speakers)
            scores = self._spread_pg(conn, agent_id, scores, parts, params.limit, exclude)
        if exclude:
            scores = {key: value for key, value in scores.items() if key not in exclude}
        ranked = [(cast(Key, key), score) for key, score in rank(scores, top_k=params.limit + HIDDEN_MARGIN)]
        ordered_terms = tuple(sorted(terms, key=lambda t: (-terms[t], t)))
        return SearchOutcome(
            query=params.query,
            hits=self._hydrate(agent_id, ranked, parts, signals.get("dense", {}))[: params.limit],
            mode=mode,
            degraded=degraded,
            terms=ordered_terms,
            dates=tuple(dict.fromkeys(w.describe() for w in windows)),
            embed_ms=embed_ms,
            embedded=tuple(texts) if vector is not None else (),
            unembedded=waiting,
        )

    def _dense(
        self, agent_id: str, kinds: Sequence[str], texts: Sequence[str], params: SearchIn, out: _Semantic
    ) -> None:
        """The query vector and the dense views' candidates, into `out` (an error is kept for the caller)."""
        try:
            out.vector, out.degraded, out.embed_ms = self._query_vector(texts)
            if out.vector is None:
                return
            depth = max(DENSE_DEPTH, params.limit)
            for kind in kinds:
                for view, name in (("base", "dense"), ("ctx", "ctx")):
                    if name == "ctx" and kind != "context":
                        continue
                    found = self._nearest(agent_id, kind, view, out.vector, depth, params)
                    out.signals.setdefault(name, {}).update({(kind, i): s for i, s in found})
                    if kind != "context":  # a memory is its own context (HybridSearch._dense_signals)
                        out.signals.setdefault("ctx", {}).update({(kind, i): s for i, s in found})
        except Exception as exc:  # handed over whole: the searching thread raises it as its own
            out.error = exc

    def _nearest(self, agent_id: str, kind: str, view: str, vector: object, depth: int, params: SearchIn) -> list:
        if len(cast(Sequence[float], vector)) != pg_vectors.DIM:  # no HNSW copy of this size: the in-memory index
            return self.index.search(agent_id, kind, vector, depth, params.since, params.until, view)  # type: ignore[arg-type]
        with self.db.read() as conn:
            return pg_vectors.nearest(
                conn,
                agent_id,
                kind,
                view,
                self.embedder.model,
                vector,  # type: ignore[arg-type]
                depth,
                params.since,
                params.until,
                extracts=self.extracts,
            )

    def _keywords(
        self,
        agent_id: str,
        kinds: Sequence[str],
        terms: Mapping[str, float],
        params: SearchIn,
        lines: Sequence[ConversationLine],
        signals: Signals,
        groups: Mapping[str, str],
    ) -> None:
        with self.db.read() as conn:
            for kind in kinds:
                found_any = False
                for view in ("kw", "kw_ctx") if kind == "context" else ("kw",):
                    found = pg_keywords.search_view(
                        conn,
                        agent_id,
                        kind,
                        view,
                        terms,
                        KEYWORD_DEPTH,
                        params.since,
                        params.until,
                        groups,
                        extracts=self.extracts,
                    )
                    signals.setdefault(view, {}).update({(kind, i): s for i, s in found})
                    if kind != "context":  # a memory stands as its own context (HybridSearch._keyword_signals)
                        signals.setdefault("kw_ctx", {}).update({(kind, i): s for i, s in found})
                    found_any = found_any or bool(found)
                if found_any:
                    continue
                raw = params.query or " ".join(x.text for x in lines[-2:])
                fts_terms = query_terms(raw)
                if fts_terms:
                    hits = fts.search(conn, kind, agent_id, fts_terms, KEYWORD_DEPTH, params.since, params.until)
                    signals.setdefault("kw", {}).update({(kind, i): s for i, s in hits})

    def _join_pg(
        self,
        conn: Connection,
        agent_id: str,
        terms: Mapping[str, float],
        scores: dict[Hashable, float],
        parts: dict[Hashable, dict[str, float]],
        speakers: set[str],
    ) -> None:
        """`HybridSearch._join`, its corpus read from the database for the anchors and their sessions."""
        turns = {cast(Key, key)[1]: value for key, value in scores.items() if cast(Key, key)[0] == "context"}
        if not turns:
            return
        best = rank(cast(Mapping[Hashable, float], turns), top_k=JoinRules().anchors)
        ranked = [(cast(int, i), value) for i, value in best]
        corpus = _JoinReader(conn, agent_id, [i for i, _ in ranked], speakers)
        for turn_id, lift in session_joins(ranked, terms, turns, corpus.corpus()).items():
            key = ("context", turn_id)
            scores[key] = scores.get(key, 0.0) + lift
            parts[key] = {**parts.get(key, {}), "join": lift}

    def _spread_pg(
        self,
        conn: Connection,
        agent_id: str,
        scores: dict[Hashable, float],
        parts: dict[Hashable, dict[str, float]],
        limit: int,
        exclude: Collection[Key],
    ) -> dict[Hashable, float]:
        """`HybridSearch._spread`, the adjacent turns read from the database for the turns that can reach the top."""
        if not scores:
            return scores
        ordered = sorted((v for k, v in scores.items() if k not in exclude), reverse=True) or [0.0]
        reach = ordered[min(limit, len(ordered)) - 1] - GAMMA * ordered[0]
        turn_ids = [cast(Key, k)[1] for k, v in scores.items() if v >= reach and cast(Key, k)[0] == "context"]
        if not turn_ids:
            return scores
        neighbours: dict[Hashable, tuple[Hashable, ...]] = {
            ("context", i): tuple(("context", j) for j in near)
            for i, near in _adjacent(conn, agent_id, turn_ids).items()
        }
        spread = spread_to_neighbours(scores, neighbours, gamma=GAMMA)
        for key in neighbours:
            if spread[key] > scores[key]:
                parts[key] = {**parts[key], "neighbour": spread[key] - scores[key]}
        return spread


class _JoinReader:
    """What `session_joins` reads (`JoinCorpus`), loaded from the database as it is asked for."""

    def __init__(self, conn: Connection, agent_id: str, anchors: Sequence[int], speakers: set[str]) -> None:
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


def _about(
    conn: Connection, agent_id: str, signals: Mapping[str, Mapping[Hashable, float]], *, with_speakers: bool
) -> tuple[dict[Key, datetime], dict[int, str]]:
    """When each candidate row happened, and who spoke each candidate turn."""
    keys = cast(set[Key], {key for values in signals.values() for key in values})
    times: dict[Key, datetime] = {}
    spoken: dict[int, str] = {}
    for kind, table, stamp in (("narrative", "narratives", "occurred_at"), ("context", "context_turns", "created_at")):
        ids = sorted(i for k, i in keys if k == kind)
        if not ids:
            continue
        speaker = ", speaker" if kind == "context" else ""
        found = conn.execute(
            text(f"SELECT id, {stamp} AS at{speaker} FROM {table} WHERE agent_id = :agent AND id = ANY(:ids)"),
            {"agent": agent_id, "ids": ids},
        )
        for r in found:
            times[(kind, int(r.id))] = r.at
            if kind == "context" and with_speakers:
                spoken[int(r.id)] = r.speaker
    return times, spoken


def _time_signal(windows: Sequence[TimeWindow], times: Mapping[Key, datetime], signals: Signals) -> None:
    if not windows:
        return
    lifted: dict[Hashable, float] = {}
    for key, when in times.items():
        near = closeness(windows, when)
        if near >= MIN_CLOSENESS:
            lifted[key] = near
    if lifted:
        signals["time"] = lifted


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
