"""connectors: connection settings, bounds and secret; approval summaries; watch cursors

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04 05:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # connections made before this revision reach nothing by themselves (no settings, no
    # secret) and have no bounds: exactly what they allowed before
    with op.batch_alter_table("connections") as batch:
        batch.add_column(sa.Column("settings", sa.Text(), nullable=True))
        batch.add_column(sa.Column("bounds", sa.Text(), nullable=True))
        batch.add_column(sa.Column("secret", sa.String(length=160), nullable=True))
    # approvals asked before it have no summary: the dashboard shows the tool and arguments
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("summary", sa.Text(), nullable=False, server_default=""))
    op.create_table(
        "watch_cursors",
        sa.Column("connection_id", sa.String(length=160), nullable=False),
        sa.Column("source", sa.String(length=64), nullable=False),
        sa.Column("cursor", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["connection_id"], ["connections.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("connection_id", "source"),
    )


def downgrade() -> None:
    op.drop_table("watch_cursors")
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("summary")
    with op.batch_alter_table("connections") as batch:
        batch.drop_column("secret")
        batch.drop_column("bounds")
        batch.drop_column("settings")
