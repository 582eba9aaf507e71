"""Injections: what each session was shown; attention hits of a recall carry no similarity

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

import tideline_core.store.schema

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "injections",
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("session_id", sa.String(length=256), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("row_id", sa.Integer(), nullable=False),
        sa.Column("tier", sa.String(length=8), nullable=False),
        sa.Column("injected_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("agent_id", "session_id", "kind", "row_id", name=op.f("pk_injections")),
    )
    op.create_index("ix_injections_injected_at", "injections", ["injected_at"], unique=False)
    with op.batch_alter_table("attention_log", schema=None) as batch_op:
        batch_op.alter_column("similarity", existing_type=sa.Float(), nullable=True)
    # A recall was logged as similarity 1.0; it never measured one.
    op.execute("UPDATE attention_log SET similarity = NULL WHERE source = 'recall'")


def downgrade() -> None:
    op.execute("UPDATE attention_log SET similarity = 1.0 WHERE similarity IS NULL")
    with op.batch_alter_table("attention_log", schema=None) as batch_op:
        batch_op.alter_column("similarity", existing_type=sa.Float(), nullable=False)
    op.drop_index("ix_injections_injected_at", table_name="injections")
    op.drop_table("injections")
