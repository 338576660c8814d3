"""web watches: watched pages and their readings

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04 13:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "web_watches",
        sa.Column("id", sa.String(length=160), nullable=False),
        sa.Column("person_id", sa.String(length=160), nullable=False),
        sa.Column("goal_id", sa.String(length=160), nullable=True),
        sa.Column("trigger_id", sa.String(length=160), nullable=True),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("extract", sa.Text(), nullable=False),
        sa.Column("conditions", sa.Text(), nullable=False),
        sa.Column("interval_seconds", sa.Float(), nullable=False),
        sa.Column("jitter_seconds", sa.Float(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("next_check_at", sa.Float(), nullable=False),
        sa.Column("checked_at", sa.Float(), nullable=True),
        sa.Column("changed_at", sa.Float(), nullable=True),
        sa.Column("value", sa.Text(), nullable=True),
        sa.Column("matched", sa.Boolean(), nullable=False),
        sa.Column("etag", sa.Text(), nullable=True),
        sa.Column("last_modified", sa.Text(), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("checks", sa.Integer(), nullable=False),
        sa.Column("lease_holder", sa.String(length=128), nullable=True),
        sa.Column("lease_expires_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["person_id"], ["persons.id"]),
        sa.ForeignKeyConstraint(["goal_id"], ["goals.id"]),
        sa.ForeignKeyConstraint(["trigger_id"], ["triggers.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_web_watches_due", "web_watches", ["enabled", "next_check_at"])
    op.create_index("ix_web_watches_person", "web_watches", ["person_id"])
    op.create_table(
        "web_readings",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("watch_id", sa.String(length=160), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["watch_id"], ["web_watches.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_web_readings_watch", "web_readings", ["watch_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_web_readings_watch", table_name="web_readings")
    op.drop_table("web_readings")
    op.drop_index("ix_web_watches_person", table_name="web_watches")
    op.drop_index("ix_web_watches_due", table_name="web_watches")
    op.drop_table("web_watches")
