"""Concurrent use of the store: many claimers at once, two processes' worth of connection
pools on one database, and SQLite's group commit of concurrent checkpoints."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import Connection
from sqlalchemy.exc import SQLAlchemyError

from steward.domain import Person, TaskSpec, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.domain.outcome import Claim, Succeed
from steward.errors import LeaseLost, StewardError
from steward.store import Fence, Store
from support.clock import START
from support.databases import fresh_postgres_url

LEASE = 30.0
LIMITS = (2, 3, 5)
"""max_concurrency of the persons in the claim tests."""


async def _people_with_tasks(store: Store, clock: SimulatedClock, per_person: int) -> list[Person]:
    people = []
    for i, limit in enumerate(LIMITS):
        person = await store.persons.create_person(
            name=f"p{i}", now=clock.now(), max_concurrency=limit
        )
        for n in range(per_person):
            spec = TaskSpec(kind="noop", priority=n % 3)
            await store.tasks.create_task(spec, person_id=person.id, now=clock.now())
        people.append(person)
    return people


async def _claim(store: Store, clock: SimulatedClock, worker: str, limit: int) -> list[Claim]:
    return await store.tasks.claim_tasks(
        worker=worker,
        limit=limit,
        lease_seconds=LEASE,
        now=clock.now(),
        lease_now=clock.lease_now(),
    )


async def _check_running(store: Store, people: list[Person], claims: list[Claim]) -> None:
    """No task claimed twice; no person over their limit; the database agrees with the
    claims: exactly the claimed tasks run, each owned by its claimer at epoch 1."""
    ids = [c.task.id for c in claims]
    assert len(ids) == len(set(ids)), "a task was claimed twice"
    per_person = Counter(c.task.person_id for c in claims)
    for person in people:
        assert per_person[person.id] <= person.max_concurrency
    running = await store.tasks.list_tasks(status=[TaskStatus.RUNNING], limit=1000)
    assert {t.id for t in running} == set(ids)
    owner = {c.task.id: c.activation.worker for c in claims}
    for task in running:
        assert task.lease_owner == owner[task.id]
    assert len(await store.activations.list_activations(limit=1000)) >= len(ids)


async def test_concurrent_claimers_never_double_claim(store: Store, clock: SimulatedClock) -> None:
    """Many claim_tasks calls at once never hand one task to two claimers and never run more
    of a person's tasks than max_concurrency; a later claim tops every person up exactly."""
    people = await _people_with_tasks(store, clock, per_person=12)
    batches = await asyncio.gather(*(_claim(store, clock, f"w{i}", 3) for i in range(12)))
    claims = [c for batch in batches for c in batch]
    assert claims, "nobody claimed anything"
    assert all(c.epoch == 1 for c in claims)
    await _check_running(store, people, claims)
    claims += await _claim(store, clock, "top-up", 100)
    await _check_running(store, people, claims)
    assert Counter(c.task.person_id for c in claims) == {p.id: p.max_concurrency for p in people}


@pytest.fixture
async def two_stores(db_url: str) -> AsyncIterator[tuple[Store, Store]]:
    """Two Store instances on one database: two connection pools, as two processes have."""
    first = await Store.open(db_url)
    try:
        second = await Store.open(db_url)
        try:
            yield first, second
        finally:
            await second.close()
    finally:
        await first.close()


async def test_two_store_instances_never_double_claim(
    two_stores: tuple[Store, Store], clock: SimulatedClock
) -> None:
    """Claimers on two separate stores (pools) racing over several rounds, with tasks
    finishing in between, never double-claim and never exceed a person's limit."""
    a, b = two_stores
    people = await _people_with_tasks(a, clock, per_person=10)
    live: dict[str, tuple[Store, Claim]] = {}
    for round_ in range(3):
        calls = [
            _claim(store, clock, f"{name}{round_}-{i}", 2)
            for i in range(6)
            for name, store in (("a", a), ("b", b))
        ]
        stores = [store for _ in range(6) for store in (a, b)]
        batches = await asyncio.gather(*calls)
        for store, batch in zip(stores, batches, strict=True):
            for c in batch:
                assert c.task.id not in live, "a task was claimed twice"
                live[c.task.id] = (store, c)
        await _check_running(b, people, [c for _, c in live.values()])
        # finish half of what runs, each through the store that claimed it
        for task_id in sorted(live)[::2]:
            store, c = live.pop(task_id)
            await store.activations.finish_activation(
                Fence.of(c), Succeed(), now=clock.now(), steps_taken=0, lease_now=clock.lease_now()
            )
    done = await a.tasks.list_tasks(status=[TaskStatus.SUCCEEDED], limit=1000)
    assert len(done) > 0


# --- SQLite: one writer thread, group commit ---------------------------------------------


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(f"sqlite:///{tmp_path}/group.db")
    try:
        yield s
    finally:
        await s.close()


async def _running_claims(store: Store, clock: SimulatedClock, n: int) -> list[Claim]:
    person = await store.persons.create_person(name="p", now=clock.now(), max_concurrency=n)
    for _ in range(n):
        await store.tasks.create_task(TaskSpec(kind="noop"), person_id=person.id, now=clock.now())
    claims = await _claim(store, clock, "w", n)
    assert len(claims) == n
    return claims


