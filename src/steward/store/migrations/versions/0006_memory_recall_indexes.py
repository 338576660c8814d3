"""memory recall indexes

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03 09:55:00
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_RECALL_COLUMNS = [
    "person_id",
    "status",
    "audience",
    "valid_from",
    "valid_to",
    "importance",
    "observed_at",
]


def upgrade() -> None:
    op.create_index("ix_memories_recall", "memories", ["id", *_RECALL_COLUMNS])
    op.create_index("ix_memories_fts_recall", "memories", ["fts_doc", *_RECALL_COLUMNS, "id"])


def downgrade() -> None:
    op.drop_index("ix_memories_fts_recall", table_name="memories")
    op.drop_index("ix_memories_recall", table_name="memories")
