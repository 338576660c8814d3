"""Migrations keep data: rows written at every earlier revision, in each table it has, are
all still there at head.

One database climbs from the first revision to head a step at a time; at each step a row is
written into every table it has then (for a person of that step's own, in foreign-key order,
each reference pointing at the row made for the table it references), with the columns a later
migration reads set to values of the shape it expects (:data:`MEANING`). So the rows of each
revision pass through every later migration, in one climb.
"""

from __future__ import annotations

import asyncio
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from steward.service import Service
from steward.store import Store, migrate

MEANING: dict[str, dict[str, Any]] = {
    "persons": {"name": "Mia", "timezone": "Europe/Lisbon", "max_concurrency": 4},
    "goals": {"title": "follow the settlement bugs", "status": "active", "budget": "{}"},
    "tasks": {"kind": "noop", "status": "succeeded", "input": "{}", "state": "{}"},
    "memories": {
        "content": "My sister Ana lives in Porto",
        "subjects": '["Ana"]',
        "kind": "fact",
        "audience": "private",
        "status": "active",
        # the full-text row the store writes beside it (SQLite), and its words (PostgreSQL)
        "lexical": "My sister Ana lives in Porto Ana",
    },
}
"""Columns a later migration (or the recall test below) reads, per table, as the code writes
them; every other column gets a plain value of its type."""
SKIP = ("alembic_version", "memory_fts", "sqlite_")
"""Tables the database maintains itself (full-text shadows) or Alembic's own."""


def _value(
    table: sa.Table, column: sa.Column[Any], made: dict[str, dict[str, Any]], step: int
) -> Any:
    if column.name == "fts_doc" and table.name == "memories":
        return step
    if column.name in MEANING.get(table.name, {}):
        return MEANING[table.name][column.name]
    for key in column.foreign_keys:
        target = key.column
        if target.table.name != table.name and target.table.name in made:
            return made[target.table.name][target.name]
    if column.nullable and not column.primary_key:
        return None
    kind = column.type
    if isinstance(kind, sa.Boolean):
        return False
    if isinstance(kind, sa.Integer):
        return step
    if isinstance(kind, (sa.Float, sa.Numeric)):
        return 1_780_000_000.0
    if isinstance(kind, sa.LargeBinary):
        return b"\x00\x01"
    if column.primary_key or column.name.endswith("_id") or _unique(table, column):
        return f"{table.name}-{step}"
    return "[]"  # the JSON lists and texts of most Text columns: parsed or read alike


def _driver(url: str) -> sa.URL:
    """``url`` with the driver the store uses (psycopg 3 for PostgreSQL)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        return parsed.set(drivername="postgresql+psycopg")
    return parsed


def _unique(table: sa.Table, column: sa.Column[Any]) -> bool:
    """Whether ``column`` is part of a unique constraint or index (each step's value differs)."""
    groups = [c.columns for c in table.constraints if isinstance(c, sa.UniqueConstraint)]
    groups += [i.columns for i in table.indexes if i.unique]
    return any(column.name in group for group in groups)


def _fill(engine: sa.Engine, step: int) -> dict[str, dict[str, Any]]:
    """A row in every table the database has now; what was inserted, by table."""
    meta = sa.MetaData()
    meta.reflect(engine)
    made: dict[str, dict[str, Any]] = {}
    with engine.begin() as conn:
        for table in meta.sorted_tables:
            if table.name.startswith(SKIP):
                continue
            row = {column.name: _value(table, column, made, step) for column in table.columns}
            conn.execute(table.insert().values(row))
            made[table.name] = row
        if "memory_fts" in meta.tables:
            conn.execute(
                sa.text("INSERT INTO memory_fts (rowid, content, subjects) VALUES (:n, :c, 'Ana')"),
                {"n": step, "c": MEANING["memories"]["content"]},
            )
    return made


def _survived(engine: sa.Engine, made: dict[str, dict[str, Any]]) -> list[str]:
    """The tables whose row is gone (looked up by primary key) after the upgrade."""
    meta = sa.MetaData()
    meta.reflect(engine)
    lost = []
    with engine.connect() as conn:
        for name, row in made.items():
            table = meta.tables.get(name)
            if table is None:
                continue  # dropped by a migration, on purpose
            keys = [c for c in table.primary_key.columns if c.name in row]
            found = conn.execute(
                sa.select(sa.func.count())
                .select_from(table)
                .where(*(c == row[c.name] for c in keys))
            ).scalar_one()
            if found != 1:
                lost.append(name)
    return lost


def test_data_at_every_revision_survives_the_upgrade_to_head(db_url: str) -> None:
    revisions = migrate.revisions()
    assert revisions[0] == "0001"
    assert revisions[-1] == migrate.head_revision()
    engine = sa.create_engine(_driver(db_url))
    made: dict[str, dict[str, dict[str, Any]]] = {}
    for step, revision in enumerate(revisions, start=1):
        migrate.upgrade(engine, revision)
        made[revision] = _fill(engine, step)
    assert migrate.current_revision(engine) == migrate.head_revision()
    for revision, rows in made.items():
        assert _survived(engine, rows) == [], f"rows made at revision {revision} were lost"
    engine.dispose()
    with_memories = [rows["persons"]["id"] for rows in made.values() if "memories" in rows]
    assert len(with_memories) > 10
    assert asyncio.run(_recalled(db_url, with_memories)) == with_memories


async def _recalled(url: str, persons: list[str]) -> list[str]:
    """The people whose memory, made at an old revision, lexical recall finds now."""
    store = await Store.open(url)
    found = []
    try:
        for person in persons:
            hits = await Service(store).search_memories(person_id=person, query="Ana")
            if [hit.memory.content for hit in hits] == [MEANING["memories"]["content"]]:
                found.append(person)
        return found
    finally:
        await store.close()
