"""What the agent knows besides its memories: profiles, self-concept, threads and snapshots (history kept)."""

from __future__ import annotations

from tideline_core import inputs
from tideline_core.records import ProfileRecord, SelfConceptRecord, SnapshotRecord, ThreadRecord
from tideline_core.service.base import ServiceParts
from tideline_core.store import profiles


class KnowledgeOps(ServiceParts):
    def write_profile(self, agent_id: str, data: inputs.ProfileIn) -> tuple[int, int]:
        """Create or replace the (entity, kind) entry; the old text moves to history. → (id, version)."""
        with self.db.write() as conn:
            return profiles.upsert_profile(conn, agent_id, data)

    def profiles(self, agent_id: str, query: inputs.ProfilesQuery) -> list[ProfileRecord]:
        with self.db.read() as conn:
            return profiles.read_profiles(
                conn, agent_id, entity=query.entity, kind=query.kind, with_history=query.with_history
            )

    def write_self_concept(self, agent_id: str, data: inputs.SelfConceptIn) -> tuple[int, int]:
        """Create or replace the (kind, key) entry; the old text moves to history. → (id, version)."""
        with self.db.write() as conn:
            return profiles.upsert_self_concept(conn, agent_id, data)

    def self_concept(self, agent_id: str, query: inputs.SelfConceptQuery) -> list[SelfConceptRecord]:
        with self.db.read() as conn:
            return profiles.read_self_concept(conn, agent_id, kind=query.kind, with_history=query.with_history)

    def write_thread(self, agent_id: str, data: inputs.ThreadIn) -> ThreadRecord:
        """Open a thread, or update one of the agent's (by `thread_id`: what is left out keeps its value)."""
        with self.db.write() as conn:
            thread_id = profiles.write_thread(conn, agent_id, data)
            return profiles.read_thread(conn, agent_id, thread_id)

    def threads(self, agent_id: str, query: inputs.ThreadsQuery) -> list[ThreadRecord]:
        with self.db.read() as conn:
            return profiles.read_threads(conn, agent_id, status=query.status, limit=query.limit)

    def write_snapshot(self, agent_id: str, data: inputs.SnapshotIn) -> int:
        with self.db.write() as conn:
            return profiles.write_snapshot(conn, agent_id, data)

    def snapshots(self, agent_id: str, query: inputs.SnapshotQuery) -> list[SnapshotRecord]:
        with self.db.read() as conn:
            return profiles.read_snapshots(conn, agent_id, limit=query.limit)
