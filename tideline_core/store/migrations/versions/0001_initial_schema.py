"""Initial schema: every table, plus the SQLite FTS5 keyword indexes (jieba-segmented text)

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

import tideline_core.store.schema

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


# Keyword indexes hold a jieba-segmented copy of the text (unicode61 splits on the spaces we put
# between words), so 2-character Chinese words match; trigram could not. PostgreSQL builds its own.
FTS_TABLES = ("narratives_fts", "context_fts")


def _create_fts() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table in FTS_TABLES:
        op.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5("
            "agent_id UNINDEXED, body, tokenize='porter unicode61 remove_diacritics 2')"
        )


def _drop_fts() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table in FTS_TABLES:
        op.execute(f"DROP TABLE IF EXISTS {table}")


def upgrade() -> None:
    op.create_table(
        "attention_log",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("narrative_id", sa.Integer(), nullable=False),
        sa.Column("similarity", sa.Float(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("created_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attention_log")),
    )
    with op.batch_alter_table("attention_log", schema=None) as batch_op:
        batch_op.create_index("ix_attention_agent_created", ["agent_id", "created_at"], unique=False)

    op.create_table(
        "context_turns",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("session_id", sa.String(length=256), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("speaker", sa.String(length=128), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("created_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("recorded_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("embedding_state", sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_context_turns")),
    )
    with op.batch_alter_table("context_turns", schema=None) as batch_op:
        batch_op.create_index("ix_context_agent_created", ["agent_id", "created_at"], unique=False)
        batch_op.create_index("ix_context_agent_session", ["agent_id", "session_id", "id"], unique=False)
        batch_op.create_index("ix_context_embedding_state", ["embedding_state", "recorded_at"], unique=False)

    op.create_table(
        "dream_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("stage", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("inputs", sa.JSON(), nullable=False),
        sa.Column("outputs", sa.JSON(), nullable=False),
        sa.Column("tokens_in", sa.Integer(), nullable=False),
        sa.Column("tokens_out", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("started_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dream_runs")),
        sa.UniqueConstraint("agent_id", "day", "stage", name="uq_dream_runs_agent_day_stage"),
    )
    op.create_table(
        "emb_cluster_adjacency",
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("cluster_a", sa.Integer(), nullable=False),
        sa.Column("cluster_b", sa.Integer(), nullable=False),
        sa.Column("shared", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("agent_id", "cluster_a", "cluster_b", name=op.f("pk_emb_cluster_adjacency")),
    )
    op.create_table(
        "emb_clusters",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("label", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("centroid", sa.LargeBinary(), nullable=False),
        sa.Column("built_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_emb_clusters")),
        sa.UniqueConstraint("agent_id", "label", name="uq_emb_clusters_agent_label"),
    )
    op.create_table(
        "embeddings",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("row_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("dim", sa.Integer(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_embeddings")),
        sa.UniqueConstraint("kind", "row_id", name="uq_embeddings_kind_row"),
    )
    with op.batch_alter_table("embeddings", schema=None) as batch_op:
        batch_op.create_index("ix_embeddings_agent_kind_id", ["agent_id", "kind", "id"], unique=False)

    op.create_table(
        "entity_edges",
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("source", sa.String(length=128), nullable=False),
        sa.Column("target", sa.String(length=128), nullable=False),
        sa.Column("source_role", sa.String(length=128), nullable=False),
        sa.Column("target_role", sa.String(length=128), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint(
            "agent_id", "source", "target", "source_role", "target_role", name=op.f("pk_entity_edges")
        ),
    )
    op.create_table(
        "entity_nodes",
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("mentions", sa.Integer(), nullable=False),
        sa.Column("known", sa.Boolean(), nullable=False),
        sa.Column("roles", sa.JSON(), nullable=False),
        sa.Column("first_seen", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_seen", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("agent_id", "name", name=op.f("pk_entity_nodes")),
    )
    op.create_table(
        "narratives",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("narrative_type", sa.String(length=32), nullable=False),
        sa.Column("gesture", sa.Text(), nullable=False),
        sa.Column("context", sa.Text(), nullable=False),
        sa.Column("moment", sa.Text(), nullable=False),
        sa.Column("cognition_direction", sa.Text(), nullable=False),
        sa.Column("importance", sa.Integer(), nullable=False),
        sa.Column("emotional", sa.Integer(), nullable=False),
        sa.Column("recurrence", sa.Integer(), nullable=False),
        sa.Column("unresolved", sa.Integer(), nullable=False),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.Column("entities_role", sa.Text(), nullable=False),
        sa.Column("related_entities", sa.JSON(), nullable=False),
        sa.Column("occurred_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("created_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("embedding_state", sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_narratives")),
    )
    with op.batch_alter_table("narratives", schema=None) as batch_op:
        batch_op.create_index("ix_narratives_agent_created", ["agent_id", "created_at"], unique=False)
        batch_op.create_index("ix_narratives_agent_weight", ["agent_id", "weight"], unique=False)
        batch_op.create_index("ix_narratives_embedding_state", ["embedding_state", "created_at"], unique=False)

    op.create_table(
        "profiles",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("entity", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("pinned", sa.Boolean(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_profiles")),
        sa.UniqueConstraint("agent_id", "entity", "kind", name="uq_profiles_agent_entity_kind"),
    )
    op.create_table(
        "scan_watermarks",
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("last_context_id", sa.Integer(), nullable=False),
        sa.Column("updated_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("agent_id", name=op.f("pk_scan_watermarks")),
    )
    op.create_table(
        "self_concept",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=128), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_self_concept")),
        sa.UniqueConstraint("agent_id", "kind", "key", name="uq_self_concept_agent_kind_key"),
    )
    op.create_table(
        "snapshots",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("mood", sa.String(length=128), nullable=False),
        sa.Column("created_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_snapshots")),
    )
    with op.batch_alter_table("snapshots", schema=None) as batch_op:
        batch_op.create_index("ix_snapshots_agent_created", ["agent_id", "created_at"], unique=False)

    op.create_table(
        "task_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("task_name", sa.String(length=128), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("created_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_task_events")),
    )
    with op.batch_alter_table("task_events", schema=None) as batch_op:
        batch_op.create_index("ix_task_events_created", ["created_at"], unique=False)

    op.create_table(
        "threads",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("created_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_threads")),
    )
    with op.batch_alter_table("threads", schema=None) as batch_op:
        batch_op.create_index("ix_threads_agent_status", ["agent_id", "status", "priority"], unique=False)

    op.create_table(
        "topic_clusters",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("keyword", sa.String(length=128), nullable=False),
        sa.Column("label", sa.Text(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("built_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_topic_clusters")),
        sa.UniqueConstraint("agent_id", "keyword", name="uq_topic_clusters_agent_keyword"),
    )
    op.create_table(
        "amendments",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("narrative_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("created_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["narrative_id"], ["narratives.id"], name=op.f("fk_amendments_narrative_id_narratives"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_amendments")),
    )
    with op.batch_alter_table("amendments", schema=None) as batch_op:
        batch_op.create_index("ix_amendments_narrative", ["narrative_id"], unique=False)

    op.create_table(
        "emb_cluster_members",
        sa.Column("cluster_id", sa.Integer(), nullable=False),
        sa.Column("narrative_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("distance", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["emb_clusters.id"],
            name=op.f("fk_emb_cluster_members_cluster_id_emb_clusters"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("cluster_id", "narrative_id", name=op.f("pk_emb_cluster_members")),
    )
    with op.batch_alter_table("emb_cluster_members", schema=None) as batch_op:
        batch_op.create_index("ix_emb_members_narrative", ["agent_id", "narrative_id"], unique=False)

    op.create_table(
        "narrative_sources",
        sa.Column("narrative_id", sa.Integer(), nullable=False),
        sa.Column("context_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("inferred", sa.Boolean(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["narrative_id"],
            ["narratives.id"],
            name=op.f("fk_narrative_sources_narrative_id_narratives"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("narrative_id", "context_id", name=op.f("pk_narrative_sources")),
    )
    with op.batch_alter_table("narrative_sources", schema=None) as batch_op:
        batch_op.create_index("ix_narrative_sources_context", ["agent_id", "context_id"], unique=False)

    op.create_table(
        "narrative_tags",
        sa.Column("narrative_id", sa.Integer(), nullable=False),
        sa.Column("tag", sa.String(length=128), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.ForeignKeyConstraint(
            ["narrative_id"],
            ["narratives.id"],
            name=op.f("fk_narrative_tags_narrative_id_narratives"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("narrative_id", "tag", name=op.f("pk_narrative_tags")),
    )
    with op.batch_alter_table("narrative_tags", schema=None) as batch_op:
        batch_op.create_index("ix_narrative_tags_agent_tag", ["agent_id", "tag"], unique=False)

    op.create_table(
        "profile_history",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("profile_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("changed_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["profile_id"], ["profiles.id"], name=op.f("fk_profile_history_profile_id_profiles"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_profile_history")),
    )
    with op.batch_alter_table("profile_history", schema=None) as batch_op:
        batch_op.create_index("ix_profile_history_profile", ["profile_id", "version"], unique=False)

    op.create_table(
        "self_concept_history",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("self_concept_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("changed_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["self_concept_id"],
            ["self_concept.id"],
            name=op.f("fk_self_concept_history_self_concept_id_self_concept"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_self_concept_history")),
    )
    op.create_table(
        "topic_cluster_members",
        sa.Column("cluster_id", sa.Integer(), nullable=False),
        sa.Column("narrative_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["topic_clusters.id"],
            name=op.f("fk_topic_cluster_members_cluster_id_topic_clusters"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("cluster_id", "narrative_id", name=op.f("pk_topic_cluster_members")),
    )
    with op.batch_alter_table("topic_cluster_members", schema=None) as batch_op:
        batch_op.create_index("ix_topic_members_narrative", ["agent_id", "narrative_id"], unique=False)
    _create_fts()


def downgrade() -> None:
    _drop_fts()
    with op.batch_alter_table("topic_cluster_members", schema=None) as batch_op:
        batch_op.drop_index("ix_topic_members_narrative")

    op.drop_table("topic_cluster_members")
    op.drop_table("self_concept_history")
    with op.batch_alter_table("profile_history", schema=None) as batch_op:
        batch_op.drop_index("ix_profile_history_profile")

    op.drop_table("profile_history")
    with op.batch_alter_table("narrative_tags", schema=None) as batch_op:
        batch_op.drop_index("ix_narrative_tags_agent_tag")

    op.drop_table("narrative_tags")
    with op.batch_alter_table("narrative_sources", schema=None) as batch_op:
        batch_op.drop_index("ix_narrative_sources_context")

    op.drop_table("narrative_sources")
    with op.batch_alter_table("emb_cluster_members", schema=None) as batch_op:
        batch_op.drop_index("ix_emb_members_narrative")

    op.drop_table("emb_cluster_members")
    with op.batch_alter_table("amendments", schema=None) as batch_op:
        batch_op.drop_index("ix_amendments_narrative")

    op.drop_table("amendments")
    op.drop_table("topic_clusters")
    with op.batch_alter_table("threads", schema=None) as batch_op:
        batch_op.drop_index("ix_threads_agent_status")

    op.drop_table("threads")
    with op.batch_alter_table("task_events", schema=None) as batch_op:
        batch_op.drop_index("ix_task_events_created")

    op.drop_table("task_events")
    with op.batch_alter_table("snapshots", schema=None) as batch_op:
        batch_op.drop_index("ix_snapshots_agent_created")

    op.drop_table("snapshots")
    op.drop_table("self_concept")
    op.drop_table("scan_watermarks")
    op.drop_table("profiles")
    with op.batch_alter_table("narratives", schema=None) as batch_op:
        batch_op.drop_index("ix_narratives_embedding_state")
        batch_op.drop_index("ix_narratives_agent_weight")
        batch_op.drop_index("ix_narratives_agent_created")

    op.drop_table("narratives")
    op.drop_table("entity_nodes")
    op.drop_table("entity_edges")
    with op.batch_alter_table("embeddings", schema=None) as batch_op:
        batch_op.drop_index("ix_embeddings_agent_kind_id")

    op.drop_table("embeddings")
    op.drop_table("emb_clusters")
    op.drop_table("emb_cluster_adjacency")
    op.drop_table("dream_runs")
    with op.batch_alter_table("context_turns", schema=None) as batch_op:
        batch_op.drop_index("ix_context_embedding_state")
        batch_op.drop_index("ix_context_agent_session")
        batch_op.drop_index("ix_context_agent_created")

    op.drop_table("context_turns")
    with op.batch_alter_table("attention_log", schema=None) as batch_op:
        batch_op.drop_index("ix_attention_agent_created")

    op.drop_table("attention_log")
