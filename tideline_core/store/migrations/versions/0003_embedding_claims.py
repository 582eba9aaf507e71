"""Embedding claims: which pending rows an embed task is working on, so concurrent tasks share the work

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

import tideline_core.store.schema

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "embedding_claims",
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("row_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("token", sa.String(length=64), nullable=False),
        sa.Column("claimed_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("kind", "row_id", name=op.f("pk_embedding_claims")),
    )


def downgrade() -> None:
    op.drop_table("embedding_claims")
