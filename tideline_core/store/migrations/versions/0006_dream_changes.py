"""Dream changes: each run's row-level diff for review and undo; narrative origin and supersession; run keys

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

import tideline_core.store.schema

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("narratives", schema=None) as batch_op:
        batch_op.add_column(sa.Column("origin", sa.String(length=16), server_default="agent", nullable=False))
        batch_op.add_column(sa.Column("superseded_by", sa.Integer(), nullable=True))
    with op.batch_alter_table("dream_runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("run_key", sa.String(length=64), server_default="nightly", nullable=False))
        batch_op.add_column(
            sa.Column("undone_at", tideline_core.store.schema.UTCDateTime(timezone=True), nullable=True)
        )
        batch_op.drop_constraint("uq_dream_runs_agent_day_stage", type_="unique")
        batch_op.create_unique_constraint("uq_dream_runs_agent_day_stage_key", ["agent_id", "day", "stage", "run_key"])
    op.create_table(
        "dream_changes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("target", sa.String(length=32), nullable=False),
        sa.Column("row_key", sa.String(length=256), nullable=False),
        sa.Column("before", sa.JSON(), nullable=True),
        sa.Column("after", sa.JSON(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["dream_runs.id"], name=op.f("fk_dream_changes_run_id_dream_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dream_changes")),
        sa.UniqueConstraint("run_id", "seq", name="uq_dream_changes_run_seq"),
    )
    op.create_index("ix_dream_changes_row", "dream_changes", ["agent_id", "target", "row_key"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_dream_changes_row", table_name="dream_changes")
    op.drop_table("dream_changes")
    op.execute("DELETE FROM dream_runs WHERE run_key <> 'nightly'")
    with op.batch_alter_table("dream_runs", schema=None) as batch_op:
        batch_op.drop_constraint("uq_dream_runs_agent_day_stage_key", type_="unique")
        batch_op.create_unique_constraint("uq_dream_runs_agent_day_stage", ["agent_id", "day", "stage"])
        batch_op.drop_column("undone_at")
        batch_op.drop_column("run_key")
    with op.batch_alter_table("narratives", schema=None) as batch_op:
        batch_op.drop_column("superseded_by")
        batch_op.drop_column("origin")
