"""approval roles

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03 22:45:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Approvals asked before this revision have no roles: a lasting grant made from one reads
    # its arguments by name, as it did when it was asked.
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("roles", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("roles")
