"""Embedding views: a `view` column ('base' = the row alone, 'ctx' = a turn with its preceding turns)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing vectors are all of the row alone, hence the server default; context turns get their
    # 'ctx' vector when the worker's start-up check (mark_stale for the 'ctx' view) re-queues them.
    with op.batch_alter_table("embeddings", schema=None) as batch_op:
        batch_op.add_column(sa.Column("view", sa.String(length=16), nullable=False, server_default="base"))
        batch_op.drop_constraint("uq_embeddings_kind_row", type_="unique")
        batch_op.create_unique_constraint("uq_embeddings_kind_row_view", ["kind", "row_id", "view"])
        batch_op.drop_index("ix_embeddings_agent_kind_id")
        batch_op.create_index("ix_embeddings_agent_kind_view_id", ["agent_id", "kind", "view", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("embeddings", schema=None) as batch_op:
        batch_op.drop_index("ix_embeddings_agent_kind_view_id")
        batch_op.drop_constraint("uq_embeddings_kind_row_view", type_="unique")
    op.execute("DELETE FROM embeddings WHERE view != 'base'")
    with op.batch_alter_table("embeddings", schema=None) as batch_op:
        batch_op.create_unique_constraint("uq_embeddings_kind_row", ["kind", "row_id"])
        batch_op.create_index("ix_embeddings_agent_kind_id", ["agent_id", "kind", "id"], unique=False)
        batch_op.drop_column("view")
