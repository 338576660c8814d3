"""Schema migrations on both backends, and how Store.open treats URLs it cannot serve."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, UniqueConstraint, inspect, text

from steward.domain import TaskSpec, TriggerKind
from steward.domain.clock import SimulatedClock
from steward.errors import ConfigError
from steward.runtime.scheduler import Scheduler
from steward.service import Service
from steward.store import Store, migrate
from steward.store.schema import metadata
from support.clock import START

TABLES = set(metadata.tables)


@pytest.fixture
async def blank(db_url: str) -> AsyncIterator[Engine]:
    """The engine of a store opened on an empty database without migrating it."""
    store = await Store.open(db_url, migrate_schema=False)
    try:
        yield store.backend.engine
    finally:
        await store.close()


def _tables(engine: Engine) -> set[str]:
    return set(inspect(engine).get_table_names()) & TABLES


def _declared(name: str | None, type_: str, parent: object) -> bool:
    """The full-text structures are dialect-specific and made by migration 0005 outside the
    metadata (an FTS5 table and its shadow tables; a GIN expression index)."""
    return not (name or "").startswith(("memory_fts", "ix_memories_fulltext"))


def _schema_drift(engine: Engine) -> list[object]:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_name": _declared})
        return list(compare_metadata(context, metadata))


def _check_matches_metadata(engine: Engine) -> None:
    """Every table of the metadata exists with exactly the declared columns, nullability,
    primary key, indexes and unique constraints."""
    insp = inspect(engine)
    assert set(insp.get_table_names()) >= TABLES
    for name, table in metadata.tables.items():
        columns = {c["name"]: c for c in insp.get_columns(name)}
        assert set(columns) == set(table.columns.keys()), name
        for column in table.columns:
            assert columns[column.name]["nullable"] == column.nullable, f"{name}.{column.name}"
        pk = insp.get_pk_constraint(name)["constrained_columns"]
        assert pk == [c.name for c in table.primary_key.columns], name
        declared_indexes = {ix.name for ix in table.indexes if not ix.unique}
        found_indexes = {ix["name"] for ix in insp.get_indexes(name) if not ix["unique"]}
        assert found_indexes >= declared_indexes, name
        declared_unique = {
            frozenset(c.name for c in u.columns)
            for u in table.constraints
            if isinstance(u, UniqueConstraint)
        } | {frozenset([c.name]) for c in table.columns if c.unique}
        found_unique = {frozenset(u["column_names"]) for u in insp.get_unique_constraints(name)}
        found_unique |= {
            frozenset(str(c) for c in ix["column_names"])
            for ix in insp.get_indexes(name)
            if ix["unique"]
        }
        assert found_unique >= declared_unique, name


async def test_upgrade_blank_database_to_head(blank: Engine) -> None:
    """A blank database has no revision; upgrading brings it to head with every table and
    column the metadata declares, and no drift between the migration and the metadata."""
    assert migrate.current_revision(blank) is None
    assert _tables(blank) == set()
    await asyncio.to_thread(migrate.upgrade, blank)
    assert migrate.current_revision(blank) == migrate.head_revision()
    _check_matches_metadata(blank)
    assert _schema_drift(blank) == []
    # upgrading again is a no-op
    await asyncio.to_thread(migrate.upgrade, blank)
    assert migrate.current_revision(blank) == migrate.head_revision()


def test_head_revision_is_alembics_head() -> None:
    """Opening a database compares its revision with :func:`migrate.head_revision`, read off
    the migrations' file names without Alembic: each file is named after its revision, and the
    greatest name is the head Alembic finds by walking the history."""
    config = Config()
    config.set_main_option("script_location", str(Path(migrate.__file__).parent / "migrations"))
    script = ScriptDirectory.from_config(config)
    for revision in script.walk_revisions():
        assert Path(revision.path).name.startswith(f"{revision.revision}_"), revision.path
    assert migrate.head_revision() == script.get_current_head()


async def test_revision_is_read_as_alembic_reads_it(blank: Engine) -> None:
    """The revision read with one query (no Alembic import) is Alembic's own reading."""

    def alembics() -> str | None:
        with blank.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()

    assert migrate.current_revision(blank) is None
    await asyncio.to_thread(migrate.upgrade, blank, "0010")
    assert migrate.current_revision(blank) == alembics() == "0010"
    await asyncio.to_thread(migrate.upgrade, blank)
    assert migrate.current_revision(blank) == alembics() == migrate.head_revision()


async def test_downgrade_to_base_and_upgrade_again(blank: Engine) -> None:
    """Downgrading to base removes every table; upgrading afterwards rebuilds the schema."""
    await asyncio.to_thread(migrate.upgrade, blank)
    await asyncio.to_thread(migrate.downgrade, blank, "base")
    assert migrate.current_revision(blank) is None
    assert _tables(blank) == set()
    await asyncio.to_thread(migrate.upgrade, blank)
    assert migrate.current_revision(blank) == migrate.head_revision()
    _check_matches_metadata(blank)


async def test_store_open_migrates_and_reopens(db_url: str) -> None:
    """Store.open brings a blank database to head, and opening it again keeps the data."""
    first = await Store.open(db_url)
    try:
        assert migrate.current_revision(first.backend.engine) == migrate.head_revision()
        person = await first.persons.create_person(name="Ada", now=datetime(2026, 1, 5, tzinfo=UTC))
    finally:
        await first.close()
    second = await Store.open(db_url)
    try:
        assert [p.id for p in await second.persons.list_persons()] == [person.id]
    finally:
        await second.close()


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("mysql://user@localhost/steward", ["unsupported", "mysql", "sqlite:///", "postgresql://"]),
        ("not a database url", ["not a database URL"]),
    ],
)
async def test_store_open_rejects_unsupported_url(url: str, words: list[str]) -> None:
    """An unsupported or malformed URL raises ConfigError saying what to use instead."""
    with pytest.raises(ConfigError) as info:
        await Store.open(url)
    for word in words:
        assert word in str(info.value)


async def test_downgrading_heartbeats_keeps_every_firing(db_url: str) -> None:
    """Undoing 0012 drops its columns in place: rebuilding the triggers table with foreign
    keys on used to delete every firing (they cascade from their trigger)."""
    store = await Store.open(db_url)
    try:
        clock = SimulatedClock(START)
        service = Service(store, clock)
        person = await service.ensure_person()
        trigger = await service.add_trigger(
            person_id=person.id,
            kind=TriggerKind.INTERVAL,
            spec="60",
            task=TaskSpec(kind="noop"),
        )
        clock.advance(timedelta(seconds=61))
        await Scheduler(store, clock).tick()
        assert len(await store.schedule.list_firings(trigger.id)) == 1
        engine = store.backend.engine
        await asyncio.to_thread(migrate.downgrade, engine, "0010")
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM firings")).scalar() == 1
            assert conn.execute(text("SELECT count(*) FROM triggers")).scalar() == 1
        await asyncio.to_thread(migrate.upgrade, engine)
    finally:
        await store.close()
