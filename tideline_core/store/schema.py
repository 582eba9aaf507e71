"""SQLAlchemy tables for every kind of memory Tideline keeps; dialect-neutral (SQLite or PostgreSQL)."""

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    and_,
    or_,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.schema import SchemaItem
from sqlalchemy.sql.elements import ColumnClause

from tideline_core.text.dates import as_utc, utcnow

AGENT_LEN = 128

# How a table's column reads when named through its class, `Narrative.gesture` (a `Column` itself would read
# as the typing-only descriptor SQLAlchemy gives it, which the type checker refuses outside a mapping).
Col = ColumnClause


class UTCDateTime(TypeDecorator[datetime]):
    """Stores UTC, returns timezone-aware UTC on every dialect (SQLite drops the zone otherwise)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = as_utc(value)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return as_utc(value)


naming = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Owned:
    """Every row one agent owns: an integer key, and the agent (a token for agent A never reaches B's rows)."""

    id: Col[int] = Column(Integer, primary_key=True, autoincrement=True)
    agent_id: Col[str] = Column(String(AGENT_LEN), nullable=False)


class Entry(Owned):
    """A profile or self-concept entry: replaced whole by an upsert, its earlier texts kept as history."""

    content: Col[str] = Column(Text, nullable=False)
    version: Col[int] = Column(Integer, nullable=False, default=1)
    created_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)
    updated_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)


class EntryVersion(Owned):
    """One earlier text of an entry."""

    version: Col[int] = Column(Integer, nullable=False)
    content: Col[str] = Column(Text, nullable=False)
    changed_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)


class Base:
    """A table declared as a class with SQLAlchemy Core: its `Column` attributes, a mixin's copied into each table,
    become `__table__`'s columns (the class's own first), read back as `Class.attribute`; in a statement the class
    stands for its table. No ORM: no row is mapped to an object anywhere, and no process loads one."""

    metadata: ClassVar[MetaData] = MetaData(naming_convention=naming)
    __tablename__: ClassVar[str]
    __table__: ClassVar[Table]
    __table_args__: ClassVar[tuple[SchemaItem, ...]] = ()

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        declared: dict[str, Column[Any]] = {}
        for klass in cls.__mro__:
            for key, value in vars(klass).items():
                if isinstance(value, Column) and key not in declared:
                    declared[key] = value
        columns = {}
        for key, column in declared.items():
            copy = column._copy()
            copy.name = copy.key = copy.name or key  # a column named apart from its attribute keeps its name in SQL
            columns[key] = copy
        cls.__table__ = Table(cls.__tablename__, cls.metadata, *columns.values(), *cls.__table_args__)
        for key, column in columns.items():
            setattr(cls, key, cls.__table__.c[column.key])

    @classmethod
    def __clause_element__(cls) -> Table:
        return cls.__table__


class Narrative(Owned, Base):
    """A structured memory: what happened (gesture), around it, and four 1–5 scores."""

    __tablename__ = "narratives"
    narrative_type: Col[str] = Column(String(32), nullable=False, default="event")
    gesture: Col[str] = Column(Text, nullable=False)
    context: Col[str] = Column(Text, nullable=False, default="")
    moment: Col[str] = Column(Text, nullable=False, default="")
    cognition_direction: Col[str] = Column(Text, nullable=False, default="")
    importance: Col[int] = Column(Integer, nullable=False, default=3)
    emotional: Col[int] = Column(Integer, nullable=False, default=3)
    recurrence: Col[int] = Column(Integer, nullable=False, default=3)
    unresolved: Col[int] = Column(Integer, nullable=False, default=3)
    weight: Col[float] = Column(Float, nullable=False, default=0.6)
    entities_role: Col[str] = Column(Text, nullable=False, default="")
    related_entities: Col[list[str]] = Column(JSON, nullable=False, default=list)
    occurred_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)
    created_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)
    updated_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)
    embedding_state: Col[str] = Column(String(16), nullable=False, default="pending")
    # Who wrote it: the agent ("agent"), a dream stage asking the LLM ("llm"), or the extractive solidifier.
    origin: Col[str] = Column(String(16), nullable=False, default="agent", server_default="agent")
    # A dream merge keeps the newer narrative; the older one points at it and stays readable by id.
    superseded_by: Col[int | None] = Column(Integer, nullable=True)

    __table_args__ = (
        Index("ix_narratives_agent_created", "agent_id", "created_at"),
        Index("ix_narratives_agent_weight", "agent_id", "weight"),
        Index("ix_narratives_embedding_state", "embedding_state", "created_at"),
    )


