"""What an agent does with its memories and conversation: write, record, amend, recall, search, read back.

Writes validate first (the inputs are already parsed), persist in one short transaction, and only
after the commit hand the derived work (embedding) to the job queue: the row is durable whatever
the queue does. Reads go to the store directly; the hits they return are handed to the queue for
attention logging, so a read never writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection

from tideline_core.domain.inputs import AmendmentIn, ContextTurnIn, NarrativeIn, RecallQuery, SearchIn, TimelineQuery
from tideline_core.domain.records import ContextTurnRecord, NarrativeRecord
from tideline_core.search.hits import SearchOutcome
from tideline_core.service.base import ServiceParts
from tideline_core.service.notices import embedding_notice
from tideline_core.store import narratives, turns

if TYPE_CHECKING:
    from tideline_core.search.warming import Build
    from tideline_core.service.results import NarrativeWrite, TurnsRecorded


class MemoryOps(ServiceParts):
    def write_narratives(
        self, agent_id: str, items: Sequence[NarrativeIn], *, key: str | None = None
    ) -> list[NarrativeWrite]:
        """Store narratives in one transaction (all or none), then queue their embedding.

        `key` (optional, an idempotency key) makes a retry return the first call's memories; see `write_once`.
        """
        from tideline_core.service.results import NarrativeWrite

        def write(conn: Connection) -> list[list[Any]]:
            stored = [narratives.insert_narrative(conn, agent_id, item) for item in items]
            return [[w.id, w.weight, w.recurrence] for w in stored]

        written = self.write_once(agent_id, key, "narrative", items, write)
        # A retry asks again too: its first call may have died between the commit and the enqueue.
        queued = self.jobs.embed(agent_id) if written else False
        return [NarrativeWrite(int(i), float(weight), int(recurrence), queued) for i, weight, recurrence in written]

    def write_narrative(self, agent_id: str, data: NarrativeIn, *, key: str | None = None) -> NarrativeWrite:
        (written,) = self.write_narratives(agent_id, [data], key=key)
        return written

    def record_turns(self, agent_id: str, items: Sequence[ContextTurnIn], *, key: str | None = None) -> TurnsRecorded:
        """Store conversation turns verbatim in one transaction (all or none), then queue their embedding."""
        from tideline_core.service.results import TurnsRecorded

        ids = self.write_once(agent_id, key, "turns", items, lambda conn: turns.insert_turns(conn, agent_id, items))
        return TurnsRecorded(tuple(int(i) for i in ids), self.jobs.embed(agent_id) if ids else False)

    def amend(self, agent_id: str, data: AmendmentIn, *, key: str | None = None) -> int:
        """Append a note to one of the agent's narratives; the narrative itself never changes.

        The note is part of the memory's text from the commit on: keyword search finds it by the
        note's words at once, and its embedding is queued again so that meaning search reads it too.
        """

        amendment_id = int(
            self.write_once(agent_id, key, "amendment", [data], lambda conn: narratives.amend(conn, agent_id, data))
        )
        # A retry asks again too, as a write does: its first call may have died between the commit and the enqueue.
        self.jobs.embed(agent_id)
        return amendment_id

    def recall(self, agent_id: str, query: RecallQuery) -> list[NarrativeRecord]:
        """The agent's narratives, newest or heaviest first, filtered; each counts as an attention hit."""
        with self.db.read() as conn:
            records = narratives.recall(
                conn,
                agent_id,
                limit=query.limit,
                narrative_type=query.narrative_type,
                tags=query.tags,
                since=query.since,
                until=query.until,
                order=query.order,
            )
        if records:
            # A recall is a hit without a similarity: the memory was asked for by filter, not by meaning,
            # so it counts as attention but stays out of the heatmap's mean similarity.
            self.jobs.log_attention(agent_id, [(r.id, None) for r in records], "recall")
        return records

    def search(self, agent_id: str, params: SearchIn, *, source: str | None = "search") -> SearchOutcome:
        """Hybrid search over the agent's narratives and turns; the narrative hits go to attention logging as
        `source` (None: a person's search, which is not the agent attending, logs nothing).

        A queue that is down costs only those log entries, never the answer. Rows still waiting for
        their embedding with nothing to embed them (no ingest worker, or no queue) are told in `degraded`.
        """
        outcome = self.searcher.search(agent_id, params)
        if outcome.unembedded and self.embeds:
            notice = embedding_notice(outcome.unembedded, self.jobs.workers())
            if notice:
                outcome = replace(outcome, degraded="; ".join(filter(None, (outcome.degraded, notice))))
        attended = [
            # The cosine when the dense signal saw the hit; otherwise the fused score (capped at 1) stands in.
            (hit.id, hit.similarity if hit.similarity is not None else min(1.0, hit.score))
            for hit in outcome.hits
            if hit.kind == "narrative"
        ]
        if attended and source is not None:
            self.jobs.log_attention(agent_id, attended, source)
        return outcome

    def warm_up(self, agent_id: str) -> Build | None:
        """Start building the agent's search indexes on a thread of their own and return at once; the build
        to wait on, or None when this service's searcher keeps none to build (see `compose`'s `warming`)."""
        from tideline_core.search.warming import WarmingSearch  # a one-shot process never loads the indexes

        return self.searcher.warm_up(agent_id) if isinstance(self.searcher, WarmingSearch) else None

    def timeline(self, agent_id: str, query: TimelineQuery) -> list[ContextTurnRecord]:
        """Turns oldest first: one session from its start, or the latest turns across sessions."""
        with self.db.read() as conn:
            if query.session_id:
                return turns.timeline(
                    conn, agent_id, session_id=query.session_id, since=query.since, until=query.until, limit=query.limit
                )
            latest = turns.timeline(
                conn, agent_id, since=query.since, until=query.until, limit=query.limit, newest_first=True
            )
        return latest[::-1]
