"""workers: the runtime processes on this database, their heartbeats and what they can run

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05 05:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workers",
        sa.Column("id", sa.String(length=160), nullable=False),
        sa.Column("host", sa.Text(), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("version", sa.Text(), nullable=False),
        sa.Column("fingerprint", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("roles", sa.Text(), nullable=False),
        sa.Column("cannot_run", sa.Text(), nullable=False),
        sa.Column("lease_seconds", sa.Float(), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("heartbeat_at", sa.Float(), nullable=False),
        sa.Column("stopped_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_workers_heartbeat", "workers", ["stopped_at", "heartbeat_at"])


def downgrade() -> None:
    op.drop_index("ix_workers_heartbeat", table_name="workers")
    op.drop_table("workers")
