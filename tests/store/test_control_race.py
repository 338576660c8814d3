"""A cancel committed while an activation writes its outcome is not lost, and database errors
that pass (a demoted primary, a full disk) are reported as the database being unavailable."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text

from steward.domain import TaskSpec, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.domain.outcome import Requeue
from steward.errors import DatabaseUnavailable
from steward.store import DatabaseLimits, Fence, Store


async def test_a_cancel_committed_while_the_outcome_is_written_is_honoured(
    store: Store, clock: SimulatedClock, db_url: str
) -> None:
    """The cancel (here a bare UPDATE, as request_control writes it) holds the task's row when
    the worker ends its activation: the outcome is written after it commits and sees it. On
    PostgreSQL without a row lock the outcome was decided from a read taken before the
    cancel committed, and cleared it."""
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer: the two cannot interleave")
    person = await store.persons.create_person(name="p", now=clock.now())
    task = await store.tasks.create_task(
        TaskSpec(kind="noop"), person_id=person.id, now=clock.now()
    )
    [claim] = await store.tasks.claim_tasks(
        worker="w", limit=1, lease_seconds=30, now=clock.now(), lease_now=clock.lease_now()
    )
    async with await psycopg.AsyncConnection.connect(db_url) as canceller:
        await canceller.execute("UPDATE tasks SET control = 'cancel' WHERE id = %s", (task.id,))
        finish = asyncio.ensure_future(
            store.activations.finish_activation(
                Fence.of(claim),
                Requeue(reason="yield"),
                now=clock.now(),
                steps_taken=0,
                lease_now=clock.lease_now(),
            )
        )
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as watcher:
            while not finish.done():  # until the outcome's transaction waits for the row
                cur = await watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND datname = current_database()"
                )
                row = await cur.fetchone()
                if row is not None and row[0] > 0:
                    break
                await asyncio.sleep(0.01)
        await canceller.commit()
        await finish
    done = await store.tasks.get_task(task.id)
    assert done.status is TaskStatus.CANCELLED


async def test_a_read_only_postgres_primary_is_unavailable(
    store: Store, clock: SimulatedClock, db_url: str
) -> None:
    """A primary demoted during a failover refuses writes with SQLSTATE 25006: the runtime
    waits for the new primary instead of failing (or crashing on) the write."""
    if not db_url.startswith("postgresql"):
        pytest.skip("PostgreSQL only")
    server, name = db_url.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    readonly = await Store.open(db_url)
    try:
        with pytest.raises(DatabaseUnavailable, match="read-only"):
            await readonly.persons.create_person(name="p", now=clock.now())
    finally:
        await readonly.close()
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{name}" RESET default_transaction_read_only')


async def test_a_full_sqlite_disk_is_unavailable(store: Store, db_url: str, tmp_path: Path) -> None:
    """SQLITE_FULL (and I/O errors, a file that cannot be opened) can pass: waited out."""
    if not db_url.startswith("sqlite"):
        pytest.skip("SQLite only")
    conn = sqlite3.connect(tmp_path / "full.db")
    conn.execute("CREATE TABLE t (x BLOB)")
    conn.execute("PRAGMA max_page_count = 3")
    with pytest.raises(sqlite3.OperationalError) as full:
        conn.execute("INSERT INTO t VALUES (zeroblob(100000))")
    conn.close()
    reason = store.backend.unavailable_reason(full.value)
    assert reason is not None
    assert "full" in reason


async def test_a_statement_timeout_fails_the_step_rather_than_looking_like_an_outage(
    db_url: str, store: Store
) -> None:
    """The same statement would time out again: an error of the step (an attempt counted,
    in the end dead-lettered), not an outage to wait out forever."""
    if not db_url.startswith("postgresql"):
        pytest.skip("PostgreSQL's statement_timeout")
    slow = await Store.open(db_url, limits=DatabaseLimits(statement_timeout_seconds=0.05))
    try:
        with pytest.raises(Exception, match="statement timeout") as timed_out:
            await slow.backend.read(lambda conn: conn.execute(text("SELECT pg_sleep(2)")).all())
        assert not isinstance(timed_out.value, DatabaseUnavailable)
    finally:
        await slow.close()
