"""Keyword search for a process that answers once and exits (a hook without a server), over the persisted FTS5 index.

`HybridSearch` ranks with in-memory indexes that a long-running process builds once and then
refreshes cheaply; built from scratch they cost about 1.5 s at 10,000 memories and 15 s at
100,000, which a process started for one prompt would pay on every prompt. `ColdSearch` asks the
store's FTS5 tables instead (`store.fts.ranked`; every write keeps them up to date) and ranks the
way HybridSearch's keyword mode does, with the signals the store answers at once:

- ``kw``: FTS5's bm25() of each row (FTS5's k1 1.2, b 0.75 and porter stemmer, where the
  in-memory index uses 0.9, 0.4 and a stemmer of its own: close rankings, not equal ones);
- ``kw_ctx``: a memory's own ``kw``; for the best turns and the turns right after them, the
  higher ``kw`` of the turn and the turn before it in its session (standing in for BM25 over the
  two texts together, so a short reply still meets the question it answers), else the turn's own;
- ``time`` and ``speaker`` over the rows the keywords found; then HybridSearch's fusion, weights,
  neighbour spreading and hits.

Measured with `tideline eval`'s data (keyword mode, this searcher against the in-memory one):
LoCoMo turn R@5/10/20 0.665/0.743/0.806 against 0.682/0.761/0.810, MADial-zh 0.543/0.643/0.716
against 0.571/0.652/0.754 (a dialogue's words cannot be weighed in an FTS5 query: its most salient
ones are asked for, each alike). Nothing is embedded: asked for hybrid or dense search it answers
by keyword and says so (`SearchOutcome.degraded`). On PostgreSQL, which has no FTS5, a cold service
ranks over `pg_source` (BM25 over the database's tsvectors, no per-agent state) instead.

A long-running process on SQLite answers from here too while an agent's in-memory indexes are being
built on a thread of their own (`warming`).
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import Connection, func, select

from tideline_core.domain.inputs import ConversationLine, SearchIn
from tideline_core.embedding import Embedder, NoEmbedder
from tideline_core.search.fusion import combine, rank, spread_to_neighbours
from tideline_core.search.hits import SearchHit, SearchOutcome, hits_of, in_parts
from tideline_core.search.query import KEYWORDS_PER_LINE, LINE_DECAY, SELF_LINE_WEIGHT, named_speakers
from tideline_core.search.salience import salient_words
from tideline_core.search.signals import candidates, evidence_of, lifted_evidence, time_signal
from tideline_core.search.sources import StoreRows
from tideline_core.search.weights import (
    CONVERSATION_WEIGHTS,
    FLOORS,
    GAMMA,
    HIDDEN_MARGIN,
    KEYWORD_DEPTH,
    KINDS,
    QUESTION_WEIGHTS,
    TIME_LINES,
)
from tideline_core.search.when import TimeWindow, mentioned_times
from tideline_core.store import fts
from tideline_core.store.database import Database
from tideline_core.store.lookup import owned_rows
from tideline_core.store.schema import ContextTurn, Narrative
from tideline_core.text.dates import utcnow
from tideline_core.text.tokens import query_terms

CONTEXT_DEPTH = 200  # the best turns whose neighbours in their session are looked up (kw_ctx, spreading)
MAX_TERMS = 48  # a long paste's last distinct words: each costs the FTS5 lookup a posting list
SALIENT_WORDS = 20  # of a dialogue (measured on MADial-zh: 10 too few, 30 no better)
NO_MODEL = "semantic search unavailable (this process searches the keyword index only); results are keyword-only"
Key = tuple[str, int]


@dataclass(frozen=True)
class _Turn:
    session: str
    speaker: str
    at: datetime


class ColdSearch:
    """Keyword search over the store's FTS5 tables, nothing held in memory; a `Searcher` as `HybridSearch` is."""

    def __init__(self, db: Database, *, extracts: bool = False) -> None:
        self.db = db
        self.store_rows = StoreRows(db)
        self.extracts = extracts
        self.embedder: Embedder = NoEmbedder()

    def forget_queries(self) -> None:
        """Nothing to forget: no query is embedded here."""

    def search(self, agent_id: str, params: SearchIn, *, exclude: Collection[Key] = ()) -> SearchOutcome:
        """The agent's rows for `params` by keyword, best first; a compound question and `exclude` as in
        HybridSearch.search."""
        return in_parts(params, lambda asked: self._rank(agent_id, asked, exclude))

    def _rank(self, agent_id: str, params: SearchIn, exclude: Collection[Key]) -> SearchOutcome:
        """One ranking of the agent's rows for `params` (`search`)."""
        lines = list(params.conversation)
        texts = [t for t in (params.query, *(x.text for x in lines[-TIME_LINES:])) if t]
        terms = _terms(params.query, lines)
        kinds = KINDS[params.kinds]
        windows = [w for text in texts for w in mentioned_times(text, utcnow())]
        signals: dict[str, dict[Hashable, float]] = {"kw": {}, "kw_ctx": {}}
        neighbours: dict[Hashable, tuple[Hashable, ...]] = {}
        turns: dict[int, _Turn] = {}
        wanted = params.limit + len(exclude) + HIDDEN_MARGIN  # fewer by the rarer words: the common ones count too
        with self.db.snapshot() as conn:  # every lookup below sees one state of the store
            for kind in kinds:
                found = fts.ranked(
                    conn, kind, agent_id, terms, KEYWORD_DEPTH, params.since, params.until, wanted=wanted
                )
                if kind == "narrative":  # a memory has no turns around it: it is its own context, as in hybrid
                    signals["kw"].update({(kind, i): s for i, s in found})
                    signals["kw_ctx"].update({(kind, i): s for i, s in found})
                else:
                    turns = _turn_signals(conn, agent_id, found, signals, neighbours)
            if windows:
                _time_signal(conn, agent_id, windows, signals, turns)
            if turns:
                _speaker_signal(conn, agent_id, [params.query, *(x.text for x in lines)], signals, turns)
        scores, parts = combine(signals, weights=CONVERSATION_WEIGHTS if lines else QUESTION_WEIGHTS, floors=FLOORS)
        evidence = evidence_of(signals, dense=None)
        if neighbours:
            spread = spread_to_neighbours(scores, neighbours, gamma=GAMMA)
            for key, value in spread.items():
                if value > scores[key]:
                    parts[key] = {**parts[key], "neighbour": value - scores[key]}
            scores = spread
            lifted_evidence(evidence, parts, neighbours)
        if exclude:
            scores = {key: value for key, value in scores.items() if key not in exclude}
        # A few more than asked: superseded narratives (and extracts, when left out) are dropped on loading.
        ranked = [
            (cast(Key, key), score) for key, score in rank(scores, top_k=params.limit + HIDDEN_MARGIN, first=evidence)
        ]
        return SearchOutcome(
            query=params.query,
            hits=self._hits(agent_id, ranked, parts, evidence)[: params.limit],
            mode="keyword",
            degraded=None if params.mode == "keyword" else NO_MODEL,
            terms=tuple(terms),
            dates=tuple(dict.fromkeys(w.describe() for w in windows)),
        )

    def _hits(
        self,
        agent_id: str,
        ranked: list[tuple[Key, float]],
        parts: Mapping[Hashable, dict[str, float]],
        evidence: Mapping[Hashable, Collection[str]],
    ) -> list[SearchHit]:
        narrative_ids = [key[1] for key, _ in ranked if key[0] == "narrative"]
        turn_ids = [key[1] for key, _ in ranked if key[0] == "context"]
        rows = self.store_rows.rows(agent_id, narrative_ids, turn_ids)
        return hits_of(rows, ranked, parts, {}, evidence, extracts=self.extracts)


