"""reports: channels, reports, deliveries; quiet hours and digest time on persons

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04 16:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # persons made before this revision have no quiet hours and their digest at 18:00
    with op.batch_alter_table("persons") as batch:
        batch.add_column(sa.Column("quiet_start", sa.String(length=5), nullable=True))
        batch.add_column(sa.Column("quiet_end", sa.String(length=5), nullable=True))
        batch.add_column(
            sa.Column("digest_at", sa.String(length=5), nullable=False, server_default="18:00")
        )
    op.create_table(
        "channels",
        sa.Column("id", sa.String(length=160), nullable=False),
        sa.Column("person_id", sa.String(length=160), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("config", sa.Text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("last_used_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["person_id"], ["persons.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("person_id", "name", name="uq_channels_person_name"),
    )
    op.create_table(
        "reports",
        sa.Column("id", sa.String(length=160), nullable=False),
        sa.Column("person_id", sa.String(length=160), nullable=False),
        sa.Column("goal_id", sa.String(length=160), nullable=True),
        sa.Column("task_id", sa.String(length=160), nullable=True),
        sa.Column("origin", sa.String(length=16), nullable=False),
        sa.Column("what", sa.Text(), nullable=False),
        sa.Column("why", sa.Text(), nullable=False),
        sa.Column("todo", sa.Text(), nullable=True),
        sa.Column("importance", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("hold_until", sa.Float(), nullable=True),
        sa.Column("read_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["person_id"], ["persons.id"]),
        sa.ForeignKeyConstraint(["goal_id"], ["goals.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_reports_person", "reports", ["person_id", "created_at"])
    op.create_index("ix_reports_state", "reports", ["state", "hold_until"])
    op.create_table(
        "deliveries",
        sa.Column("id", sa.String(length=160), nullable=False),
        sa.Column("person_id", sa.String(length=160), nullable=False),
        sa.Column("channel_id", sa.String(length=160), nullable=False),
        sa.Column("ref", sa.String(length=160), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("key", sa.String(length=400), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.Float(), nullable=False),
        sa.Column("lease_holder", sa.String(length=128), nullable=True),
        sa.Column("lease_expires_at", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["person_id"], ["persons.id"]),
        sa.ForeignKeyConstraint(["channel_id"], ["channels.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key", name="uq_deliveries_key"),
    )
    op.create_index("ix_deliveries_due", "deliveries", ["status", "next_attempt_at"])
    op.create_index("ix_deliveries_ref", "deliveries", ["ref"])


def downgrade() -> None:
    op.drop_index("ix_deliveries_ref", table_name="deliveries")
    op.drop_index("ix_deliveries_due", table_name="deliveries")
    op.drop_table("deliveries")
    op.drop_index("ix_reports_state", table_name="reports")
    op.drop_index("ix_reports_person", table_name="reports")
    op.drop_table("reports")
    op.drop_table("channels")
    # plain ALTER TABLE ... DROP COLUMN (SQLite 3.35+): rebuilding persons with foreign keys
    # on would delete what cascades from it
    with op.batch_alter_table("persons", recreate="never") as batch:
        batch.drop_column("digest_at")
        batch.drop_column("quiet_end")
        batch.drop_column("quiet_start")
