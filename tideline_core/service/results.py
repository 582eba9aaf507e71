"""What the service's operations return, as frozen values the edges format (MCP models, CLI text, JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # named in annotations only: the values come from the reads that make them
    from tideline_core.domain.records import AgentCounts
    from tideline_core.dream.graph.store import EdgeView, NodeView
    from tideline_core.dream.recluster.soft import Route
    from tideline_core.dream.recluster.store import SoftClusterSummary
    from tideline_core.dream.runner.runs import DreamRunRecord
    from tideline_core.store.events import TaskEventRecord

GraphMode = Literal["top", "entity", "pair"]


@dataclass(frozen=True)
class NarrativeWrite:
    """A stored narrative: its id, weight and recurrence, and whether its embedding job was queued."""

    id: int
    weight: float
    recurrence: int
    queued: bool


@dataclass(frozen=True)
class TurnsRecorded:
    ids: tuple[int, ...]
    queued: bool


@dataclass(frozen=True)
class GraphView:
    mode: GraphMode
    nodes: tuple[NodeView, ...]
    edges: tuple[EdgeView, ...]
    note: str | None = None


@dataclass(frozen=True)
class ClusterMemberView:
    narrative_id: int
    rank: int
    distance: float
    gesture: str


@dataclass(frozen=True)
class SoftClustersView:
    clusters: tuple[SoftClusterSummary, ...]
    members: tuple[ClusterMemberView, ...] = ()
    route: Route | None = None
    note: str | None = None


@dataclass(frozen=True)
class TopicSample:
    id: int
    gesture: str


@dataclass(frozen=True)
class TopicView:
    keyword: str
    label: str
    size: int
    samples: tuple[TopicSample, ...]  # newest first


@dataclass(frozen=True)
class TopicsView:
    topics: tuple[TopicView, ...]
    note: str | None = None

    @property
    def count(self) -> int:
        return len(self.topics)


@dataclass(frozen=True)
class StatusReport:
    agent: str
    counts: AgentCounts
    queue_depths: dict[str, int] | None  # None: the job queue is unreachable
    workers: dict[str, list[str]] | None
    embedder: str
    last_task_errors: tuple[TaskEventRecord, ...] = ()  # failures and retries, newest first
    dream_runs: tuple[DreamRunRecord, ...] = field(default_factory=tuple)
    notice: str | None = None  # pending rows that nothing will embed, and what to start
    soul_path: str | None = None  # where the agent's SOUL file is looked for (None: the agent id is no file name)
    soul_found: bool = False
    oldest_pending_at: datetime | None = None  # when the oldest row still waiting for its embedding was written
    ingest_lag_seconds: float | None = None  # how long it has waited (None: nothing waits)
    last_dream: tuple[DreamRunRecord, ...] = ()  # the stages of the latest whole dream, in the order they ran
    proposals_waiting: int = 0  # dream proposals kept for review, not yet approved or rejected

    @property
    def embeddings_pending(self) -> int:
        return self.counts.pending_narratives + self.counts.pending_context

    @property
    def broker_reachable(self) -> bool:
        return self.queue_depths is not None