# "This narrative is one of the dream's extracts": a session digest the dream wrote, or a memory the extractive
# solidifier copied from the conversation; text search covers anyway, left out of search unless asked for. Told by
# who wrote the row: a digest the agent wrote itself (origin 'agent') is an ordinary memory.
EXTRACT_SQL = "(b.origin = 'extractive' OR (b.narrative_type = 'digest' AND b.origin <> 'agent'))"


def is_extract(narrative_type: str, origin: str) -> bool:
    """`EXTRACT_SQL` of one row's values."""
    return origin == "extractive" or (narrative_type == "digest" and origin != "agent")


def extract_of(table: Any = None) -> Any:
    """`EXTRACT_SQL` as an SQLAlchemy expression over `table` (default: the narratives table)."""
    narratives = table if table is not None else Narrative.__table__
    return or_(
        narratives.c.origin == "extractive",
        and_(narratives.c.narrative_type == "digest", narratives.c.origin != "agent"),
    )


class NarrativeTag(Base):
    """One tag of one narrative; a tag lookup is an index hit, and tags stay as real text."""

    __tablename__ = "narrative_tags"
    narrative_id: Col[int] = Column(Integer, ForeignKey("narratives.id", ondelete="CASCADE"), primary_key=True)
    tag: Col[str] = Column(String(128), primary_key=True)
    agent_id: Col[str] = Column(String(AGENT_LEN), nullable=False)

    __table_args__ = (Index("ix_narrative_tags_agent_tag", "agent_id", "tag"),)


class NarrativeSource(Base):
    """A link from a narrative back to a raw context turn it came from (explicit or inferred)."""

    __tablename__ = "narrative_sources"
    narrative_id: Col[int] = Column(Integer, ForeignKey("narratives.id", ondelete="CASCADE"), primary_key=True)
    context_id: Col[int] = Column(Integer, primary_key=True)
    agent_id: Col[str] = Column(String(AGENT_LEN), nullable=False)
    inferred: Col[bool] = Column(Boolean, nullable=False, default=False)
    score: Col[float | None] = Column(Float, nullable=True)

    __table_args__ = (Index("ix_narrative_sources_context", "agent_id", "context_id"),)


class Amendment(Base):
    """An append-only note on a narrative; the narrative itself is never rewritten by it."""

    __tablename__ = "amendments"
    id: Col[int] = Column(Integer, primary_key=True, autoincrement=True)
    narrative_id: Col[int] = Column(Integer, ForeignKey("narratives.id", ondelete="CASCADE"), nullable=False)
    agent_id: Col[str] = Column(String(AGENT_LEN), nullable=False)
    note: Col[str] = Column(Text, nullable=False)
    created_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)

    __table_args__ = (Index("ix_amendments_narrative", "narrative_id"),)


class ContextTurn(Owned, Base):
    """One raw conversation turn, full text."""

    __tablename__ = "context_turns"
    session_id: Col[str] = Column(String(256), nullable=False, default="")
    role: Col[str] = Column(String(16), nullable=False)
    speaker: Col[str] = Column(String(128), nullable=False, default="")
    content: Col[str] = Column(Text, nullable=False)
    meta: Col[dict[str, Any]] = Column("metadata", JSON, nullable=False, default=dict)
    created_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)
    recorded_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)
    embedding_state: Col[str] = Column(String(16), nullable=False, default="pending")

    __table_args__ = (
        Index("ix_context_agent_created", "agent_id", "created_at"),
        Index("ix_context_agent_session", "agent_id", "session_id", "id"),
        Index("ix_context_embedding_state", "embedding_state", "recorded_at"),
    )


