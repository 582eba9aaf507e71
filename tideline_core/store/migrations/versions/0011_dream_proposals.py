"""Dream proposals: a run's plan kept for review (`dream_runs.proposal`) instead of applied

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Asked first: a store whose recorded revision was set back (to run an earlier data migration again)
    # already has the column.
    if "proposal" in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("dream_runs")}:
        return
    with op.batch_alter_table("dream_runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("proposal", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("dream_runs", schema=None) as batch_op:
        batch_op.drop_column("proposal")
