"""approval preview

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04 23:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # What a tool showed of an action beside its sentence (a screenshot's workspace path and
    # hash, labelled lines) as JSON; approvals asked before this revision showed none.
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("preview", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("preview")