class Embedding(Base):
    """A float32, L2-normalized vector of a narrative or context turn, with the model that made it.

    `id` grows with every (re-)embedding, so the in-memory index refreshes by `id > last_seen`.
    `view` says which text was embedded: 'base' (the row alone) or 'ctx' (a context turn with the
    turns just before it in its session, so a reply like "yes, in June" carries its question).
    """

    __tablename__ = "embeddings"
    id: Col[int] = Column(Integer, primary_key=True, autoincrement=True)
    kind: Col[str] = Column(String(16), nullable=False)
    row_id: Col[int] = Column(Integer, nullable=False)
    agent_id: Col[str] = Column(String(AGENT_LEN), nullable=False)
    model: Col[str] = Column(String(128), nullable=False)
    dim: Col[int] = Column(Integer, nullable=False)
    vector: Col[bytes] = Column(LargeBinary, nullable=False)
    created_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)
    view: Col[str] = Column(String(16), nullable=False, default="base", server_default="base")

    __table_args__ = (
        UniqueConstraint("kind", "row_id", "view", name="uq_embeddings_kind_row_view"),
        Index("ix_embeddings_agent_kind_view_id", "agent_id", "kind", "view", "id"),
    )


class EmbeddingClaim(Base):
    """A pending row some embed task is working on: other tasks leave it alone until the lease runs out."""

    __tablename__ = "embedding_claims"
    kind: Col[str] = Column(String(16), primary_key=True)
    row_id: Col[int] = Column(Integer, primary_key=True)
    agent_id: Col[str] = Column(String(AGENT_LEN), nullable=False)
    token: Col[str] = Column(String(64), nullable=False)
    claimed_at: Col[datetime] = Column(UTCDateTime, nullable=False)


class WriteReceipt(Base):
    """A write made with an idempotency key: what it was (operation, argument fingerprint) and what it returned."""

    __tablename__ = "write_receipts"
    agent_id: Col[str] = Column(String(AGENT_LEN), primary_key=True)
    key: Col[str] = Column(String(128), primary_key=True)
    operation: Col[str] = Column(String(32), nullable=False)
    fingerprint: Col[str] = Column(String(64), nullable=False)
    result: Col[Any] = Column(JSON, nullable=False)
    created_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)


class Profile(Entry, Base):
    """What the agent holds about one entity, per kind (fact/impression/relationship/self/contact)."""

    __tablename__ = "profiles"
    entity: Col[str] = Column(String(128), nullable=False)
    kind: Col[str] = Column(String(32), nullable=False)
    pinned: Col[bool] = Column(Boolean, nullable=False, default=False)

    __table_args__ = (UniqueConstraint("agent_id", "entity", "kind", name="uq_profiles_agent_entity_kind"),)


class ProfileHistory(EntryVersion, Base):
    """Every earlier version of a profile entry, kept when an upsert replaces it."""

    __tablename__ = "profile_history"
    profile_id: Col[int] = Column(Integer, ForeignKey("profiles.id", ondelete="CASCADE"), nullable=False)

    __table_args__ = (Index("ix_profile_history_profile", "profile_id", "version"),)


class SelfConcept(Entry, Base):
    """The agent's model of itself: fact, terrain (tendencies) or reflection, under a key."""

    __tablename__ = "self_concept"
    kind: Col[str] = Column(String(32), nullable=False)
    key: Col[str] = Column(String(128), nullable=False)

    __table_args__ = (UniqueConstraint("agent_id", "kind", "key", name="uq_self_concept_agent_kind_key"),)


class SelfConceptHistory(EntryVersion, Base):
    """Every earlier version of a self-concept entry."""

    __tablename__ = "self_concept_history"
    self_concept_id: Col[int] = Column(Integer, ForeignKey("self_concept.id", ondelete="CASCADE"), nullable=False)


class Thread(Owned, Base):
    """An open question or direction to explore, from the agent or from DREAM."""

    __tablename__ = "threads"
    title: Col[str] = Column(Text, nullable=False)
    content: Col[str] = Column(Text, nullable=False, default="")
    status: Col[str] = Column(String(16), nullable=False, default="open")
    priority: Col[int] = Column(Integer, nullable=False, default=3)
    source: Col[str] = Column(String(16), nullable=False, default="agent")
    created_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)
    updated_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)

    __table_args__ = (Index("ix_threads_agent_status", "agent_id", "status", "priority"),)


class Snapshot(Owned, Base):
    """A point-in-time statement of the agent's state; the latest one feeds T0."""

    __tablename__ = "snapshots"
    content: Col[str] = Column(Text, nullable=False)
    mood: Col[str] = Column(String(128), nullable=False, default="")
    created_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)

    __table_args__ = (Index("ix_snapshots_agent_created", "agent_id", "created_at"),)


