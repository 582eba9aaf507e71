"""Hybrid search over narratives and context turns: keyword, dense, speaker, time and neighbour signals in one ranking.

The ranking is written once here; its candidates and the facts about them come from a candidate
source (`sources.CandidateSource`: `memory_source`'s in-memory indexes, or `pg_source`'s PostgreSQL
indexes) and the rows it shows from `sources.StoreRows`: nothing else of the store is read. The
recipe (measured with `tideline eval` on LoCoMo, MADial-zh and MemDaily; docs/retrieval.md has what
was tried and kept):

- keyword: BM25 over each row (``kw``) and, for a context turn, over the previous turn + the turn
  (``kw_ctx``), a long Chinese word and the words inside it scoring once (``query.word_groups``);
  the store's own lookup only as a fallback when BM25 finds nothing (single CJK characters, parts
  of identifiers);
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
from typing import cast

from tideline_core.domain.inputs import SearchIn
from tideline_core.embedding import Embedder, normalize
from tideline_core.errors import ConfigurationError, EmbedderUnavailable
from tideline_core.numeric import np
from tideline_core.search.fusion import combine, rank, spread_to_neighbours
from tideline_core.search.hits import SearchHit, SearchOutcome, hits_of, in_parts
from tideline_core.search.joins import JoinRules
from tideline_core.search.query import (
    conversation_terms,
    conversation_texts,
    merge_terms,
    question_parts,
    question_terms,
    without_names,
    word_groups,
)
from tideline_core.search.reference import OTHER, Reference
from tideline_core.search.signals import Key, Signals, evidence_of, lifted_evidence
from tideline_core.search.sources import CandidateSource, Query, StoreRows
from tideline_core.search.weights import (
    CONVERSATION_WEIGHTS,
    DENSE_DEPTH,
    FLAT,
    FLOORS,
    GAMMA,
    HIDDEN_MARGIN,
    KEYWORD_DEPTH,
    KEYWORD_QUESTION_WEIGHTS,
    KINDS,
    QUESTION_WEIGHTS,
    TIME_LINES,
    TRUST,
)
from tideline_core.search.when import mentioned_times
from tideline_core.text.dates import utcnow

QUERY_CACHE_SIZE = 512  # query vectors kept for repeated query texts


@dataclass
class _Semantic:
    """What the dense half of a search found: the query vector (None: why not), the model's time, the candidates."""

    vector: np.ndarray | None = None
    degraded: str | None = None
    embed_ms: float = 0.0
    signals: dict[str, dict[Hashable, float]] = field(default_factory=dict)
    error: Exception | None = None


