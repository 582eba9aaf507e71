"""The in-memory keyword index: BM25 views per (agent, kind), refreshed from the store by row id.

Rows are immutable once written, so each search first pulls only rows newer than the last one
seen (a primary-key range scan), and older ones that were still in flight then (``IdCursor``): a
write is keyword-searchable on the very next query, also when another process wrote it. A memory's
text grows only by an amendment, itself a new row: the amendments are pulled the same way, and each
memory they touch is indexed again with its whole text. Per
context turn it also keeps what the ranking needs besides text: session order (for the previous
turn and for neighbour spreading), speaker and time.

Views: ``kw`` = the row's search text (``memory_text``); ``kw_ctx`` (context turns only) = the
previous turn of the same session followed by this turn, so a short reply ("yes, last June")
matches the question it answers.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Connection, Row, Select, literal, select

from tideline_core.domain.memory_text import NarrativeFields, narrative_search_text, turn_text
from tideline_core.search.bm25 import BM25Index
from tideline_core.search.glossary import CROSSING_WEIGHT, crossing_terms
from tideline_core.search.joins import JoinCorpus, session_joins
from tideline_core.search.query import expand_prefixes
from tideline_core.search.reference import OTHER, row_script
from tideline_core.store.catchup import IdCursor, StoreVersion, catch_up, ids_after
from tideline_core.store.database import Database
from tideline_core.store.lookup import chunks, fetched_with_pauses, no_pause
from tideline_core.store.schema import Amendment, ContextTurn, Narrative, NarrativeTag, extract_of
from tideline_core.text.terms import analyze
from tideline_core.text.tokens import has_cjk, is_prefix

K1 = 0.9  # measured on LoCoMo and MADial (docs/retrieval.md): short texts want less tf saturation
B = 0.4  # and weaker length normalization than the textbook 1.2 / 0.75
# A build calls its pause hook every this many rows: analysing text is Python and holds the GIL, so a
# build on a thread of its own lets a search on another thread run only where it stops.
PAUSE_ROWS = 50


def _stamp(value: datetime) -> float:
    return value.timestamp()


@dataclass
class _Shard:
    kw: BM25Index
    kw_ctx: BM25Index | None
    cursor: IdCursor = field(default_factory=IdCursor)  # which row ids are absorbed
    amended: IdCursor = field(default_factory=IdCursor)  # which amendment ids are (narratives only)
    times: dict[int, float] = field(default_factory=dict)
    speaker: dict[int, str] = field(default_factory=dict)
    speaker_turns: dict[str, int] = field(default_factory=dict)
    speaker_words: set[str] = field(default_factory=set)  # the analyzed words of every speaker's name
    tokens: dict[int, tuple[str, ...]] = field(default_factory=dict)
    session_of: dict[int, str] = field(default_factory=dict)
    sessions: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    version: StoreVersion | None = None  # the store's high-water marks when last refreshed
    lock: threading.Lock = field(default_factory=threading.Lock)
    scripts: set[str] = field(default_factory=set)  # "han", "latin": the scripts the indexed text is written in
    # Each row's own script (`reference.row_script` of its text), where it is not OTHER (every indexed row is in
    # `times`): the dense views' floor, which a search would otherwise read the rows' texts again for.
    script: dict[int, str | None] = field(default_factory=dict)

    def note_script(self, row_id: int, text: str) -> None:
        script = row_script(text)
        if script != OTHER:
            self.script[row_id] = script
        else:
            self.script.pop(row_id, None)

    def script_of(self, row_id: int) -> str | None:
        return self.script.get(row_id, OTHER)

    def note_scripts(self, tokens: Iterable[str]) -> None:
        if len(self.scripts) < 2:
            self.scripts.update(
                "han" if has_cjk(t) else "latin" for t in tokens if has_cjk(t) or (t.isascii() and t.isalpha())
            )

    def bilingual(self) -> bool:
        """Whether the indexed text holds words of both Chinese and Latin script (then a question may cross)."""
        return len(self.scripts) == 2

    def add_turn(self, row_id: int, session: str, speaker: str, content: str, at: float) -> None:
        tokens = tuple(analyze(turn_text(speaker, content)))
        self.kw.add(row_id, tokens)
        self.note_scripts(tokens)
        self.note_script(row_id, content)
        self.times[row_id] = at
        self.speaker[row_id] = speaker
        if speaker not in self.speaker_turns:
            self.speaker_words.update(analyze(speaker))
        self.speaker_turns[speaker] = self.speaker_turns.get(speaker, 0) + 1
        self.tokens[row_id] = tokens
        self.session_of[row_id] = session
        order = self.sessions.setdefault(session, [])
        pos = bisect.bisect_left(order, (at, row_id))
        order.insert(pos, (at, row_id))
        assert self.kw_ctx is not None
        before = self.tokens[order[pos - 1][1]] if pos > 0 else ()
        self.kw_ctx.add(row_id, before + tokens)
        if pos + 1 < len(order):  # a turn arriving out of order becomes the previous turn of the next one
            nxt = order[pos + 1][1]
            self.kw_ctx.add(nxt, tokens + self.tokens[nxt])

    def neighbours(self, row_id: int) -> tuple[int, ...]:
        session = self.session_of.get(row_id)
        if session is None:
            return ()
        order = self.sessions[session]
        pos = bisect.bisect_left(order, (self.times[row_id], row_id))
        return tuple(order[j][1] for j in (pos - 1, pos + 1) if 0 <= j < len(order))


def _narrative_columns(extracts: bool) -> Select[Any]:
    """What the index reads of a narrative: its text columns, when it happened, and whether it is read past."""
    return select(
        Narrative.id,
        Narrative.gesture,
        Narrative.context,
        Narrative.moment,
        Narrative.cognition_direction,
        Narrative.entities_role,
        Narrative.occurred_at,
        (literal(False) if extracts else extract_of()).label("skipped"),
    )


def _search_texts(conn: Connection, rows: Sequence[Row[Any]], pause: Callable[[], None]) -> dict[int, str]:
    """Each narrative's search text (`memory_text`), its tags and amendments read in chunks, `pause` before each."""
    ids = [int(r.id) for r in rows]
    tags: dict[int, list[str]] = {}
    notes: dict[int, list[str]] = {}
    for chunk in chunks(ids):
        pause()
        for narrative_id, tag in conn.execute(
            select(NarrativeTag.narrative_id, NarrativeTag.tag).where(NarrativeTag.narrative_id.in_(chunk))
        ):
            tags.setdefault(int(narrative_id), []).append(tag)
        for narrative_id, note in conn.execute(
            select(Amendment.narrative_id, Amendment.note)
            .where(Amendment.narrative_id.in_(chunk))
            .order_by(Amendment.id)
        ):
            notes.setdefault(int(narrative_id), []).append(note)
    return {
        int(r.id): narrative_search_text(
            NarrativeFields(
                r.gesture, r.context, r.moment, r.cognition_direction, r.entities_role, tuple(tags.get(int(r.id), ()))
            ),
            notes.get(int(r.id), ()),
        )
        for r in rows
    }