def _terms(query: str, lines: Sequence[ConversationLine]) -> list[str]:
    """What FTS5 is asked for: the question's words and, of a dialogue, its SALIENT_WORDS most salient ones.

    A dialogue's words weigh as in HybridSearch (`query.conversation_terms`: TF-IDF per line, newer
    lines and the other party's more); FTS5 weighs every term of a query alike, so the heaviest
    are asked for. Of a long paste, its last MAX_TERMS distinct words.
    """
    weights: dict[str, float] = {}
    for age, line in enumerate(reversed(lines)):
        weight = LINE_DECAY**age * (SELF_LINE_WEIGHT if line.is_self else 1.0)
        for word, salience in salient_words(line.text, KEYWORDS_PER_LINE):
            weights[word] = weights.get(word, 0.0) + weight * salience
    heaviest = sorted(weights, key=lambda word: -weights[word])[:SALIENT_WORDS]
    return query_terms(" ".join([*heaviest, query]))[-MAX_TERMS:]


def _turn_signals(
    conn: Connection,
    agent_id: str,
    found: Sequence[tuple[int, float]],
    signals: dict[str, dict[Hashable, float]],
    neighbours: dict[Hashable, tuple[Hashable, ...]],
) -> dict[int, _Turn]:
    """The found turns' kw and kw_ctx, and the neighbours of the best ones (into the arguments); the turns read.

    The best CONTEXT_DEPTH turns get the turns just before and after them in their session (in
    conversation order, by time and then id, as the in-memory index orders them) as neighbours,
    each way; a best turn, and the turn right after one, the kw_ctx of the higher score of it and
    the turn before it (the maximum measured as well as the sum on LoCoMo, without lifting turns
    over memories). Other found turns keep their own score as their kw_ctx.
    """
    kw = dict(found)
    for i, score in found:
        signals["kw"][("context", i)] = score
        signals["kw_ctx"][("context", i)] = score
    turns = _turns(conn, agent_id, kw)
    best = [i for i, _ in found[:CONTEXT_DEPTH] if i in turns]
    if not best:
        return turns
    table = ContextTurn.__table__
    session, order = table.c.session_id, (table.c.created_at, table.c.id)
    sessions = select(
        table.c.id,
        func.lag(table.c.id).over(partition_by=session, order_by=order).label("before"),
        func.lead(table.c.id).over(partition_by=session, order_by=order).label("after"),
    ).where(table.c.agent_id == agent_id, session.in_(sorted({turns[i].session for i in best})))
    window = sessions.subquery()
    beside: dict[int, set[int]] = {}
    previous: dict[int, int] = {}
    for r in conn.execute(select(window).where(window.c.id.in_(best))):
        for other in (r.before, r.after):
            if other is not None:
                beside.setdefault(r.id, set()).add(other)
                beside.setdefault(other, set()).add(r.id)
        if r.before is not None:
            previous[r.id] = r.before
        if r.after is not None:
            previous[r.after] = r.id
    for i, near in beside.items():
        neighbours[("context", i)] = tuple(("context", j) for j in sorted(near))
    for i, before in previous.items():
        signals["kw_ctx"][("context", i)] = max(kw.get(i, 0.0), kw.get(before, 0.0))
    turns.update(_turns(conn, agent_id, [i for i in previous if i not in turns]))
    return turns


