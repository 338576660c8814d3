"""effect send deadline

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03 21:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Effects sent before this revision have no deadline: nothing holds up deciding them.
    with op.batch_alter_table("effects") as batch:
        batch.add_column(sa.Column("send_deadline", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("effects") as batch:
        batch.drop_column("send_deadline")
