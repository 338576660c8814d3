"""Data written at every earlier schema survives the migrations to head and reads back.

For each Alembic revision: a fresh database is migrated to that revision only, rows of one of
everything (a person, goal, task, step, activation, effect, approval, notification, memory,
skill, grant, token...) are written into the tables and columns that revision has, with plain
SQL, then the store opens it (bringing it to head). Every row must still be there with the
values it was written with, and the store's reads must return the objects.

The rows are taken from a database at head filled through the public API (one tenant of
``support.tenancy`` and a checkpointed step): the migrations only ever add tables and columns
(with server defaults), so a row at an earlier revision is the head row without the newer
columns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, MetaData, Table, inspect, select

from steward.domain import TaskSpec
from steward.domain.clock import SimulatedClock
from steward.store import Fence, Store, migrate
from steward.store.schema import metadata
from support.clock import START
from support.databases import fresh_database
from support.tenancy import Tenant, make_tenant

Rows = dict[str, list[dict[str, Any]]]


def revisions() -> list[str]:
    """Every revision, oldest first."""
    config = Config()
    config.set_main_option("script_location", str(Path(migrate.__file__).parent / "migrations"))
    return [
        script.revision
        for script in reversed(list(ScriptDirectory.from_config(config).walk_revisions()))
    ]


@dataclass(kw_only=True, frozen=True)
class Specimen:
    """One of everything, as rows of every table at head, and the objects they stand for."""

    tenant: Tenant
    """What the rows hold, as the API returned it when writing."""
    step_task: str
    """A task with one checkpointed step."""
    rows: Rows
    """Every row of every table, by table."""


async def _fill(url: str, data_dir: Path) -> Specimen:
    store = await Store.open(url)
    try:
        clock = SimulatedClock(START)
        tenant = await make_tenant(store, clock, "ada", data_dir)
        other = await store.tasks.create_task(
            TaskSpec(kind="noop", title="stepped"), person_id=tenant.person.id, now=clock.now()
        )
        [claim] = await store.tasks.claim_tasks(
            worker="w", limit=1, lease_seconds=3600, now=clock.now(), lease_now=clock.lease_now()
        )
        assert claim.task.id == other.id
        await store.activations.checkpoint(
            Fence.of(claim),
            seq=1,
            kind="tool",
            output={"said": "hello"},
            state={"upto": 1},
            now=clock.now(),
            lease_now=clock.lease_now(),
        )

        def dump(conn: Connection) -> Rows:
            return {
                table.name: [dict(row._mapping) for row in conn.execute(select(table))]
                for table in metadata.sorted_tables
            }

        return Specimen(tenant=tenant, step_task=other.id, rows=await store.backend.read(dump))
    finally:
        await store.close()


@pytest.fixture(scope="module")
def specimen(tmp_path_factory: pytest.TempPathFactory) -> Specimen:
    where = tmp_path_factory.mktemp("specimen")
    return asyncio.run(_fill(f"sqlite:///{where / 'steward.db'}", where / "data"))


def _write_at(conn: Connection, rows: Rows) -> Rows:
    """Insert ``rows`` into the tables and columns the database has now (its revision's);
    return what was written."""
    present = set(inspect(conn).get_table_names())
    written: Rows = {}
    for table in metadata.sorted_tables:
        if table.name not in present or not rows[table.name]:
            continue
        there = Table(table.name, MetaData(), autoload_with=conn)
        columns = set(there.columns.keys())
        written[table.name] = [
            {k: v for k, v in row.items() if k in columns} for row in rows[table.name]
        ]
        conn.execute(there.insert(), written[table.name])
    assert written, "nothing to write"
    return written


def _read_back(conn: Connection, written: Rows) -> Rows:
    """The rows of the tables written, at head, with only the columns that were written."""
    found: Rows = {}
    for name, rows in written.items():
        table = metadata.tables[name]
        found[name] = [
            {k: v for k, v in dict(row._mapping).items() if k in rows[0]}
            for row in conn.execute(select(table))
        ]
    return found


def _sorted(rows: Rows) -> dict[str, list[str]]:
    return {
        name: sorted(repr(sorted(row.items())) for row in table) for name, table in rows.items()
    }


@contextmanager
def _database(request: pytest.FixtureRequest, backend: str, path: Path) -> Iterator[str]:
    yield from fresh_database(request, backend, path, migrated=False)


@pytest.mark.parametrize("revision", revisions())
@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_rows_written_at_a_revision_survive_to_head(
    request: pytest.FixtureRequest,
    backend: str,
    revision: str,
    specimen: Specimen,
    tmp_path: Path,
) -> None:
    with _database(request, backend, tmp_path / "steward.db") as url:
        store = await Store.open(url, migrate_schema=False)
        try:
            engine = store.backend.engine
            await asyncio.to_thread(migrate.upgrade, engine, revision)

            def write(conn: Connection) -> Rows:
                return _write_at(conn, specimen.rows)

            written = await store.backend.write(write)
        finally:
            await store.close()

        store = await Store.open(url)  # to head
        try:
            assert migrate.current_revision(store.backend.engine) == migrate.head_revision()
            found = await store.backend.read(lambda conn: _read_back(conn, written))
            assert _sorted(found) == _sorted(written)

            # ...and the store reads them as objects
            t = specimen.tenant
            assert (await store.persons.get_person(t.person.id)).name == t.person.name
            assert (await store.goals.get_goal(t.goal.id)).title == t.goal.title
            task = await store.tasks.get_task(t.task.id)
            [stored] = [row for row in specimen.rows["tasks"] if row["id"] == t.task.id]
            assert (task.goal_id, task.status) == (t.goal.id, stored["status"])
            [step] = await store.activations.list_steps(specimen.step_task)
            assert (step.seq, step.kind, step.output) == (1, "tool", {"said": "hello"})
            effect = await store.effects.get_effect(t.effect.id)
            assert (effect.key, effect.status) == (t.effect.key, t.effect.status)
            if "approvals" in written:
                approval = await store.inbox.get_approval(t.approval.id)
                assert (approval.args, approval.status) == (t.approval.args, t.approval.status)
            if "memories" in written:
                memory = await store.memory.get_memory(t.memory.id)
                assert (memory.content, memory.sources) == (t.memory.content, t.memory.sources)
        finally:
            await store.close()