class AttentionHit(Owned, Base):
    """One retrieval hit on a narrative: which, how similar (none for a recall: asked for by filter, not by meaning),
    from where, when."""

    __tablename__ = "attention_log"
    narrative_id: Col[int] = Column(Integer, nullable=False)
    similarity: Col[float | None] = Column(Float, nullable=True)
    source: Col[str] = Column(String(16), nullable=False)
    created_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)

    __table_args__ = (Index("ix_attention_agent_created", "agent_id", "created_at"),)


class Injection(Base):
    """A row a session was shown in an injected block, so the session's per-turn recall does not repeat it."""

    __tablename__ = "injections"
    agent_id: Col[str] = Column(String(AGENT_LEN), primary_key=True)
    session_id: Col[str] = Column(String(256), primary_key=True)
    kind: Col[str] = Column(String(16), primary_key=True)
    row_id: Col[int] = Column(Integer, primary_key=True)
    tier: Col[str] = Column(String(8), nullable=False)
    injected_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)

    __table_args__ = (Index("ix_injections_injected_at", "injected_at"),)


class TopicCluster(Owned, Base):
    """A keyword that survived the document-frequency filter, and the narratives under it."""

    __tablename__ = "topic_clusters"
    keyword: Col[str] = Column(String(128), nullable=False)
    label: Col[str] = Column(Text, nullable=False, default="")
    size: Col[int] = Column(Integer, nullable=False)
    built_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)

    __table_args__ = (UniqueConstraint("agent_id", "keyword", name="uq_topic_clusters_agent_keyword"),)


class TopicClusterMember(Base):
    __tablename__ = "topic_cluster_members"
    cluster_id: Col[int] = Column(Integer, ForeignKey("topic_clusters.id", ondelete="CASCADE"), primary_key=True)
    narrative_id: Col[int] = Column(Integer, primary_key=True)
    agent_id: Col[str] = Column(String(AGENT_LEN), nullable=False)

    __table_args__ = (Index("ix_topic_members_narrative", "agent_id", "narrative_id"),)


class EmbeddingCluster(Owned, Base):
    """A k-means centroid in embedding space (soft clusters)."""

    __tablename__ = "emb_clusters"
    label: Col[int] = Column(Integer, nullable=False)
    name: Col[str] = Column(Text, nullable=False, default="")
    size: Col[int] = Column(Integer, nullable=False, default=0)
    model: Col[str] = Column(String(128), nullable=False, default="")
    centroid: Col[bytes] = Column(LargeBinary, nullable=False)
    built_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)

    __table_args__ = (UniqueConstraint("agent_id", "label", name="uq_emb_clusters_agent_label"),)


class EmbeddingClusterMember(Base):
    __tablename__ = "emb_cluster_members"
    cluster_id: Col[int] = Column(Integer, ForeignKey("emb_clusters.id", ondelete="CASCADE"), primary_key=True)
    narrative_id: Col[int] = Column(Integer, primary_key=True)
    agent_id: Col[str] = Column(String(AGENT_LEN), nullable=False)
    rank: Col[int] = Column(Integer, nullable=False)
    distance: Col[float] = Column(Float, nullable=False)

    __table_args__ = (Index("ix_emb_members_narrative", "agent_id", "narrative_id"),)


class EmbeddingClusterAdjacency(Base):
    """How many narratives two soft clusters share (stored once per ordered pair a < b)."""

    __tablename__ = "emb_cluster_adjacency"
    agent_id: Col[str] = Column(String(AGENT_LEN), primary_key=True)
    cluster_a: Col[int] = Column(Integer, primary_key=True)
    cluster_b: Col[int] = Column(Integer, primary_key=True)
    shared: Col[int] = Column(Integer, nullable=False)


class EntityNode(Base):
    __tablename__ = "entity_nodes"
    agent_id: Col[str] = Column(String(AGENT_LEN), primary_key=True)
    name: Col[str] = Column(String(128), primary_key=True)
    mentions: Col[int] = Column(Integer, nullable=False, default=0)
    known: Col[bool] = Column(Boolean, nullable=False, default=False)
    roles: Col[dict[str, int]] = Column(JSON, nullable=False, default=dict)
    first_seen: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)
    last_seen: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)