class HybridSearch:
    """The ranking over one candidate source (no worker involved); the query embedding is computed here.

    Built by `memory_source.searcher` (SQLite: in-memory indexes) or `pg_source.searcher` (PostgreSQL).
    `keyword_depth`: candidates each keyword view hands over (`weights.KEYWORD_DEPTH`; a measurement may ask deeper).
    """

    def __init__(
        self,
        embedder: Embedder,
        source: CandidateSource,
        rows: StoreRows,
        *,
        query_timeout: float = 2.0,
        extracts: bool = False,
        keyword_depth: int = KEYWORD_DEPTH,
    ) -> None:
        self.source = source
        self.keyword_depth = keyword_depth
        self.store_rows = rows
        # Whether results include the dream's extracts: session digests and extractive memories, text taken
        # from conversation the search covers anyway (they took places from the turns they repeat).
        self.extracts = extracts
        self.embedder = embedder
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

        A compound question is also asked part by part, the rankings interleaved (`hits.in_parts`);
        its texts go through the model in one pass. `exclude`: (kind, id) of rows to leave out of the
        ranking (they still lift their neighbours), so the top `params.limit` are all new; cheaper
        than asking for more and dropping them.
        """
        parts = [] if params.conversation else question_parts(params.query)
        if parts and params.mode != "keyword":
            self._query_vector([params.query, *parts])  # one model pass; each ranking finds its vector remembered
        with self.source.reading():
            return in_parts(params, lambda asked: self._rank(agent_id, asked, exclude))

    def _rank(self, agent_id: str, params: SearchIn, exclude: Collection[Key]) -> SearchOutcome:
        """One ranking of the agent's rows for `params` (`search`)."""
        lines = list(params.conversation)
        if lines:
            terms = merge_terms(conversation_terms(lines), question_terms(params.query))
            texts = conversation_texts(lines) + ([params.query] if params.query else [])
            weights = CONVERSATION_WEIGHTS
        else:
            terms, texts, weights = question_terms(params.query), [params.query], QUESTION_WEIGHTS
        kinds = KINDS[params.kinds]
        groups = word_groups([params.query, *(x.text for x in lines)])
        snapshot = self.source.snapshot(agent_id, kinds, params)
        q = Query(agent_id, kinds, params, lines, terms, groups, snapshot, self.keyword_depth)
        if not lines and kinds == ("context",) and params.mode != "keyword":
            # Among turns alone, who a question is about is the speaker signal's (or, when it names
            # everyone, tells nothing apart): the dense view gets the question without the names.
            texts = [without_names(params.query, self.source.speaker_names(q))]
        signals: dict[str, dict[Hashable, float]] = {}
        semantic = _Semantic()
        overlap = self.source.overlaps(agent_id, kinds)
        if params.mode == "hybrid" and overlap:
            # The model pass and the matrix products release the GIL: over a large store they run
            # beside the keyword scoring, which is Python, instead of after it.
            worker = threading.Thread(target=self._dense_signals, args=(q, texts, semantic), daemon=True)
            worker.start()
            self.source.keyword_candidates(q, signals)
            worker.join()
        elif params.mode == "hybrid":
            self.source.keyword_candidates(q, signals)
            self._dense_signals(q, texts, semantic)
        elif params.mode == "dense":
            self._dense_signals(q, texts, semantic)
        if semantic.error is not None:
            raise semantic.error
        vector, degraded, embed_ms = semantic.vector, semantic.degraded, semantic.embed_ms
        mode = params.mode if vector is not None or params.mode == "keyword" else "keyword"
        if mode == "keyword" and params.mode != "hybrid":
            self.source.keyword_candidates(q, signals)
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
        self.source.row_signals(q, windows, named_in, signals)
        if mode == "keyword" and weights is QUESTION_WEIGHTS:
            weights = KEYWORD_QUESTION_WEIGHTS
        scores, parts = combine(signals, weights=weights, floors=FLOORS, flat=FLAT, trust=TRUST)
        evidence = evidence_of(signals, dense=floors.bar if floors is not None else None)
        if "context" in kinds and mode != "dense":
            self._join(q, scores, parts)
        scores = self._spread(agent_id, scores, parts, params.limit, exclude, evidence)
        if exclude:
            scores = {key: value for key, value in scores.items() if key not in exclude}
        # A few more than asked: superseded narratives (and digests, when left out) are dropped on loading.
        ranked = [
            (cast(Key, key), score) for key, score in rank(scores, top_k=params.limit + HIDDEN_MARGIN, first=evidence)
        ]
        ordered_terms = tuple(sorted(terms, key=lambda t: (-terms[t], t)))
        return SearchOutcome(
            query=params.query,
            hits=self._hits(agent_id, ranked, parts, similarity, evidence)[: params.limit],
            mode=mode,
            degraded=degraded,
            terms=ordered_terms,
            dates=tuple(dict.fromkeys(w.describe() for w in windows)),
            embed_ms=embed_ms,
            embedded=tuple(texts) if vector is not None else (),
            unembedded=q.snapshot.waiting,
        )

    def _dense_signals(self, q: Query, texts: Sequence[str], out: _Semantic) -> None:
        """The query vector and the dense views' candidates, into `out` (an error is kept for the caller)."""
        try:
            out.vector, out.degraded, out.embed_ms = self._query_vector(texts)
            if out.vector is None:
                return
            depth = max(DENSE_DEPTH, q.params.limit)
            walks = [
                (kind, view) for kind in q.kinds for view in ("base", "ctx") if view == "base" or kind == "context"
            ]
            for (kind, view), found in zip(walks, self.source.nearest(q, walks, out.vector, depth), strict=True):
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
        script = self.store_rows.scripts(agent_id, keys)
        for name in ("dense", "ctx"):
            if name in signals:
                signals[name] = {
                    key: _margin(s, floors, script.get(cast(Key, key))) for key, s in signals[name].items()
                }

    def _join(self, q: Query, scores: dict[Hashable, float], parts: dict[Hashable, dict[str, float]]) -> None:
        """Move the session mates that a join links to one of the top turns toward it (`joins.session_joins`)."""
        turns = {cast(Key, key)[1]: value for key, value in scores.items() if cast(Key, key)[0] == "context"}
        if not turns:
            return
        best = rank(cast(Mapping[Hashable, float], turns), top_k=JoinRules().anchors)
        ranked = [(cast(int, i), value) for i, value in best]
        for turn_id, lift in self.source.session_joins(q, ranked, turns).items():
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
        beside = self.source.adjacent(agent_id, turn_ids)
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

    def _hits(
        self,
        agent_id: str,
        ranked: list[tuple[Key, float]],
        parts: Mapping[Hashable, dict[str, float]],
        similarity: Mapping[Hashable, float],
        evidence: Mapping[Hashable, Collection[str]],
    ) -> list[SearchHit]:
        narrative_ids = [key[1] for key, _ in ranked if key[0] == "narrative"]
        turn_ids = [key[1] for key, _ in ranked if key[0] == "context"]
        rows = self.store_rows.rows(agent_id, narrative_ids, turn_ids)
        return hits_of(rows, ranked, parts, similarity, evidence, extracts=self.extracts)


def _margin(cosine: float, floors: Mapping[str, float], script: str | None) -> float:
    """A cosine over the floor of the row's script; at most 0 for a row too short to mean anything."""
    if script is None:
        return min(0.0, cosine - floors[OTHER])
    return cosine - floors[script]
