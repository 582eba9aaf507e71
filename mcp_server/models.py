"""Structured tool results (pydantic, the boundary): what each tool returns to the calling model."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tideline_core.inputs import SearchIn
from tideline_core.records import (
    ContextTurnRecord,
    NarrativeRecord,
    ProfileRecord,
    SelfConceptRecord,
    SnapshotRecord,
    ThreadRecord,
)
from tideline_core.search import SearchHit, SearchOutcome
from tideline_core.service import StatusReport


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class Version(_Out):
    """An earlier text of a profile or self-concept entry."""

    version: int
    content: str
    changed_at: datetime


# --- narratives -------------------------------------------------------------------------------


class NarrativeWritten(_Out):
    id: int
    weight: float = Field(
        description="0.2–1.0: (importance×0.35 + emotional×0.25 + recurrence×0.25 + unresolved×0.15) / 5"
    )
    recurrence: int = Field(description="1–5, from how many other memories share a tag")
    embedding: Literal["pending"] = Field(
        default="pending", description="keyword-searchable now; semantically searchable once a worker embeds it"
    )
    queued: bool = Field(description="whether the embedding job reached the queue now (if not, a reconciler retries)")


class Narrative(_Out):
    id: int
    narrative_type: str
    gesture: str
    context: str
    moment: str
    cognition_direction: str
    importance: int
    emotional: int
    recurrence: int
    unresolved: int
    weight: float
    tags: list[str]
    entities_role: str
    related_entities: list[str]
    source_links: list[int]
    occurred_at: datetime
    created_at: datetime
    embedding_state: str
    amendments: list[str]

    @classmethod
    def of(cls, r: NarrativeRecord) -> Narrative:
        return cls(
            id=r.id,
            narrative_type=r.narrative_type,
            gesture=r.gesture,
            context=r.context,
            moment=r.moment,
            cognition_direction=r.cognition_direction,
            importance=r.importance,
            emotional=r.emotional,
            recurrence=r.recurrence,
            unresolved=r.unresolved,
            weight=r.weight,
            tags=list(r.tags),
            entities_role=r.entities_role,
            related_entities=list(r.related_entities),
            source_links=list(r.source_links),
            occurred_at=r.occurred_at,
            created_at=r.created_at,
            embedding_state=r.embedding_state,
            amendments=list(r.amendments),
        )


class Recall(_Out):
    count: int
    narratives: list[Narrative]


class Amended(_Out):
    id: int = Field(description="the amendment's id")
    narrative_id: int


# --- search -----------------------------------------------------------------------------------


class Hit(_Out):
    kind: str = Field(description="narrative or context")
    id: int
    score: float = Field(description="fused rank score; only the order is meaningful")
    text: str = Field(description="the narrative's gesture, or the turn's full content")
    occurred_at: datetime
    session_id: str = ""
    speaker: str = ""
    weight: float | None = None
    tags: list[str] = Field(default_factory=list)
    signals: dict[str, float] = Field(
        default_factory=dict,
        description="what each signal added to the score: kw (words of this row), kw_ctx (words of the turn and "
        "the one before), dense (meaning of this row), ctx (meaning of the turn with the turns before it), "
        "speaker (said by someone the query names), neighbour (lifted by an adjacent turn that matched)",
    )

    @classmethod
    def of(cls, h: SearchHit) -> Hit:
        return cls(
            kind=h.kind,
            id=h.id,
            score=h.score,
            text=h.text,
            occurred_at=h.occurred_at,
            session_id=h.session_id,
            speaker=h.speaker,
            weight=h.weight,
            tags=list(h.tags),
            signals=dict(h.signals),
        )


class SearchResult(_Out):
    query: str
    mode: str = Field(description="the mode actually used: hybrid, keyword or dense")
    degraded: str | None = Field(
        default=None, description="set when semantic search was unavailable and the results are keyword-only"
    )
    terms: list[str] = Field(description="the keyword terms the query was segmented into")
    dates: list[str] = Field(
        default_factory=list, description="the times the query named (they lift what happened then)"
    )
    embedded: list[str] = Field(
        default_factory=list,
        description="the texts embedded for the semantic part; a question over context turns alone leaves the "
        "speakers' names out (the speaker signal carries who)",
    )
    hits: list[Hit]

    @classmethod
    def of(cls, params: SearchIn, outcome: SearchOutcome) -> SearchResult:
        return cls(
            query=params.query,
            mode=outcome.mode,
            degraded=outcome.degraded,
            terms=list(outcome.terms),
            dates=list(outcome.dates),
            embedded=list(outcome.embedded),
            hits=[Hit.of(h) for h in outcome.hits],
        )


# --- context ----------------------------------------------------------------------------------


class TurnRecorded(_Out):
    id: int
    session_id: str
    embedding: Literal["pending"] = "pending"
    queued: bool


class Turn(_Out):
    id: int
    session_id: str
    role: str
    speaker: str
    content: str
    metadata: dict[str, Any]
    created_at: datetime

    @classmethod
    def of(cls, t: ContextTurnRecord) -> Turn:
        return cls(
            id=t.id,
            session_id=t.session_id,
            role=t.role,
            speaker=t.speaker,
            content=t.content,
            metadata=dict(t.metadata),
            created_at=t.created_at,
        )


class Timeline(_Out):
    session_id: str | None = Field(description="the session shown, or null for recent turns of every session")
    count: int
    turns: list[Turn] = Field(description="oldest first")


# --- profiles, self-concept, threads, snapshots -----------------------------------------------


class ProfileWritten(_Out):
    id: int
    entity: str
    kind: str
    version: int = Field(description="1 for a new entry; earlier texts are kept as history")


class Profile(_Out):
    id: int
    entity: str
    kind: str
    content: str
    pinned: bool
    version: int
    updated_at: datetime
    history: list[Version] = Field(default_factory=list)

    @classmethod
    def of(cls, p: ProfileRecord) -> Profile:
        return cls(
            id=p.id,
            entity=p.entity,
            kind=p.kind,
            content=p.content,
            pinned=p.pinned,
            version=p.version,
            updated_at=p.updated_at,
            history=[Version(version=v, content=c, changed_at=t) for v, c, t in p.history],
        )


class Profiles(_Out):
    count: int
    profiles: list[Profile]


class SelfConceptWritten(_Out):
    id: int
    kind: str
    key: str
    version: int


class SelfConceptEntry(_Out):
    id: int
    kind: str
    key: str
    content: str
    version: int
    updated_at: datetime
    history: list[Version] = Field(default_factory=list)

    @classmethod
    def of(cls, s: SelfConceptRecord) -> SelfConceptEntry:
        return cls(
            id=s.id,
            kind=s.kind,
            key=s.key,
            content=s.content,
            version=s.version,
            updated_at=s.updated_at,
            history=[Version(version=v, content=c, changed_at=t) for v, c, t in s.history],
        )


class SelfConcept(_Out):
    count: int
    entries: list[SelfConceptEntry]


class ThreadWritten(_Out):
    id: int
    status: str
    created: bool = Field(description="true when a new thread was opened, false when an existing one was updated")


class Thread(_Out):
    id: int
    title: str
    content: str
    status: str
    priority: int
    source: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, t: ThreadRecord) -> Thread:
        return cls(
            id=t.id,
            title=t.title,
            content=t.content,
            status=t.status,
            priority=t.priority,
            source=t.source,
            created_at=t.created_at,
            updated_at=t.updated_at,
        )


class Threads(_Out):
    count: int
    threads: list[Thread]


class SnapshotWritten(_Out):
    id: int


class Snapshot(_Out):
    id: int
    content: str
    mood: str
    created_at: datetime

    @classmethod
    def of(cls, s: SnapshotRecord) -> Snapshot:
        return cls(id=s.id, content=s.content, mood=s.mood, created_at=s.created_at)


class Snapshots(_Out):
    count: int
    snapshots: list[Snapshot] = Field(description="newest first")


# --- status -----------------------------------------------------------------------------------


class Counts(_Out):
    narratives: int
    context_turns: int
    profiles: int
    self_concept: int
    threads: int
    snapshots: int
    pending_narratives: int
    pending_context: int
    extra: dict[str, int] = Field(default_factory=dict, description="failed embeddings, amendments, attention hits")


class TaskEvent(_Out):
    task_name: str
    task_id: str
    agent_id: str
    state: str
    detail: str
    created_at: datetime


class DreamRun(_Out):
    """One dream-queue stage run (manual trigger or nightly chain), keyed by agent, UTC day and stage."""

    stage: str
    day: str
    status: str = Field(description="running, done or failed")
    trigger: str = Field(description="manual or nightly")
    outputs: dict[str, Any] = Field(description="the stage's figures (counts)")
    error: str = ""
    started_at: datetime
    finished_at: datetime | None


class Status(_Out):
    agent: str
    counts: Counts
    embeddings_pending: int = Field(description="narratives and turns still waiting for a vector")
    broker_reachable: bool
    queue_depths: dict[str, int] | None = Field(description="messages waiting per queue; null when the broker is down")
    workers: dict[str, list[str]] | None = Field(description="live workers and their queues; null when unknown")
    embedder: str = Field(description="the embedding model that serves semantic search")
    last_task_errors: list[TaskEvent]
    dream_runs: list[DreamRun] = Field(default_factory=list, description="the latest dream-queue stage runs")

    @classmethod
    def of(cls, r: StatusReport) -> Status:
        c = r.counts
        return cls(
            agent=r.agent,
            counts=Counts(
                narratives=c.narratives,
                context_turns=c.context_turns,
                profiles=c.profiles,
                self_concept=c.self_concept,
                threads=c.threads,
                snapshots=c.snapshots,
                pending_narratives=c.pending_narratives,
                pending_context=c.pending_context,
                extra=dict(c.extra),
            ),
            embeddings_pending=r.embeddings_pending,
            broker_reachable=r.queue_depths is not None,
            queue_depths=r.queue_depths,
            workers=r.workers,
            embedder=r.embedder,
            last_task_errors=[
                TaskEvent(
                    task_name=e.task_name,
                    task_id=e.task_id,
                    agent_id=e.agent_id,
                    state=e.state,
                    detail=e.detail,
                    created_at=e.created_at,
                )
                for e in r.task_events
            ],
            dream_runs=[
                DreamRun(
                    stage=d.stage,
                    day=d.day,
                    status=d.status,
                    trigger=str(d.inputs.get("trigger", "")),
                    outputs=d.outputs,
                    error=d.error,
                    started_at=d.started_at,
                    finished_at=d.finished_at,
                )
                for d in r.dream_runs
            ],
        )
