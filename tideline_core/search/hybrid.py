"""Hybrid search over narratives and context turns: keyword, dense, speaker, time and neighbour signals in one ranking.

The recipe (measured with `tideline eval` on LoCoMo, MADial-zh and MemDaily; docs/retrieval.md has
what was tried and kept):

- keyword: in-memory BM25 (``keyword_index.KeywordIndex``) over each row (``kw``) and, for a context
  turn, over the previous turn + the turn (``kw_ctx``), a long Chinese word and the words inside it
  scoring once (``query.word_groups``); SQLite FTS5 only as a fallback when BM25 finds nothing
  (single CJK characters, parts of identifiers);
- dense: e5 cosine over each row (``dense``) and, for a context turn, over the turn with up to two
  preceding turns of its session (``ctx``);
- ``speaker``: turns by a speaker the query names (only among turns another signal found); when
  only turns are searched, the question's dense view leaves the speakers' names out, since this
  signal carries who and a name in the text pulls toward every turn of that speaker;
- ``time``: rows from around a date the query (or a dialogue's latest lines) names, by closeness to
  it (``when.py``; also only among turns another signal found);
- the dense views as margins over the query's similarity to unrelated texts of the row's script
  (``reference.py``), so languages meet on one scale: in a store where every row is a candidate,
  min-max over raw cosines put every row of the query's own language above the one in the other
  that bears on it; within one script a margin orders and scales as the cosine does;
- fused by min-max score fusion with per-signal weights (a flat dense view weighs less, ``FLAT``);
- ``join``: the session mates of a top turn that holds one of the query's identifiers, moved toward
  it when they share its rarest other words (``joins.py``: who a question identifies by one turn is
  named only by a relation word in another);
- then each context turn lifted by ``GAMMA`` × the best score of its adjacent turns (an answer
  often sits beside the hit).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

from sqlalchemy import select

from tideline_core.domain.inputs import ConversationLine, SearchIn
from tideline_core.domain.memory_text import with_amendment
from tideline_core.domain.records import AmendmentNote, NarrativeRecord
from tideline_core.embedding import Embedder, normalize
from tideline_core.errors import ConfigurationError, EmbedderUnavailable
from tideline_core.numeric import np
from tideline_core.search.fusion import combine, rank, spread_to_neighbours
from tideline_core.search.joins import JoinRules
from tideline_core.search.keyword_index import KeywordIndex
from tideline_core.search.query import (
    conversation_terms,
    conversation_texts,
    merge_terms,
    named_speakers,
    question_terms,
    without_names,
    word_groups,
)
from tideline_core.search.reference import OTHER, Reference, meaningful, script_of
from tideline_core.search.signals import (
    Key,
    Signals,
    add_keyword_view,
    evidence_of,
    fallback_terms,
    lifted_evidence,
    speaker_signal,
    time_signal,
)
from tideline_core.search.vector_index import VectorIndex
from tideline_core.search.when import TimeWindow, mentioned_times
from tideline_core.store import fts
from tideline_core.store.catchup import StoreVersion, high_water
from tideline_core.store.database import Database
from tideline_core.store.embeddings import unembedded
from tideline_core.store.lookup import chunks
from tideline_core.store.narratives import load_narratives, turn_corrections
from tideline_core.store.schema import ContextTurn, Narrative
from tideline_core.store.schema import is_extract as extract_row
from tideline_core.store.turns import load_turns
from tideline_core.text.dates import utcnow

KINDS = {"all": ("narrative", "context"), "narratives": ("narrative",), "context": ("context",)}
# Weights measured on LoCoMo (questions) and MADial (dialogues); a dialogue's words are noisier
# than a question's, so keyword signals weigh less there.
# Beside the dense context view, the keyword one (the previous turn + the turn) weighs half (measured on
# LoCoMo and MemDaily); without it, in keyword mode, it is the only context signal and weighs in full.
QUESTION_WEIGHTS = {"kw": 1.0, "kw_ctx": 0.5, "dense": 0.5, "ctx": 1.0, "speaker": 0.7, "time": 1.0}
KEYWORD_QUESTION_WEIGHTS = {**QUESTION_WEIGHTS, "kw_ctx": 1.0}
CONVERSATION_WEIGHTS = {"kw": 0.25, "kw_ctx": 0.25, "dense": 0.5, "ctx": 0.6, "speaker": 0.7, "time": 1.0}
# The lowest possible score of a signal (BM25 0, closeness 0), so a lone weak match stays weak.
FLOORS = {"kw": 0.0, "kw_ctx": 0.0, "time": 0.0}
# A dense view whose ten best cosines lie within this of each other tells nothing apart (fusion.py).
FLAT = {"dense": 0.005, "ctx": 0.005}
DENSE_DEPTH = 100  # dense candidates per view: min-max over a deeper list flattens the top
KEYWORD_DEPTH = 1000
GAMMA = 0.2  # neighbour spreading
# From this many rows the dense half runs on a thread of its own beside the keyword half (measured:
# 8 ms less at 100k rows, nothing at 3k, and at 1k with the ingest worker busy the handoff cost more
# than it saved).
OVERLAP_ROWS = 20_000
QUERY_CACHE_SIZE = 512  # query vectors kept for repeated query texts
HIDDEN_MARGIN = 10  # rows ranked past the limit, standing in for superseded narratives dropped on loading
TIME_LINES = 2  # the latest dialogue lines whose dates count


@dataclass(frozen=True)
class SearchHit:
    """A row found: `text` is what is shown of it, a memory's gesture or a turn's content, with the latest
    amendment of the memory (of a memory written from the turn) marked after it (`memory_text.with_amendment`)."""

    kind: str
    id: int
    score: float
    text: str
    occurred_at: datetime
    session_id: str = ""
    speaker: str = ""
    weight: float | None = None
    tags: tuple[str, ...] = ()
    signals: dict[str, float] = field(default_factory=dict)  # each signal's contribution to `score`
    similarity: float | None = None  # the row's own cosine to the query, when the dense view saw it
    amended: AmendmentNote | None = None  # the latest amendment marked at the end of `text`
    # The signals that found the row on its own merit (`signals.evidence_of`); none: it is here by rank alone.
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchOutcome:
    query: str
    hits: list[SearchHit]
    mode: str
    degraded: str | None = None
    terms: tuple[str, ...] = ()
    dates: tuple[str, ...] = ()  # the time windows the query named, e.g. 'June 2023'
    embed_ms: float = 0.0  # of the search's time, the model pass over the query (0 when remembered)
    embedded: tuple[str, ...] = ()  # the texts whose vectors made the semantic query (none in keyword mode)
    unembedded: int = 0  # rows of the searched kinds still without a vector (0 in keyword mode: not needed)


@dataclass
class _Semantic:
    """What the dense half of a search found: the query vector (None: why not), the model's time, the candidates."""

    vector: np.ndarray | None = None
    degraded: str | None = None
    embed_ms: float = 0.0
    signals: dict[str, dict[Hashable, float]] = field(default_factory=dict)
    error: Exception | None = None