async def _one_batch(store: Store, calls: list[Any]) -> tuple[list[Any], Any, Any]:
    """Run ``calls`` (coroutines that each make one write) so that they reach the single
    SQLite writer together: hold the writer on a gate until all are queued, then let go.
    Returns their results (exceptions included) and what two probe operations queued first
    and last saw as their transaction."""
    gate = threading.Event()
    backend: Any = store.backend

    def hold(conn: Connection) -> None:
        assert gate.wait(10), "gate never opened"

    def probe(conn: Connection) -> Any:
        return conn.get_transaction()

    held = asyncio.ensure_future(backend.write(hold))
    await asyncio.sleep(0)
    first = asyncio.ensure_future(backend.write(probe))
    work = [asyncio.ensure_future(call) for call in calls]
    last = asyncio.ensure_future(backend.write(probe))
    # each write queues its job before its first await; wait until all of them are queued
    # (the writer has taken at most the gate job off the queue)
    for _ in range(1000):
        if backend._queue.qsize() >= len(calls) + 2:
            break
        await asyncio.sleep(0)
    gate.set()
    await held
    results = await asyncio.gather(*work, return_exceptions=True)
    return list(results), await first, await last


async def test_sqlite_concurrent_checkpoints_share_one_commit(
    sqlite_store: Store, clock: SimulatedClock
) -> None:
    """Checkpoints of different tasks made at once are committed together in one transaction
    (group commit), and every one of them is durable in the database afterwards."""
    store = sqlite_store
    claims = await _running_claims(store, clock, 20)
    calls = [
        store.activations.checkpoint(
            Fence.of(c),
            seq=1,
            kind="step",
            output={"task": c.task.id},
            state={"i": i},
            now=clock.now(),
            lease_now=clock.lease_now(),
        )
        for i, c in enumerate(claims)
    ]
    results, first_tx, last_tx = await _one_batch(store, calls)
    assert results == [None] * len(claims)
    assert first_tx is last_tx, "the queued writes were not committed as one batch"
    for i, c in enumerate(claims):
        task = await store.tasks.get_task(c.task.id)
        assert (task.step_seq, task.state) == (1, {"i": i})
        steps = await store.activations.list_steps(c.task.id)
        assert [(s.seq, s.output) for s in steps] == [(1, {"task": c.task.id})]


async def test_sqlite_stale_fence_in_batch_fails_only_itself(
    sqlite_store: Store, clock: SimulatedClock
) -> None:
    """One stale-fence checkpoint in a group-committed batch raises LeaseLost for that caller
    only; every other checkpoint of the batch still commits."""
    store = sqlite_store
    claims = await _running_claims(store, clock, 10)
    stale_at = 4
    fences = [Fence.of(c) for c in claims]
    victim = fences[stale_at]
    fences[stale_at] = Fence(victim.task_id, victim.epoch + 1, victim.activation_id)
    calls = [
        store.activations.checkpoint(
            f,
            seq=1,
            kind="step",
            output=None,
            state={"ok": True},
            now=clock.now(),
            lease_now=clock.lease_now(),
        )
        for f in fences
    ]
    results, _, _ = await _one_batch(store, calls)
    for i, (c, result) in enumerate(zip(claims, results, strict=True)):
        task = await store.tasks.get_task(c.task.id)
        if i == stale_at:
            assert isinstance(result, LeaseLost)
            assert (task.step_seq, task.state) == (0, {})
            assert await store.activations.list_steps(c.task.id) == []
        else:
            assert result is None
            assert (task.step_seq, task.state) == (1, {"ok": True})


async def test_sqlite_write_fails_rather_than_hangs_when_writer_cannot_connect(
    tmp_path: Path, clock: SimulatedClock
) -> None:
    """If the writer cannot reach the database, a write raises an error instead of hanging."""
    not_a_file = tmp_path / "a_directory"
    not_a_file.mkdir()
    store = await Store.open(f"sqlite:///{not_a_file}", migrate_schema=False)
    try:
        write = asyncio.ensure_future(store.persons.create_person(name="x", now=clock.now()))
        for _ in range(100):  # the write ends (with an error), or the writer thread is gone
            done, _ = await asyncio.wait({write}, timeout=0.05)
            if done or not store.backend.writer_alive:
                break
        await asyncio.wait({write}, timeout=0.5)
        if not write.done():
            write.cancel()
            pytest.fail("the write hangs: the writer thread died and nobody answers it")
        with pytest.raises((SQLAlchemyError, StewardError, sqlite3.Error)):
            write.result()
    finally:
        await store.close()


@pytest.mark.postgres
async def test_a_read_survives_the_database_dropping_its_pooled_connections() -> None:
    """Reads skip the pool's pre-ping; when the server has closed a pooled connection (a
    restart, an idle timeout), the read runs again on a fresh one instead of failing."""
    for url in fresh_postgres_url():
        store = await Store.open(url)
        try:
            person = await store.persons.create_person(name="p", now=SimulatedClock(START).now())
            assert [p.id for p in await store.persons.list_persons()] == [person.id]
            name = url.rpartition("/")[2]
            with psycopg.connect(url, autocommit=True) as admin:
                killed = admin.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = %s AND pid <> pg_backend_pid()",
                    (name,),
                ).fetchone()
            assert killed is not None
            assert killed[0] >= 1
            assert [p.id for p in await store.persons.list_persons()] == [person.id]
        finally:
            await store.close()
