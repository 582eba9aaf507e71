"""Frozen records the store hands out: plain values, no ORM objects leak past the store."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class AmendmentNote:
    """An amendment as it is shown: the note and when it was written."""

    note: str
    at: datetime


@dataclass(frozen=True)
class InferredSource:
    """A source link the dream's scan inferred (the agent did not write it), with the score it was inferred on."""

    context_id: int
    score: float | None
    inferred: bool = True


@dataclass(frozen=True)
class NarrativeRecord:
    id: int
    agent_id: str
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
    tags: tuple[str, ...]
    entities_role: str
    related_entities: tuple[str, ...]
    source_links: tuple[int, ...]  # as written: by the agent, or by the dream stage that wrote the narrative
    occurred_at: datetime
    created_at: datetime
    embedding_state: str
    amendments: tuple[str, ...] = ()  # every note, oldest first
    amended: AmendmentNote | None = None  # the latest one: it wins over what it corrects wherever the memory is shown
    origin: str = "agent"  # agent | llm | extractive
    superseded_by: int | None = None  # a dream merge kept this narrative (readable, left out of search)
    inferred_links: tuple[InferredSource, ...] = ()  # what the scan inferred, never mixed into source_links


@dataclass(frozen=True)
class WrittenNarrative:
    id: int
    weight: float
    recurrence: int


@dataclass(frozen=True)
class ContextTurnRecord:
    id: int
    agent_id: str
    session_id: str
    role: str
    speaker: str
    content: str
    metadata: dict[str, Any]
    created_at: datetime
    embedding_state: str


@dataclass(frozen=True)
class VersionRecord:
    """An earlier text of a profile or self-concept entry."""

    version: int
    content: str
    changed_at: datetime


@dataclass(frozen=True)
class ProfileRecord:
    id: int
    entity: str
    kind: str
    content: str
    pinned: bool
    version: int
    updated_at: datetime
    history: tuple[VersionRecord, ...] = ()


@dataclass(frozen=True)
class SelfConceptRecord:
    id: int
    kind: str
    key: str
    content: str
    version: int
    updated_at: datetime
    history: tuple[VersionRecord, ...] = ()


@dataclass(frozen=True)
class ThreadRecord:
    id: int
    title: str
    content: str
    status: str
    priority: int
    source: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class SnapshotRecord:
    id: int
    content: str
    mood: str
    created_at: datetime


@dataclass(frozen=True)
class PendingRow:
    """A narrative or context turn waiting for its embedding (`seen`: a narrative's last change when read)."""

    kind: str
    id: int
    agent_id: str
    text: str
    seen: datetime | None = None


@dataclass(frozen=True)
class AgentCounts:
    narratives: int = 0
    context_turns: int = 0
    profiles: int = 0
    self_concept: int = 0
    threads: int = 0
    snapshots: int = 0
    pending_narratives: int = 0
    pending_context: int = 0
    extra: dict[str, int] = field(default_factory=dict)