class KeywordIndex:
    """BM25 over analyzed text (jieba + stopwords + light stemming), per agent and kind."""

    def __init__(self, db: Database, *, k1: float = K1, b: float = B, extracts: bool = True) -> None:
        self.db = db
        # False: the dream's extracts (digests, extractive memories) are read past, never indexed, so they
        # weigh in no statistic either (document frequencies, lengths).
        self.extracts = extracts
        self.k1 = k1
        self.b = b
        self._shards: dict[tuple[str, str], _Shard] = {}
        self._guard = threading.Lock()
        # Called every PAUSE_ROWS rows absorbed, holding the shard's lock: it may wait (`warming` waits while
        # a search answers from the store) but must not touch this index.
        self.pause: Callable[[], None] = no_pause

    def _shard(self, agent_id: str, kind: str) -> _Shard:
        with self._guard:
            shard = self._shards.get((agent_id, kind))
            if shard is None:
                ctx = BM25Index(k1=self.k1, b=self.b) if kind == "context" else None
                shard = self._shards[(agent_id, kind)] = _Shard(kw=BM25Index(k1=self.k1, b=self.b), kw_ctx=ctx)
            return shard

    def refresh(self, agent_id: str, kind: str, version: StoreVersion | None = None) -> _Shard:
        """The agent's shard with every row written since the last refresh absorbed.

        Skipped when `version` (read by the caller before this call) equals the one seen at the last
        refresh and no older id is still awaited: then nothing can have been written since.
        """
        shard = self._shard(agent_id, kind)
        with shard.lock:
            if version is not None and version == shard.version and not shard.cursor.holes and not shard.amended.holes:
                return shard
            if kind == "context":
                self._absorb_turns(agent_id, shard)
            else:
                self._absorb_narratives(agent_id, shard)
            shard.version = version  # only once absorbed: a failed load must not be skipped next time
        return shard

    def _absorb_turns(self, agent_id: str, shard: _Shard) -> None:
        with self.db.snapshot() as conn:
            rows = fetched_with_pauses(
                conn.execute(
                    select(
                        ContextTurn.id,
                        ContextTurn.session_id,
                        ContextTurn.speaker,
                        ContextTurn.content,
                        ContextTurn.created_at,
                    )
                    .where(ids_after(ContextTurn.id, shard.cursor), ContextTurn.agent_id == agent_id)
                    .order_by(ContextTurn.id)
                ),
                PAUSE_ROWS,
                self.pause,
            )
            newest, visible = catch_up(conn, ContextTurn.__table__, shard.cursor, (int(r.id) for r in rows))
        for n, r in enumerate(rows):
            if n % PAUSE_ROWS == 0:
                self.pause()
            shard.add_turn(int(r.id), r.session_id, r.speaker, r.content, _stamp(r.created_at))
        shard.cursor.settle(newest, visible, time.monotonic())

    def _absorb_narratives(self, agent_id: str, shard: _Shard) -> None:
        with self.db.snapshot() as conn:
            rows = fetched_with_pauses(
                conn.execute(
                    _narrative_columns(self.extracts)
                    .where(ids_after(Narrative.id, shard.cursor), Narrative.agent_id == agent_id)
                    .order_by(Narrative.id)
                ),
                PAUSE_ROWS,
                self.pause,
            )
            newest, visible = catch_up(conn, Narrative.__table__, shard.cursor, [int(r.id) for r in rows])
            notes = conn.execute(
                select(Amendment.id, Amendment.narrative_id)
                .where(ids_after(Amendment.id, shard.amended), Amendment.agent_id == agent_id)
                .order_by(Amendment.id)
            ).all()
            noted, noted_visible = catch_up(conn, Amendment.__table__, shard.amended, [int(r.id) for r in notes])
            fresh = {int(r.id) for r in rows}
            # A memory already indexed that got a note since: indexed again, whole (one not yet indexed comes whole).
            again = sorted(({int(r.narrative_id) for r in notes} - fresh) & set(shard.times))
            for chunk in chunks(again):
                rows += conn.execute(_narrative_columns(self.extracts).where(Narrative.id.in_(chunk))).all()
            texts = _search_texts(conn, [r for r in rows if not r.skipped], self.pause)
        for n, r in enumerate(rows):
            if n % PAUSE_ROWS == 0:
                self.pause()
            if not r.skipped:
                tokens = analyze(texts[int(r.id)])
                shard.kw.add(int(r.id), tokens)
                shard.note_scripts(tokens)
                shard.note_script(int(r.id), r.gesture)
                shard.times[int(r.id)] = _stamp(r.occurred_at)
        shard.cursor.settle(newest, visible, time.monotonic())
        shard.amended.settle(noted, noted_visible, time.monotonic())

    def search_views(
        self,
        agent_id: str,
        kind: str,
        terms: Mapping[str, float],
        k: int,
        since: datetime | None = None,
        until: datetime | None = None,
        version: StoreVersion | None = None,
        groups: Mapping[str, str] | None = None,
    ) -> dict[str, list[tuple[int, float]]]:
        """Top-k (row id, BM25 score) of every view of `kind` ('kw', and 'kw_ctx' for turns), one refresh."""
        shard = self.refresh(agent_id, kind, version)
        views = {"kw": shard.kw} if shard.kw_ctx is None else {"kw": shard.kw, "kw_ctx": shard.kw_ctx}
        if not terms:
            return {view: [] for view in views}
        out: dict[str, list[tuple[int, float]]] = {}
        with shard.lock:
            if any(is_prefix(term) for term in terms):
                terms, begun = expand_prefixes(terms, shard.kw.words_beginning)
                groups = {**groups, **begun} if groups else begun
                if not terms:
                    return {view: [] for view in views}
            if shard.bilingual():
                # A word of the question in the other language is the same word: asked for as one of its own.
                crossing = crossing_terms(terms, lambda term: shard.kw.df(term) > 0)
                terms = {**terms, **dict.fromkeys(crossing, CROSSING_WEIGHT)} if crossing else terms
            for view, index in views.items():
                if since is None and until is None:
                    out[view] = [(cast(int, i), s) for i, s in index.score(terms, top_k=k, groups=groups)]
                    continue
                lo = since.timestamp() if since is not None else float("-inf")
                hi = until.timestamp() if until is not None else float("inf")
                hits = [
                    (cast(int, i), s)
                    for i, s in index.score(terms, groups=groups)
                    if lo <= shard.times[cast(int, i)] <= hi
                ]
                out[view] = hits[:k]
        return out

    def scripts(self, agent_id: str, keys: Collection[tuple[str, int]]) -> dict[tuple[str, int], str | None]:
        """The script of each of these (kind, row id) that is indexed (as of the last refresh); the rest left out."""
        out: dict[tuple[str, int], str | None] = {}
        for kind in ("narrative", "context"):
            ids = [i for k, i in keys if k == kind]
            shard = self._shards.get((agent_id, kind)) if ids else None
            if shard is None:
                continue
            with shard.lock:
                out.update({(kind, i): shard.script_of(i) for i in ids if i in shard.times})
        return out

    def bilingual(self, agent_id: str) -> bool:
        """Whether any of the agent's indexed rows (as of the last refresh) mix Chinese and Latin words."""
        return any(self._shard(agent_id, kind).bilingual() for kind in ("narrative", "context"))

    def neighbours(self, agent_id: str, ids: Iterable[int]) -> dict[int, tuple[int, ...]]:
        """The turns just before and after each context turn in its session."""
        shard = self._shard(agent_id, "context")
        with shard.lock:
            return {i: shard.neighbours(i) for i in ids}

    def joins(
        self,
        agent_id: str,
        ranked: Sequence[tuple[int, float]],
        terms: Mapping[str, float],
        scores: Mapping[int, float],
    ) -> dict[int, float]:
        """Lifts of the session mates of the top turns in `ranked` that a join links to them (see `joins`)."""
        shard = self._shard(agent_id, "context")
        with shard.lock:
            corpus = JoinCorpus(
                tokens_of=lambda i: shard.tokens.get(i, ()),
                session_of=lambda i: [j for _, j in shard.sessions.get(shard.session_of.get(i, ""), ())],
                rows_with=shard.kw.df,
                rows=len(shard.kw),
                speakers=shard.speaker_words,
            )
            return session_joins(ranked, terms, scores, corpus)

    def speaker_names(self, agent_id: str) -> set[str]:
        """Every speaker of the agent's context turns (as of the last refresh)."""
        shard = self._shard(agent_id, "context")
        with shard.lock:
            return set(shard.speaker_turns)

    def times_of(
        self, agent_id: str, kind: str, ids: Sequence[int], version: StoreVersion | None = None
    ) -> dict[int, datetime]:
        """When each row happened (a turn's time, a memory's occurred_at)."""
        shard = self.refresh(agent_id, kind, version)
        with shard.lock:
            return {i: datetime.fromtimestamp(shard.times[i], UTC) for i in ids if i in shard.times}

    def speakers_of(self, agent_id: str, ids: Sequence[int]) -> dict[int, str]:
        shard = self._shard(agent_id, "context")
        with shard.lock:
            return {i: shard.speaker[i] for i in ids if i in shard.speaker}
