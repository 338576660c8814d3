"""lexical search in any language

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05 02:00:00
"""

import json
from collections.abc import Callable

import sqlalchemy as sa
from alembic import op

# The backfill must index exactly as the store writes: the same (pure) function, not a copy.
from steward.domain import lexicon

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_BATCH = 1000
_OLD_INDEX = "to_tsvector('english', content || ' ' || subjects)"
_NEW_INDEX = "to_tsvector('english', coalesce(lexical, content || ' ' || subjects))"


def upgrade() -> None:
    # Memories in a script written without spaces (Chinese, Japanese, Korean, Thai...) are
    # indexed as character bigrams: ``lexical`` holds that text for PostgreSQL's index, and
    # SQLite's full-text rows of those memories are written again.
    with op.batch_alter_table("memories") as batch:
        batch.add_column(sa.Column("lexical", sa.Text(), nullable=True))
    _reindex(lexicon.index_text, keep_lexical=True)
    if op.get_bind().dialect.name != "sqlite":
        op.execute("DROP INDEX IF EXISTS ix_memories_fulltext")
        op.execute(f"CREATE INDEX ix_memories_fulltext ON memories USING gin ({_NEW_INDEX})")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _reindex(lambda text: text, keep_lexical=False)
    else:
        op.execute("DROP INDEX IF EXISTS ix_memories_fulltext")
        op.execute(f"CREATE INDEX ix_memories_fulltext ON memories USING gin ({_OLD_INDEX})")
    with op.batch_alter_table("memories") as batch:
        batch.drop_column("lexical")


def _reindex(prepare: Callable[[str], str], *, keep_lexical: bool) -> None:
    """Write again the full-text rows (SQLite) and ``lexical`` of the memories that hold an
    unspaced script, in batches of the memories' ids; the others' index is unchanged."""
    bind = op.get_bind()
    sqlite = bind.dialect.name == "sqlite"
    after = ""
    while True:
        batch = bind.execute(
            sa.text(
                "SELECT id, content, subjects, fts_doc FROM memories WHERE id > :after "
                "ORDER BY id LIMIT :n"
            ),
            {"after": after, "n": _BATCH},
        ).all()
        if not batch:
            return
        after = batch[-1].id
        lexical, fts = [], []
        for row in batch:
            subjects = " ".join(json.loads(row.subjects))
            if not lexicon.has_unspaced(f"{row.content} {subjects}"):
                continue
            lexical.append({"id": row.id, "lexical": prepare(f"{row.content} {subjects}")})
            if row.fts_doc is not None:
                fts.append(
                    {
                        "doc": row.fts_doc,
                        "content": prepare(row.content),
                        "subjects": prepare(subjects),
                    }
                )
        # one statement per batch, many rows each
        if keep_lexical and lexical:
            bind.execute(sa.text("UPDATE memories SET lexical = :lexical WHERE id = :id"), lexical)
        if sqlite and fts:
            bind.execute(
                sa.text(
                    "INSERT OR REPLACE INTO memory_fts (rowid, content, subjects) "
                    "VALUES (:doc, :content, :subjects)"
                ),
                fts,
            )
