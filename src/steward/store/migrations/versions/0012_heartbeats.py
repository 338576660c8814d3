"""heartbeats: watched types, active hours, idle counter and budget on triggers; consumed
events; follow-ups

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04 13:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # triggers made before this revision have no budget, no active hours and watch nothing:
    # exactly how they behaved
    with op.batch_alter_table("triggers") as batch:
        batch.add_column(sa.Column("watch", sa.Text(), nullable=False, server_default="[]"))
        batch.add_column(sa.Column("active_hours", sa.Text(), nullable=True))
        batch.add_column(sa.Column("idle_beats", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("last_beat_at", sa.Float(), nullable=True))
        batch.add_column(sa.Column("budget", sa.Text(), nullable=True))
        batch.add_column(sa.Column("paused_until", sa.Float(), nullable=True))
    # events routed before it count as taken: no heartbeat existed to look at them
    with op.batch_alter_table("events") as batch:
        batch.add_column(sa.Column("consumed_at", sa.Float(), nullable=True))
    op.execute("UPDATE events SET consumed_at = routed_at WHERE routed_at IS NOT NULL")
    op.create_table(
        "follow_ups",
        sa.Column("id", sa.String(length=160), nullable=False),
        sa.Column("person_id", sa.String(length=160), nullable=False),
        sa.Column("goal_id", sa.String(length=160), nullable=False),
        sa.Column("task_id", sa.String(length=160), nullable=True),
        sa.Column("due_at", sa.Float(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("done_at", sa.Float(), nullable=True),
        sa.Column("done_task_id", sa.String(length=160), nullable=True),
        sa.ForeignKeyConstraint(["person_id"], ["persons.id"]),
        sa.ForeignKeyConstraint(["goal_id"], ["goals.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_follow_ups_due", "follow_ups", ["goal_id", "done_at", "due_at"])
    op.create_index("ix_tasks_trigger", "tasks", ["trigger_id", "created_at"])
    op.create_index("ix_events_person_routed", "events", ["person_id", "routed_at"])


def downgrade() -> None:
    op.drop_index("ix_events_person_routed", table_name="events")
    op.drop_index("ix_tasks_trigger", table_name="tasks")
    op.drop_index("ix_follow_ups_due", table_name="follow_ups")
    op.drop_table("follow_ups")
    # plain ALTER TABLE ... DROP COLUMN (SQLite 3.35+): rebuilding a table with foreign keys on
    # would delete what cascades from it (every firing of every trigger)
    with op.batch_alter_table("events", recreate="never") as batch:
        batch.drop_column("consumed_at")
    with op.batch_alter_table("triggers", recreate="never") as batch:
        batch.drop_column("paused_until")
        batch.drop_column("budget")
        batch.drop_column("last_beat_at")
        batch.drop_column("idle_beats")
        batch.drop_column("active_hours")
        batch.drop_column("watch")
