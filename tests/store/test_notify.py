"""Wake-ups across processes on PostgreSQL: a task enqueued through one store starts at once in a
runtime on another, whose polling interval is an hour (so only LISTEN/NOTIFY can explain it),
also after the LISTEN connection was cut (as by a database restart)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import psycopg
import pytest

from steward.domain import Person, TaskSpec
from steward.domain.clock import Clock
from steward.domain.outcome import Outcome, Succeed
from steward.runtime.runtime import Runtime, RuntimeConfig
from steward.runtime.stepfn import StepContext, StepHarness
from steward.store import Store
from support.databases import admin_dsn

pytestmark = pytest.mark.postgres

HOUR = 3600.0


@pytest.fixture
async def second(store: Store, db_url: str) -> AsyncIterator[Store]:
    """Another Store on the same database: what another process would hold."""
    other = await Store.open(db_url)
    yield other
    await other.close()


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_a_task_enqueued_elsewhere_starts_without_polling(
    store: Store, second: Store
) -> None:
    clock = Clock()
    person: Person = await store.persons.create_person(name="p", now=clock.now())
    started: asyncio.Queue[str] = asyncio.Queue()
    harness = StepHarness()

    async def note(ctx: StepContext) -> Outcome:
        started.put_nowait(ctx.task_id)
        return Succeed()

    harness.register("note", note)
    config = RuntimeConfig(scheduler=False, poll_seconds=HOUR)
    runtime = Runtime(second, harness, clock, config)
    assert runtime.listener is not None
    running = asyncio.ensure_future(runtime.run())
    try:
        await asyncio.wait_for(runtime.listener.connected.wait(), 60)
        first = await store.tasks.create_task(
            TaskSpec(kind="note"), person_id=person.id, now=clock.now()
        )
        assert await asyncio.wait_for(started.get(), 60) == first.id

        # cut the LISTEN connection, as a database restart does: it comes back and listens again
        pid = runtime.listener.backend_pid
        runtime.listener.connected.clear()
        with psycopg.connect(admin_dsn(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        await asyncio.wait_for(runtime.listener.connected.wait(), 60)
        assert runtime.listener.backend_pid != pid
        again = await store.tasks.create_task(
            TaskSpec(kind="note"), person_id=person.id, now=clock.now()
        )
        assert await asyncio.wait_for(started.get(), 60) == again.id
    finally:
        runtime.stop()
        await asyncio.wait_for(running, 60)
