"""What the agent knows besides its memories: profiles, self-concept, threads and snapshots (history kept)."""

from __future__ import annotations

from tideline_core.domain import inputs
from tideline_core.domain.records import ProfileRecord, SelfConceptRecord, SnapshotRecord, ThreadRecord
from tideline_core.service.base import ServiceParts
from tideline_core.store import profiles


class KnowledgeOps(ServiceParts):
    def write_profile(self, agent_id: str, data: inputs.ProfileIn, *, key: str | None = None) -> tuple[int, int]:
        """Create or replace the (entity, kind) entry; the old text moves to history. → (id, version).

        Every write here takes an optional idempotency `key`: a retry returns the first result (`write_once`).
        """
        entry_id, version = self.write_once(
            agent_id, key, "profile", [data], lambda conn: list(profiles.upsert_profile(conn, agent_id, data))
        )
        return int(entry_id), int(version)

    def profiles(self, agent_id: str, query: inputs.ProfilesQuery) -> list[ProfileRecord]:
        with self.db.read() as conn:
            return profiles.read_profiles(
                conn, agent_id, entity=query.entity, kind=query.kind, with_history=query.with_history
            )

    def write_self_concept(
        self, agent_id: str, data: inputs.SelfConceptIn, *, key: str | None = None
    ) -> tuple[int, int]:
        """Create or replace the (kind, key) entry; the old text moves to history. → (id, version)."""
        entry_id, version = self.write_once(
            agent_id, key, "self_concept", [data], lambda conn: list(profiles.upsert_self_concept(conn, agent_id, data))
        )
        return int(entry_id), int(version)

    def self_concept(self, agent_id: str, query: inputs.SelfConceptQuery) -> list[SelfConceptRecord]:
        with self.db.read() as conn:
            return profiles.read_self_concept(conn, agent_id, kind=query.kind, with_history=query.with_history)

    def write_thread(self, agent_id: str, data: inputs.ThreadIn, *, key: str | None = None) -> ThreadRecord:
        """Open a thread, or update one of the agent's (by `thread_id`: what is left out keeps its value).

        Returns the thread as it stands after the write (after a retry with the same key: as it stands now).
        """
        thread_id = self.write_once(
            agent_id, key, "thread", [data], lambda conn: profiles.write_thread(conn, agent_id, data)
        )
        with self.db.read() as conn:
            return profiles.read_thread(conn, agent_id, int(thread_id))

    def threads(self, agent_id: str, query: inputs.ThreadsQuery) -> list[ThreadRecord]:
        with self.db.read() as conn:
            return profiles.read_threads(conn, agent_id, status=query.status, limit=query.limit)

    def write_snapshot(self, agent_id: str, data: inputs.SnapshotIn, *, key: str | None = None) -> int:
        return int(
            self.write_once(
                agent_id, key, "snapshot", [data], lambda conn: profiles.write_snapshot(conn, agent_id, data)
            )
        )

    def snapshots(self, agent_id: str, query: inputs.SnapshotQuery) -> list[SnapshotRecord]:
        with self.db.read() as conn:
            return profiles.read_snapshots(conn, agent_id, limit=query.limit)
