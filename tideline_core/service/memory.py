"""What an agent does with its memories and conversation: write, record, amend, recall, search, read back.

Writes validate first (the inputs are already parsed), persist in one short transaction, and only
after the commit hand the derived work (embedding) to the job queue: the row is durable whatever
the queue does. Reads go to the store directly; the hits they return are handed to the queue for
attention logging, so a read never writes.
"""

from __future__ import annotations

from collections.abc import Sequence

from tideline_core.inputs import AmendmentIn, ContextTurnIn, NarrativeIn, RecallQuery, SearchIn, TimelineQuery
from tideline_core.records import ContextTurnRecord, NarrativeRecord
from tideline_core.search.hybrid import SearchOutcome
from tideline_core.service.base import ServiceParts
from tideline_core.service.results import NarrativeWrite, TurnsRecorded
from tideline_core.store import narratives, turns


class MemoryOps(ServiceParts):
    def write_narratives(self, agent_id: str, items: Sequence[NarrativeIn]) -> list[NarrativeWrite]:
        """Store narratives in one transaction (all or none), then queue their embedding."""
        with self.db.write() as conn:
            written = [narratives.insert_narrative(conn, agent_id, item) for item in items]
        queued = self.jobs.embed(agent_id) if written else False
        return [NarrativeWrite(w.id, w.weight, w.recurrence, queued) for w in written]

    def write_narrative(self, agent_id: str, data: NarrativeIn) -> NarrativeWrite:
        (written,) = self.write_narratives(agent_id, [data])
        return written

    def record_turns(self, agent_id: str, items: Sequence[ContextTurnIn]) -> TurnsRecorded:
        """Store conversation turns verbatim in one transaction (all or none), then queue their embedding."""
        with self.db.write() as conn:
            ids = turns.insert_turns(conn, agent_id, items)
        return TurnsRecorded(tuple(ids), self.jobs.embed(agent_id) if ids else False)

    def amend(self, agent_id: str, data: AmendmentIn) -> int:
        """Append a note to one of the agent's narratives; the narrative itself never changes."""
        with self.db.write() as conn:
            return narratives.amend(conn, agent_id, data)

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
            # A recall has no similarity: the memory was asked for directly, so it counts as full attention.
            self.jobs.log_attention(agent_id, [(r.id, 1.0) for r in records], "recall")
        return records

    def search(self, agent_id: str, params: SearchIn, *, source: str = "search") -> SearchOutcome:
        """Hybrid search over the agent's narratives and turns; the narrative hits go to attention logging.

        A queue that is down costs only those log entries, never the answer.
        """
        outcome = self.searcher.search(agent_id, params)
        attended = [
            # The cosine when the dense signal saw the hit; otherwise the fused score (capped at 1) stands in.
            (hit.id, hit.similarity if hit.similarity is not None else min(1.0, hit.score))
            for hit in outcome.hits
            if hit.kind == "narrative"
        ]
        if attended:
            self.jobs.log_attention(agent_id, attended, source)
        return outcome

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
