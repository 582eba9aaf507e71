"""Write receipts: the result of each write made with an idempotency key, so a retry returns it and stores nothing

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

import tideline_core.store.schema

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "write_receipts",
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("key", sa.String(length=128), nullable=False),
        sa.Column("operation", sa.String(length=32), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("result", sa.JSON(), nullable=False),
        sa.Column("created_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("agent_id", "key", name=op.f("pk_write_receipts")),
    )


def downgrade() -> None:
    op.drop_table("write_receipts")