@dataclass(frozen=True)
class _Snapshot:
    """What a search reads of the store before it ranks: the version to refresh the indexes to (None: no
    in-memory index is refreshed), the rows still without a vector, and the speakers' names when read up front."""

    version: StoreVersion | None
    waiting: int
    speakers: frozenset[str] = frozenset()


@dataclass(frozen=True)
class _Query:
    """One search as the candidate sources see it: whose rows of which kinds, for what, in which words."""

    agent_id: str
    kinds: Sequence[str]
    params: SearchIn
    lines: Sequence[ConversationLine]
    terms: dict[str, float]
    groups: Mapping[str, str]
    snapshot: _Snapshot


class HybridSearch:
    """Reads the database directly (no worker involved); the query embedding is computed here."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        *,
        query_timeout: float = 2.0,
        vectors: VectorIndex | None = None,
        keywords: KeywordIndex | None = None,
        extracts: bool = False,
    ) -> None:
        self.db = db
        # Whether results include the dream's extracts: session digests and extractive memories, text taken
        # from conversation the search covers anyway (they took places from the turns they repeat).
        self.extracts = extracts
        self.embedder = embedder
        # The indexes hold the corpus, not the queries: two searchers may share them.
        self.index = vectors or VectorIndex(db, embedder.model, extracts=extracts)
        self.keywords = keywords or KeywordIndex(db, extracts=extracts)
        self.reference = Reference(embedder)
        self.query_timeout = query_timeout
        # Agents repeat themselves (the same question next turn, the same recent lines re-sent): a
        # repeated query text costs no model pass.
        self._recent_queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._recent_lock = threading.Lock()

    def forget_queries(self) -> None:
        """Drop the remembered query vectors (a measurement that must pay for every model pass)."""
        with self._recent_lock:
            self._recent_queries.clear()

    def _query_vector(self, texts: Sequence[str]) -> tuple[np.ndarray | None, str | None, float]:
        """The summed, normalized query vector of `texts`, why there is none, and the model time in ms."""
        took = 0.0
        with self._recent_lock:
            known = {t: self._recent_queries[t] for t in texts if t in self._recent_queries}
            for t in known:
                self._recent_queries.move_to_end(t)
        fresh = list(dict.fromkeys(t for t in texts if t not in known))
        if fresh:
            started = time.perf_counter()
            try:
                rows = np.asarray(self.embedder.queries(fresh, timeout=self.query_timeout), dtype=np.float32)
            except (EmbedderUnavailable, ConfigurationError) as exc:
                took = (time.perf_counter() - started) * 1000
                return None, f"semantic search unavailable ({exc}); results are keyword-only", took
            took = (time.perf_counter() - started) * 1000
            with self._recent_lock:
                for text, row in zip(fresh, rows, strict=True):
                    known[text] = self._recent_queries[text] = row
                while len(self._recent_queries) > QUERY_CACHE_SIZE:
                    self._recent_queries.popitem(last=False)
        total = np.sum([known[t] for t in texts], axis=0)
        return normalize(total), None, took

    def search(self, agent_id: str, params: SearchIn, *, exclude: Collection[Key] = ()) -> SearchOutcome:
        """Rank the agent's rows for a question (`params.query`) or a dialogue's recent lines, or both.

        `exclude`: (kind, id) of rows to leave out of the ranking (they still lift their neighbours),
        so the top `params.limit` are all new; cheaper than asking for more and dropping them.
        """
        lines = list(params.conversation)
        if lines:
            terms = merge_terms(conversation_terms(lines), question_terms(params.query))
            texts = conversation_texts(lines) + ([params.query] if params.query else [])
            weights = CONVERSATION_WEIGHTS
        else:
            terms, texts, weights = question_terms(params.query), [params.query], QUESTION_WEIGHTS
        kinds = KINDS[params.kinds]
        groups = word_groups([params.query, *(x.text for x in lines)])
        q = _Query(agent_id, kinds, params, lines, terms, groups, self._snapshot(agent_id, kinds, params))
        if not lines and kinds == ("context",) and params.mode != "keyword":
            # Among turns alone, who a question is about is the speaker signal's (or, when it names
            # everyone, tells nothing apart): the dense view gets the question without the names.
            texts = [without_names(params.query, self._names_to_leave_out(q))]
        signals: dict[str, dict[Hashable, float]] = {}
        semantic = _Semantic()
        overlap = self._overlaps(agent_id, kinds)
        if params.mode == "hybrid" and overlap:
            # The model pass and the matrix products release the GIL: over a large store they run
            # beside the keyword scoring, which is Python, instead of after it.
            worker = threading.Thread(target=self._dense_signals, args=(q, texts, semantic), daemon=True)
            worker.start()
            self._keyword_candidates(q, signals)
            worker.join()
        elif params.mode == "hybrid":
            self._keyword_candidates(q, signals)
            self._dense_signals(q, texts, semantic)
        elif params.mode == "dense":
            self._dense_signals(q, texts, semantic)
        if semantic.error is not None:
            raise semantic.error
        vector, degraded, embed_ms = semantic.vector, semantic.degraded, semantic.embed_ms
        mode = params.mode if vector is not None or params.mode == "keyword" else "keyword"
        if mode == "keyword" and params.mode != "hybrid":
            self._keyword_candidates(q, signals)
        for name, found in semantic.signals.items():  # after the keyword views, as the fusion always saw them
            signals.setdefault(name, {}).update(found)
        similarity = dict(signals.get("dense", {}))
        floors = self.reference.floors(vector) if vector is not None else None
        if floors is not None:
            self._margins(agent_id, floors.fusion, signals)
        now = utcnow()
        windows = [
            w
            for text in (params.query, *(x.text for x in lines[-TIME_LINES:]))
            if text
            for w in mentioned_times(text, now)
        ]
        named_in = [params.query, *(x.text for x in lines)] if "context" in kinds and mode != "dense" else None
        self._row_signals(q, windows, named_in, signals)
        if mode == "keyword" and weights is QUESTION_WEIGHTS:
            weights = KEYWORD_QUESTION_WEIGHTS
        scores, parts = combine(signals, weights=weights, floors=FLOORS, flat=FLAT)
        evidence = evidence_of(signals, dense=floors.bar if floors is not None else None)
        if "context" in kinds and mode != "dense":
            self._join(q, scores, parts)
        scores = self._spread(agent_id, scores, parts, params.limit, exclude, evidence)
        if exclude:
            scores = {key: value for key, value in scores.items() if key not in exclude}
        # A few more than asked: superseded narratives (and digests, when left out) are dropped on loading.
        ranked = [(cast(Key, key), score) for key, score in rank(scores, top_k=params.limit + HIDDEN_MARGIN)]
        ordered_terms = tuple(sorted(terms, key=lambda t: (-terms[t], t)))
        return SearchOutcome(
            query=params.query,
            hits=self._hydrate(agent_id, ranked, parts, similarity, evidence)[: params.limit],
            mode=mode,
            degraded=degraded,
            terms=ordered_terms,
            dates=tuple(dict.fromkeys(w.describe() for w in windows)),
            embed_ms=embed_ms,
            embedded=tuple(texts) if vector is not None else (),
            unembedded=q.snapshot.waiting,
        )

    # The candidate sources below are where a subclass answers from other indexes (`pg_search`):
    # the recipe above reads the store only through them.

    def _snapshot(self, agent_id: str, kinds: Sequence[str], params: SearchIn) -> _Snapshot:
        """The store's version (to refresh the indexes to) and its rows still without a vector."""
        with self.db.read() as conn:  # read before any index refresh: a later write bumps it for next time
            version = high_water(conn)
            waiting = unembedded(conn, agent_id, kinds) if params.mode != "keyword" else 0
        return _Snapshot(version=version, waiting=waiting)

    def _names_to_leave_out(self, q: _Query) -> Collection[str]:
        """Every speaker's name, for a question among turns whose dense view leaves them out."""
        self.keywords.refresh(q.agent_id, "context", q.snapshot.version)
        return self.keywords.speaker_names(q.agent_id)

    def _overlaps(self, agent_id: str, kinds: Sequence[str]) -> bool:
        """Whether the dense half is worth a thread of its own beside the keyword half."""
        return sum(self.index.rows(agent_id, kind) for kind in kinds) >= OVERLAP_ROWS

    def _nearest(self, q: _Query, kind: str, view: str, vector: np.ndarray, depth: int) -> list[tuple[int, float]]:
        """The dense view's `depth` nearest rows of `kind` to `vector`, as (id, cosine)."""
        p = q.params
        return self.index.search(q.agent_id, kind, vector, depth, p.since, p.until, view, q.snapshot.version)

    def _walk(
        self, q: _Query, walks: Sequence[tuple[str, str]], vector: np.ndarray, depth: int
    ) -> list[list[tuple[int, float]]]:
        """`_nearest` of each (kind, view) of `walks`, in their order (here one after the other)."""
        return [self._nearest(q, kind, view, vector, depth) for kind, view in walks]

    def _dense_signals(self, q: _Query, texts: Sequence[str], out: _Semantic) -> None:
        """The query vector and the dense views' candidates, into `out` (an error is kept for the caller)."""
        try:
            out.vector, out.degraded, out.embed_ms = self._query_vector(texts)
            if out.vector is None:
                return
            depth = max(DENSE_DEPTH, q.params.limit)
            walks = [
                (kind, view) for kind in q.kinds for view in ("base", "ctx") if view == "base" or kind == "context"
            ]
            for (kind, view), found in zip(walks, self._walk(q, walks, out.vector, depth), strict=True):
                out.signals.setdefault("dense" if view == "base" else "ctx", {}).update(
                    {(kind, i): s for i, s in found}
                )
                if kind != "context":  # see signals.add_keyword_view: a memory is its own context
                    out.signals.setdefault("ctx", {}).update({(kind, i): s for i, s in found})
        except Exception as exc:  # handed over whole: the searching thread raises it as its own
            out.error = exc

    def _margins(self, agent_id: str, floors: Mapping[str, float], signals: Signals) -> None:
        """The dense views' cosines as margins over the floor of each row's script (`reference`)."""
        keys = cast(set[Key], {key for name in ("dense", "ctx") for key in signals.get(name, {})})
        script = self._scripts(agent_id, keys)
        for name in ("dense", "ctx"):
            if name in signals:
                signals[name] = {
                    key: _margin(s, floors, script.get(cast(Key, key))) for key, s in signals[name].items()
                }

    def _scripts(self, agent_id: str, keys: Collection[Key]) -> dict[Key, str | None]:
        """The script (`reference.script_of`) of each row's text; None for a text too short to mean anything."""
        out: dict[Key, str | None] = {}
        with self.db.read() as conn:
            for kind, table, column in (
                ("narrative", Narrative, Narrative.gesture),
                ("context", ContextTurn, ContextTurn.content),
            ):
                ids = [i for k, i in keys if k == kind]
                for chunk in chunks(ids):
                    for row_id, text in conn.execute(
                        select(table.id, column).where(table.agent_id == agent_id, table.id.in_(chunk))
                    ):
                        out[(kind, int(row_id))] = script_of(text) if meaningful(text) else None
        return out

    def _keyword_candidates(self, q: _Query, signals: dict[str, dict[Hashable, float]]) -> None:
        """The keyword views' candidates of every kind, into `signals`."""
        for kind in q.kinds:
            self._keyword_signals(q.agent_id, kind, q.terms, q.params, q.lines, signals, q.snapshot.version, q.groups)

    def _keyword_signals(
        self,
        agent_id: str,
        kind: str,
        terms: dict[str, float],
        params: SearchIn,
        lines: Sequence[ConversationLine],
        signals: dict[str, dict[Hashable, float]],
        version: StoreVersion | None,
        groups: Mapping[str, str] | None = None,
    ) -> None:
        found_any = False
        views = self.keywords.search_views(
            agent_id, kind, terms, KEYWORD_DEPTH, params.since, params.until, version, groups
        )
        for view, found in views.items():
            add_keyword_view(signals, kind, view, found)
            found_any = found_any or bool(found)
        if found_any:
            return
        fts_terms = fallback_terms(params, lines)
        if not fts_terms:
            return
        with self.db.read() as conn:
            hits = fts.search(conn, kind, agent_id, fts_terms, KEYWORD_DEPTH, params.since, params.until)
        # FTS holds every row; only those the keyword index holds are searchable (it reads past the dream's
        # extracts when they are left out, and an empty index of memories must not let them in this way).
        held = self.keywords.times_of(agent_id, kind, [i for i, _ in hits], version)
        signals.setdefault("kw", {}).update({(kind, i): s for i, s in hits if i in held})

    def _row_signals(
        self, q: _Query, windows: Sequence[TimeWindow], named_in: Sequence[str] | None, signals: Signals
    ) -> None:
        """The time signal and, when `named_in` are the texts that may name speakers, the speaker signal."""
        self._time_signal(q.agent_id, windows, signals, q.snapshot.version)
        if named_in is not None:
            self._speaker_signal(q.agent_id, named_in, signals)

    def _time_signal(
        self,
        agent_id: str,
        windows: Sequence[TimeWindow],
        signals: dict[str, dict[Hashable, float]],
        version: StoreVersion | None,
    ) -> None:
        if not windows:
            return
        times: dict[Key, datetime] = {}
        for kind in ("narrative", "context"):
            for row_id, when in self.keywords.times_of(agent_id, kind, _candidates(signals, kind), version).items():
                times[(kind, row_id)] = when
        time_signal(windows, times, signals)

    def _speaker_signal(self, agent_id: str, texts: Sequence[str], signals: dict[str, dict[Hashable, float]]) -> None:
        named = named_speakers([t for t in texts if t], self.keywords.speaker_names(agent_id))
        if not named:
            return
        speaker_signal(named, self.keywords.speakers_of(agent_id, _candidates(signals, "context")), signals)

    def _join(self, q: _Query, scores: dict[Hashable, float], parts: dict[Hashable, dict[str, float]]) -> None:
        """Move the session mates that a join links to one of the top turns toward it (`joins.session_joins`)."""
        turns = {cast(Key, key)[1]: value for key, value in scores.items() if cast(Key, key)[0] == "context"}
        if not turns:
            return
        best = rank(cast(Mapping[Hashable, float], turns), top_k=JoinRules().anchors)
        ranked = [(cast(int, i), value) for i, value in best]
        for turn_id, lift in self._session_joins(q, ranked, turns).items():
            key = ("context", turn_id)
            scores[key] = scores.get(key, 0.0) + lift
            parts[key] = {**parts.get(key, {}), "join": lift}

    def _spread(
        self,
        agent_id: str,
        scores: dict[Hashable, float],
        parts: dict[Hashable, dict[str, float]],
        limit: int,
        exclude: Collection[Key] = (),
        evidence: dict[Hashable, set[str]] | None = None,
    ) -> dict[Hashable, float]:
        """Each turn lifted by its neighbours (`GAMMA`); `evidence` gains what a neighbour with its own lent."""
        if not scores:
            return scores
        # Spreading adds at most GAMMA × the best score, so a candidate further than that below the
        # current limit-th score cannot reach the top: only the others need their neighbours looked up.
        ordered = sorted((v for k, v in scores.items() if k not in exclude), reverse=True) or [0.0]
        reach = ordered[min(limit, len(ordered)) - 1] - GAMMA * ordered[0]
        keys = cast(list[Key], [key for key, value in scores.items() if value >= reach])
        turn_ids = [key[1] for key in keys if key[0] == "context"]
        if not turn_ids:
            return scores
        beside = self._adjacent(agent_id, turn_ids)
        neighbours: dict[Hashable, tuple[Hashable, ...]] = {
            ("context", i): tuple(("context", j) for j in near) for i, near in beside.items() if near
        }
        spread = spread_to_neighbours(scores, cast(Mapping[Hashable, tuple[Hashable, ...]], neighbours), gamma=GAMMA)
        for key in neighbours:
            if spread[key] > scores[key]:
                parts[key] = {**parts[key], "neighbour": spread[key] - scores[key]}
        if evidence is not None:
            lifted_evidence(evidence, parts, neighbours)
        return spread

    def _session_joins(
        self, q: _Query, ranked: Sequence[tuple[int, float]], turns: Mapping[int, float]
    ) -> Mapping[int, float]:
        """The lifts `joins.session_joins` gives the session mates of the top turns in `ranked`."""
        return self.keywords.joins(q.agent_id, ranked, q.terms, turns)

    def _adjacent(self, agent_id: str, turn_ids: Sequence[int]) -> Mapping[int, tuple[int, ...]]:
        """The turns just before and after each turn in its session."""
        return self.keywords.neighbours(agent_id, turn_ids)

    def _hydrate(
        self,
        agent_id: str,
        ranked: list[tuple[Key, float]],
        parts: Mapping[Hashable, dict[str, float]],
        similarity: Mapping[Hashable, float],
        evidence: Mapping[Hashable, Collection[str]],
    ) -> list[SearchHit]:
        keys = [key for key, _ in ranked]
        narrative_ids = [key[1] for key in keys if key[0] == "narrative"]
        turn_ids = [key[1] for key in keys if key[0] == "context"]
        with self.db.read() as conn:
            narratives = load_narratives(conn, agent_id, narrative_ids)
            turns = load_turns(conn, agent_id, turn_ids)
            corrected = turn_corrections(conn, agent_id, turn_ids)
        hits: list[SearchHit] = []
        for (kind, row_id), score in ranked:
            contributions = {name: round(value, 4) for name, value in parts.get((kind, row_id), {}).items()}
            cosine = similarity.get((kind, row_id))
            matched = tuple(sorted(evidence.get((kind, row_id), ())))
            if kind == "narrative" and row_id in narratives:
                n = narratives[row_id]
                if n.superseded_by is not None or (not self.extracts and is_extract(n)):
                    continue
                hits.append(
                    SearchHit(
                        "narrative",
                        n.id,
                        score,
                        with_amendment(n.gesture, n.amended),
                        n.occurred_at,
                        weight=n.weight,
                        tags=n.tags,
                        signals=contributions,
                        similarity=cosine,
                        amended=n.amended,
                        evidence=matched,
                    )
                )
            elif kind == "context" and row_id in turns:
                t = turns[row_id]
                hits.append(
                    SearchHit(
                        "context",
                        t.id,
                        score,
                        with_amendment(t.content, corrected.get(t.id)),
                        t.created_at,
                        session_id=t.session_id,
                        speaker=t.speaker,
                        signals=contributions,
                        similarity=cosine,
                        amended=corrected.get(t.id),
                        evidence=matched,
                    )
                )
        return hits


def is_extract(n: NarrativeRecord) -> bool:
    """One of the dream's extracts (`store.schema.EXTRACT_SQL`): a digest it wrote, a memory it copied from a turn."""
    return extract_row(n.narrative_type, n.origin)


def _margin(cosine: float, floors: Mapping[str, float], script: str | None) -> float:
    """A cosine over the floor of the row's script; at most 0 for a row too short to mean anything."""
    if script is None:
        return min(0.0, cosine - floors[OTHER])
    return cosine - floors[script]


def _candidates(signals: Mapping[str, Mapping[Hashable, float]], kind: str) -> list[int]:
    """Ids of the rows of `kind` that any signal found so far, ascending."""
    keys = cast(set[Key], {key for values in signals.values() for key in values})
    return sorted(key[1] for key in keys if key[0] == kind)