def _turns(conn: Connection, agent_id: str, ids: Iterable[int]) -> dict[int, _Turn]:
    table = ContextTurn.__table__
    columns = (table.c.id, table.c.session_id, table.c.speaker, table.c.created_at)
    return {r.id: _Turn(r.session_id, r.speaker, r.created_at) for r in owned_rows(conn, table, agent_id, ids, columns)}


def _time_signal(
    conn: Connection,
    agent_id: str,
    windows: Sequence[TimeWindow],
    signals: dict[str, dict[Hashable, float]],
    turns: Mapping[int, _Turn],
) -> None:
    """Rows the keywords found that happened around a time the query names, by closeness (as in hybrid)."""
    table = Narrative.__table__
    ids = candidates(signals, "narrative")
    times: dict[Key, datetime] = {
        ("narrative", r.id): r.occurred_at
        for r in owned_rows(conn, table, agent_id, ids, (table.c.id, table.c.occurred_at))
    }
    times.update({("context", i): turns[i].at for i in candidates(signals, "context") if i in turns})
    time_signal(windows, times, signals)


def _speaker_signal(
    conn: Connection,
    agent_id: str,
    texts: Sequence[str],
    signals: dict[str, dict[Hashable, float]],
    turns: Mapping[int, _Turn],
) -> None:
    """Found turns by a speaker the query names, unless it names every speaker (as in hybrid)."""
    table = ContextTurn.__table__
    everyone = conn.execute(select(table.c.speaker).where(table.c.agent_id == agent_id).distinct()).scalars()
    named = named_speakers([t for t in texts if t], list(everyone))
    if not named:
        return
    found = candidates(signals, "context")
    lifted: dict[Hashable, float] = {("context", i): 1.0 for i in found if i in turns and turns[i].speaker in named}
    if lifted:
        signals["speaker"] = lifted
