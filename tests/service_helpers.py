"""A job queue stand-in for the service's tests, and the service over a fresh SQLite file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import func, select

from tideline_core.errors import Conflict
from tideline_core.service import Service, TaskResult
from tideline_core.store.schema import ContextTurn, Narrative


@dataclass
class FakeQueue:
    """A job queue that records what it is asked, and can be told to be down or to refuse stages."""

    up: bool = True
    refuse: bool = False
    embeds: list[str] = field(default_factory=list)
    attention: list[tuple[str, list[tuple[int, float | None]], str]] = field(default_factory=list)
    stages: list[tuple[str, str]] = field(default_factory=list)
    waits: list[tuple[str, float]] = field(default_factory=list)  # (task id, seconds) of every wait for a result
    rows_seen_at_enqueue: list[int] = field(default_factory=list)
    service: Service | None = None

    def embed(self, agent_id: str, *, again: bool = False) -> bool:
        assert self.service is not None
        # What a worker would find if it ran right now: the write must already be committed.
        with self.service.db.read() as conn:
            stored = conn.execute(select(func.count()).select_from(Narrative)).scalar_one()
            stored += conn.execute(select(func.count()).select_from(ContextTurn)).scalar_one()
        self.rows_seen_at_enqueue.append(stored)
        self.embeds.append(agent_id)
        return self.up

    def log_attention(self, agent_id: str, hits: Sequence[tuple[int, float | None]], source: str) -> bool:
        self.attention.append((agent_id, list(hits), source))
        return self.up

    def start_stage(self, agent_id: str, stage: str, *, dry_run: bool = False) -> str | None:
        if self.refuse:
            raise Conflict(f"nightly dream for agent {agent_id} is running; try again later")
        self.stages.append((agent_id, stage + (" (dry run)" if dry_run else "")))
        return f"task-{len(self.stages)}" if self.up else None

    def start_dream(self, agent_id: str) -> str | None:
        return self.start_stage(agent_id, "dream")

    def task_result(self, task_id: str, wait: float) -> TaskResult | None:
        self.waits.append((task_id, wait))
        return TaskResult("queued")

    def queue_depths(self) -> dict[str, int] | None:
        return {"ingest": 0, "dream": 0} if self.up else None

    def workers(self) -> dict[str, list[str]] | None:
        return {"ingest@here": ["ingest"]} if self.up else None
