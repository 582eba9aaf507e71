"""Structured tool results (pydantic, the boundary): what each tool returns to the calling model."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field


class Result(BaseModel):
    # Results are read off the service's frozen records by attribute name: one list of fields, not two.
    model_config = ConfigDict(frozen=True, from_attributes=True)

    @classmethod
    def of(cls, value: object) -> Self:
        """The result for a record or view of the service (its attributes named as these fields)."""
        return cls.model_validate(value)


class Version(Result):
    """An earlier text of a profile or self-concept entry."""

    version: int
    content: str
    changed_at: datetime


# --- narratives -------------------------------------------------------------------------------


class NarrativeWritten(Result):
    id: int
    weight: float = Field(
        description="0.2–1.0: (importance×0.35 + emotional×0.25 + recurrence×0.25 + unresolved×0.15) / 5"
    )
    recurrence: int = Field(description="1–5, from how many other memories share a tag")
    embedding: Literal["pending"] = Field(
        default="pending", description="keyword-searchable now; semantically searchable once a worker embeds it"
    )
    queued: bool = Field(description="whether the embedding job reached the queue now (if not, a reconciler retries)")


class AmendmentNote(Result):
    """An amendment: a note attached to a memory later, which corrects or completes it."""

    note: str
    at: datetime = Field(description="when it was attached")


class InferredLink(Result):
    """A source link the nightly scan inferred, not one the agent wrote: a guess, with the score it rests on."""

    context_id: int
    score: float | None = Field(description="cosine similarity plus the weighted share of shared content words")
    inferred: bool = Field(default=True, description="always true: the scan inferred it")


class Narrative(Result):
    """A narrative memory in full, as written, with what the system derived from it."""

    id: int
    narrative_type: str = Field(description="event, reflection, insight, decision, dream or other")
    gesture: str = Field(description="what happened, in one sentence")
    context: str
    moment: str
    cognition_direction: str
    importance: int = Field(description="1–5, as written")
    emotional: int = Field(description="1–5, as written")
    recurrence: int = Field(description="1–5, from how many other memories share a tag (refreshed nightly)")
    unresolved: int = Field(description="1–5, as written")
    weight: float = Field(description="0.2–1.0, from the four scores (scaled down when recent memories inflate)")
    tags: list[str]
    entities_role: str = Field(description="who did what, as written")
    related_entities: list[str]
    source_links: list[int] = Field(description="ids of the context turns it came from, as written")
    inferred_links: list[InferredLink] = Field(
        default_factory=list,
        description="context turns the dream's scan inferred it came from (only when words, speaker, time and "
        "meaning agree), each marked inferred with its score; never mixed into source_links",
    )
    occurred_at: datetime = Field(description="when it happened")
    created_at: datetime = Field(description="when it was written")
    embedding_state: str = Field(description="pending until a worker has embedded it, then done")
    amendments: list[str] = Field(description="notes attached later with memory_amend, oldest first")
    amended: AmendmentNote | None = Field(
        default=None, description="the latest amendment: where it and the memory disagree, it is the correction"
    )


class Recall(Result):
    count: int
    narratives: list[Narrative]


class Amended(Result):
    id: int = Field(description="the amendment's id")
    narrative_id: int


# --- search -----------------------------------------------------------------------------------


class Hit(Result):
    kind: str = Field(description="narrative or context")
    id: int
    score: float = Field(description="fused rank score; only the order is meaningful")
    text: str = Field(
        description="the narrative's gesture, or the turn's full content; followed, when the memory (or a memory "
        "written from the turn) was amended, by the latest amendment: ' — amended YYYY-MM-DD: note'"
    )
    occurred_at: datetime
    session_id: str = ""
    speaker: str = ""
    weight: float | None = None
    tags: list[str] = Field(default_factory=list)
    signals: dict[str, float] = Field(
        default_factory=dict,
        description="what each signal added to the score: kw (words of this row), kw_ctx (words of the turn and "
        "the one before), dense (meaning of this row), ctx (meaning of the turn with the turns before it), "
        "speaker (said by someone the query names), time (from around a date the query names), join (a turn of "
        "the same conversation as a top hit that holds one of the query's identifiers, sharing that hit's rarest "
        "other word), neighbour (lifted by an adjacent turn that matched)",
    )
    evidence: list[str] = Field(
        default_factory=list,
        description="the signals that found this row on its own merit: kw or kw_ctx (a word matched), dense or ctx "
        "(meaning closer than the query is to unrelated everyday text), speaker, time (inside a date the query "
        "names), join, neighbour (beside a hit with evidence); empty: it is here by rank alone, and the per-turn "
        "block leaves it out",
    )
    amended: AmendmentNote | None = Field(
        default=None, description="the latest amendment shown at the end of text: it corrects what the text says"
    )


class SearchResult(Result):
    query: str
    mode: str = Field(description="the mode actually used: hybrid, keyword or dense")
    degraded: str | None = Field(
        default=None,
        description="set when results may miss something: semantic search was unavailable (keyword-only), "
        "or rows wait for an embedding that nothing will make (no ingest worker running)",
    )
    unembedded: int = Field(
        default=0, description="rows of the searched kinds still without an embedding (meaning search misses them)"
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


# --- context ----------------------------------------------------------------------------------


class TurnRecorded(Result):
    id: int
    session_id: str
    embedding: Literal["pending"] = "pending"
    queued: bool


class Turn(Result):
    """One conversation turn, verbatim."""

    id: int
    session_id: str
    role: str = Field(description="user, assistant, system or tool")
    speaker: str = Field(description="who spoke (the role when no name was given)")
    content: str
    metadata: dict[str, Any]
    created_at: datetime = Field(description="when it was said")


class Timeline(Result):
    session_id: str | None = Field(description="the session shown, or null for recent turns of every session")
    count: int
    turns: list[Turn] = Field(description="oldest first")


# --- profiles, self-concept, threads, snapshots -----------------------------------------------


class ProfileWritten(Result):
    id: int
    entity: str
    kind: str
    version: int = Field(description="1 for a new entry; earlier texts are kept as history")


class Profile(Result):
    """What you hold about one entity, of one kind."""

    id: int
    entity: str
    kind: str = Field(description="fact, impression, relationship, self or contact")
    content: str
    pinned: bool = Field(description="shown in full at session start")
    version: int = Field(description="1 for the first text, one more for each replacement")
    updated_at: datetime
    history: list[Version] = Field(default_factory=list, description="earlier texts, oldest first (on request)")


class Profiles(Result):
    count: int
    profiles: list[Profile]


class SelfConceptWritten(Result):
    id: int
    kind: str
    key: str
    version: int


class SelfConceptEntry(Result):
    """One entry of your self-concept."""

    id: int
    kind: str = Field(description="fact, terrain or reflection")
    key: str
    content: str
    version: int = Field(description="1 for the first text, one more for each replacement")
    updated_at: datetime
    history: list[Version] = Field(default_factory=list, description="earlier texts, oldest first (on request)")


class SelfConcept(Result):
    count: int
    entries: list[SelfConceptEntry]


class ThreadWritten(Result):
    id: int
    status: str
    created: bool = Field(description="true when a new thread was opened, false when an existing one was updated")


class Thread(Result):
    """An open question or line of thought, and where it stands."""

    id: int
    title: str
    content: str = Field(description="notes: what is known so far, what to try next")
    status: str = Field(description="open, exploring, resolved or dropped")
    priority: int = Field(description="1–5, how much it pulls")
    source: str = Field(description="who opened it: agent, or a dream stage")
    created_at: datetime
    updated_at: datetime


class Threads(Result):
    count: int
    threads: list[Thread]


class SnapshotWritten(Result):
    id: int


class Snapshot(Result):
    id: int
    content: str
    mood: str
    created_at: datetime


class Snapshots(Result):
    count: int
    snapshots: list[Snapshot] = Field(description="newest first")


# --- status -----------------------------------------------------------------------------------


class Counts(Result):
    narratives: int
    context_turns: int
    profiles: int
    self_concept: int
    threads: int
    snapshots: int
    pending_narratives: int
    pending_context: int
    extra: dict[str, int] = Field(default_factory=dict, description="failed embeddings, amendments, attention hits")


class TaskEvent(Result):
    """A background task that failed or was retried."""

    task_name: str = Field(description="e.g. tideline.ingest.embed_pending")
    task_id: str = Field(description="the Celery task id (shown in Flower)")
    agent_id: str
    state: str = Field(description="failure or retry")
    detail: str = Field(description="the error, as the worker saw it")
    created_at: datetime


class DreamRun(Result):
    """One dream-queue stage run (a manual trigger or the nightly chain), keyed by agent, UTC day, stage and run key."""

    id: int = Field(description="the run's id: memory_dream_log(run_id=...) shows every change it applied")
    stage: str
    day: str
    status: str = Field(
        description="running, done, undone (changes restored), skipped (outputs.skipped says why), failed, proposed "
        "(waiting for review) or rejected"
    )
    trigger: str = Field(description="manual or nightly")
    run_key: str = Field(description="nightly (the chain's run of the day), or the task id of a manual run")
    outputs: dict[str, Any] = Field(description="the stage's figures (counts; changes = rows it changed)")
    error: str = ""
    tokens_in: int = Field(description="LLM prompt tokens the run spent")
    tokens_out: int = Field(description="LLM completion tokens the run spent")
    started_at: datetime
    finished_at: datetime | None
    undone_at: datetime | None = Field(description="when the run was undone (its changes restored), if it was")


class Status(Result):
    agent: str
    counts: Counts
    embeddings_pending: int = Field(description="narratives and turns still waiting for a vector")
    broker_reachable: bool
    queue_depths: dict[str, int] | None = Field(description="messages waiting per queue; null when the broker is down")
    workers: dict[str, list[str]] | None = Field(description="live workers and their queues; null when unknown")
    embedder: str = Field(description="the embedding model that serves semantic search")
    last_task_errors: list[TaskEvent] = Field(description="the latest task failures and retries, newest first")
    dream_runs: list[DreamRun] = Field(default_factory=list, description="the latest dream-queue stage runs")
    proposals_waiting: int = Field(default=0, description="dream proposals waiting for review (memory_dream_review)")
    soul_path: str | None = Field(default=None, description="where your SOUL file is read from (identity, T0)")
    soul_found: bool = Field(
        default=False,
        description="false: no SOUL file there, so the session-start block's identity comes from self-concept",
    )
    notice: str | None = Field(
        default=None,
        description="set when rows wait for an embedding that nothing will make (no ingest worker, or no queue)",
    )