class EntityEdge(Base):
    __tablename__ = "entity_edges"
    agent_id: Col[str] = Column(String(AGENT_LEN), primary_key=True)
    source: Col[str] = Column(String(128), primary_key=True)
    target: Col[str] = Column(String(128), primary_key=True)
    source_role: Col[str] = Column(String(128), primary_key=True)
    target_role: Col[str] = Column(String(128), primary_key=True)
    count: Col[int] = Column(Integer, nullable=False, default=0)


class ScanWatermark(Base):
    """The last context turn id the solidify scan has covered, per agent."""

    __tablename__ = "scan_watermarks"
    agent_id: Col[str] = Column(String(AGENT_LEN), primary_key=True)
    last_context_id: Col[int] = Column(Integer, nullable=False, default=0)
    updated_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)


class DreamRun(Owned, Base):
    """One stage of one agent's dream for one day: inputs, outputs, tokens, status."""

    __tablename__ = "dream_runs"
    day: Col[str] = Column(String(10), nullable=False)
    stage: Col[str] = Column(String(32), nullable=False)
    status: Col[str] = Column(String(16), nullable=False, default="running")
    inputs: Col[dict[str, Any]] = Column(JSON, nullable=False, default=dict)
    outputs: Col[dict[str, Any]] = Column(JSON, nullable=False, default=dict)
    tokens_in: Col[int] = Column(Integer, nullable=False, default=0)
    tokens_out: Col[int] = Column(Integer, nullable=False, default=0)
    error: Col[str] = Column(Text, nullable=False, default="")
    started_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)
    finished_at: Col[datetime | None] = Column(UTCDateTime, nullable=True)
    # "nightly" for the chain's run of the day (done once per agent, day and stage); a manual run is
    # keyed by its task id, so a redelivered task finds its own row and each manual run stays undoable.
    run_key: Col[str] = Column(String(64), nullable=False, default="nightly", server_default="nightly")
    undone_at: Col[datetime | None] = Column(UTCDateTime, nullable=True)
    # A proposed run's plan (`dream.plan_json`), kept until it is approved (applied) or rejected.
    proposal: Col[list[dict[str, Any]] | None] = Column(JSON, nullable=True)

    __table_args__ = (
        UniqueConstraint("agent_id", "day", "stage", "run_key", name="uq_dream_runs_agent_day_stage_key"),
    )


class DreamChange(Base):
    """One row change a dream run applied: the table, the row, its state before and after (the run's diff)."""

    __tablename__ = "dream_changes"
    id: Col[int] = Column(Integer, primary_key=True, autoincrement=True)
    run_id: Col[int] = Column(Integer, ForeignKey("dream_runs.id", ondelete="CASCADE"), nullable=False)
    agent_id: Col[str] = Column(String(AGENT_LEN), nullable=False)
    seq: Col[int] = Column(Integer, nullable=False)
    action: Col[str] = Column(String(16), nullable=False)  # insert | update
    target: Col[str] = Column(String(32), nullable=False)  # the table changed
    row_key: Col[str] = Column(String(256), nullable=False)  # its primary key, as text
    before: Col[dict[str, Any] | None] = Column(JSON, nullable=True)
    after: Col[dict[str, Any]] = Column(JSON, nullable=False)
    summary: Col[str] = Column(Text, nullable=False, default="")

    __table_args__ = (
        UniqueConstraint("run_id", "seq", name="uq_dream_changes_run_seq"),
        Index("ix_dream_changes_row", "agent_id", "target", "row_key"),
    )


class TaskEvent(Base):
    """A task failure (or retry) recorded by the workers, shown by `memory_status`."""

    __tablename__ = "task_events"
    id: Col[int] = Column(Integer, primary_key=True, autoincrement=True)
    task_name: Col[str] = Column(String(128), nullable=False)
    task_id: Col[str] = Column(String(64), nullable=False)
    agent_id: Col[str] = Column(String(AGENT_LEN), nullable=False, default="")
    state: Col[str] = Column(String(16), nullable=False)
    detail: Col[str] = Column(Text, nullable=False, default="")
    created_at: Col[datetime] = Column(UTCDateTime, nullable=False, default=utcnow)

    __table_args__ = (Index("ix_task_events_created", "created_at"),)
