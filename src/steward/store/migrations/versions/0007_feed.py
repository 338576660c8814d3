"""feed

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03 10:40:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "feed",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("person_id", sa.String(length=160), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("goal_id", sa.String(length=160), nullable=True),
        sa.Column("task_id", sa.String(length=160), nullable=True),
        sa.Column("ref", sa.String(length=200), nullable=True),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_feed_person_seq", "feed", ["person_id", "seq"])
    op.create_index("ix_feed_goal_seq", "feed", ["goal_id", "seq"])


def downgrade() -> None:
    op.drop_index("ix_feed_goal_seq", table_name="feed")
    op.drop_index("ix_feed_person_seq", table_name="feed")
    op.drop_table("feed")
