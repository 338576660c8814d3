"""mail channel: approval reply tokens, conversations held by mail

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04 16:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

ID = sa.String(length=160)


def upgrade() -> None:
    op.create_table(
        "channel_tokens",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("person_id", ID, nullable=False),
        sa.Column("channel_id", ID, nullable=False),
        sa.Column("approval_id", ID, nullable=False),
        sa.Column("args_hash", sa.String(length=128), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("used_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["person_id"], ["persons.id"]),
        sa.ForeignKeyConstraint(["channel_id"], ["channels.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_channel_tokens_approval", "channel_tokens", ["approval_id"])
    op.create_table(
        "mail_conversations",
        sa.Column("task_id", ID, nullable=False),
        sa.Column("person_id", ID, nullable=False),
        sa.Column("channel_id", ID, nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("last_message_id", sa.Text(), nullable=False),
        sa.Column("thread_refs", sa.Text(), nullable=False),
        sa.Column("mailed_seq", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["person_id"], ["persons.id"]),
        sa.ForeignKeyConstraint(["channel_id"], ["channels.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("task_id"),
    )
    op.create_index(
        "ix_mail_conversations_person", "mail_conversations", ["person_id", "updated_at"]
    )
    op.create_table(
        "mail_thread_messages",
        sa.Column("person_id", ID, nullable=False),
        sa.Column("message_id", sa.String(length=500), nullable=False),
        sa.Column("task_id", ID, nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["person_id"], ["persons.id"]),
        sa.PrimaryKeyConstraint("person_id", "message_id"),
    )


def downgrade() -> None:
    op.drop_table("mail_thread_messages")
    op.drop_index("ix_mail_conversations_person", table_name="mail_conversations")
    op.drop_table("mail_conversations")
    op.drop_index("ix_channel_tokens_approval", table_name="channel_tokens")
    op.drop_table("channel_tokens")
