"""The candidates of a long-running process: in-memory BM25 and vector indexes, SQLite's FTS5 where BM25 finds nothing.

A process that serves many searches builds its indexes once and refreshes them from the store's
version at each search (`store.catchup`); BM25 (`keyword_index`) answers the keyword views, the
vector index the dense ones. FTS5 (on PostgreSQL, its LIKE lookup; `store.fts`) answers only what
BM25 cannot: a single CJK character, part of an identifier.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime

from tideline_core.domain.inputs import SearchIn
from tideline_core.embedding import Embedder
from tideline_core.numeric import np
from tideline_core.search.glossary import glossary
from tideline_core.search.hybrid import HybridSearch
from tideline_core.search.keyword_index import KeywordIndex
from tideline_core.search.query import named_speakers
from tideline_core.search.signals import (
    Key,
    Signals,
    add_keyword_view,
    candidates,
    fallback_terms,
    speaker_signal,
    time_signal,
)
from tideline_core.search.sources import Query, Snapshot, StoreRows
from tideline_core.search.vector_index import VectorIndex
from tideline_core.search.when import TimeWindow
from tideline_core.store import fts
from tideline_core.store.catchup import high_water
from tideline_core.store.database import Database
from tideline_core.store.embeddings import unembedded

# From this many rows the dense half runs on a thread of its own beside the keyword half (measured:
# less time at 100k rows, nothing at 3k, and at 1k with the ingest worker busy the handoff cost more
# than it saved).
OVERLAP_ROWS = 20_000
DENSE_VIEWS = (("narrative", "base"), ("context", "base"), ("context", "ctx"))  # what the ranking walks


class MemorySource:
    """`CandidateSource` over in-memory indexes of the store (`model`'s vectors); `extracts` as in `HybridSearch`."""

    def __init__(
        self,
        db: Database,
        model: str,
        *,
        vectors: VectorIndex | None = None,
        keywords: KeywordIndex | None = None,
        extracts: bool = False,
    ) -> None:
        self.db = db
        # The indexes hold the corpus, not the queries: two searchers may share them.
        self.index = vectors or VectorIndex(db, model, extracts=extracts)
        self.keywords = keywords or KeywordIndex(db, extracts=extracts)

    def store_rows(self) -> StoreRows:
        """The ranked rows' reader, taking their scripts from the keyword index, which read every row's text."""
        return StoreRows(self.db, known=self.keywords.scripts)

    def build(self, agent_id: str) -> None:
        """Bring every index of the agent up to the store: what its first search would otherwise do (`warming`)."""
        with self.db.read() as conn:
            version = high_water(conn)
        for kind in ("narrative", "context"):
            self.keywords.refresh(agent_id, kind, version)
        for kind, view in DENSE_VIEWS:
            self.index.refresh(agent_id, kind, view, version)
        if self.keywords.bilingual(agent_id):
            glossary()  # where a question's words cross languages: read on first use, else by the first search

    def snapshot(self, agent_id: str, kinds: Sequence[str], params: SearchIn) -> Snapshot:
        with self.db.read() as conn:  # read before any index refresh: a later write bumps it for next time
            version = high_water(conn)
            waiting = unembedded(conn, agent_id, kinds) if params.mode != "keyword" else 0
        return Snapshot(version=version, waiting=waiting)

    def speaker_names(self, q: Query) -> Collection[str]:
        self.keywords.refresh(q.agent_id, "context", q.snapshot.version)
        return self.keywords.speaker_names(q.agent_id)

    def overlaps(self, agent_id: str, kinds: Sequence[str]) -> bool:
        return sum(self.index.rows(agent_id, kind) for kind in kinds) >= OVERLAP_ROWS

    def reading(self) -> AbstractContextManager[None]:
        # A read of SQLite costs no round trip: nothing to share (and a held read transaction would not see what
        # another connection commits meanwhile).
        return nullcontext()

    def nearest(
        self, q: Query, walks: Sequence[tuple[str, str]], vector: np.ndarray, depth: int
    ) -> list[list[tuple[int, float]]]:
        return [self.walk(q, kind, view, vector, depth) for kind, view in walks]

    def walk(self, q: Query, kind: str, view: str, vector: np.ndarray, depth: int) -> list[tuple[int, float]]:
        """The dense view's `depth` nearest rows of `kind` to `vector`, as (id, cosine)."""
        p = q.params
        return self.index.search(q.agent_id, kind, vector, depth, p.since, p.until, view, q.snapshot.version)

    def keyword_candidates(self, q: Query, signals: Signals) -> None:
        for kind in q.kinds:
            self._keyword_signals(q, kind, signals)

    def _keyword_signals(self, q: Query, kind: str, signals: Signals) -> None:
        agent_id, params, version = q.agent_id, q.params, q.snapshot.version
        found_any = False
        views = self.keywords.search_views(
            agent_id, kind, q.terms, q.depth, params.since, params.until, version, q.groups
        )
        for view, found in views.items():
            add_keyword_view(signals, kind, view, found)
            found_any = found_any or bool(found)
        if found_any:
            return
        fts_terms = fallback_terms(params, q.lines)
        if not fts_terms:
            return
        with self.db.read() as conn:
            hits = fts.search(conn, kind, agent_id, fts_terms, q.depth, params.since, params.until)
        # FTS holds every row; only those the keyword index holds are searchable (it reads past the dream's
        # extracts when they are left out, and an empty index of memories must not let them in this way).
        held = self.keywords.times_of(agent_id, kind, [i for i, _ in hits], version)
        signals.setdefault("kw", {}).update({(kind, i): s for i, s in hits if i in held})

    def row_signals(
        self, q: Query, windows: Sequence[TimeWindow], named_in: Sequence[str] | None, signals: Signals
    ) -> None:
        if windows:
            times: dict[Key, datetime] = {}
            for kind in ("narrative", "context"):
                found = self.keywords.times_of(q.agent_id, kind, candidates(signals, kind), q.snapshot.version)
                times.update({(kind, row_id): when for row_id, when in found.items()})
            time_signal(windows, times, signals)
        if named_in is not None:
            named = named_speakers([t for t in named_in if t], self.keywords.speaker_names(q.agent_id))
            if named:
                spoken = self.keywords.speakers_of(q.agent_id, candidates(signals, "context"))
                speaker_signal(named, spoken, signals)

    def session_joins(
        self, q: Query, ranked: Sequence[tuple[int, float]], turns: Mapping[int, float]
    ) -> Mapping[int, float]:
        return self.keywords.joins(q.agent_id, ranked, q.terms, turns)

    def adjacent(self, agent_id: str, turn_ids: Sequence[int]) -> Mapping[int, tuple[int, ...]]:
        return self.keywords.neighbours(agent_id, turn_ids)


def searcher(
    db: Database,
    embedder: Embedder,
    *,
    query_timeout: float = 2.0,
    vectors: VectorIndex | None = None,
    keywords: KeywordIndex | None = None,
    extracts: bool = False,
) -> HybridSearch:
    """The ranking over in-memory indexes of `db` (given ones, to share them between searchers, or its own)."""
    source = MemorySource(db, embedder.model, vectors=vectors, keywords=keywords, extracts=extracts)
    return HybridSearch(embedder, source, source.store_rows(), query_timeout=query_timeout, extracts=extracts)
