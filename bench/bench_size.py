"""Store size per 1,000 finished tasks, and what ``prune_history`` gives back.

1,000 ``noop`` tasks are run to completion by a real worker, once with 1 step each and once with
10 steps each (fresh database each time). Size is measured:

* SQLite: main file + WAL after ``PRAGMA wal_checkpoint(TRUNCATE)``;
* PostgreSQL: the sum of ``pg_total_relation_size`` (table + indexes + TOAST) over the store's
  tables,

first for the empty store (schema, one person), then with the 1,000 finished tasks, then after
``prune_history(before=now)`` deletes them with their steps and activations, and finally after
the space is compacted (SQLite ``VACUUM``; PostgreSQL ``VACUUM FULL``). Without compaction SQLite
keeps freed pages in its free list and PostgreSQL keeps dead tuples for reuse, so pruning stops
growth rather than shrinking files.
"""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import timedelta

import psycopg

from bench_support import (
    Outcome,
    fresh_database,
    gather_chunked,
    pg_dsn,
    sqlite_bytes,
    sqlite_checkpoint,
    sqlite_path,
)
from steward.domain import TaskSpec, TaskStatus
from steward.domain.clock import Clock
from steward.runtime.builtin import builtin_harness
from steward.runtime.worker import Worker
from steward.store import Store
from steward.store.schema import metadata

TASKS = 1000


def _pg_bytes(url: str) -> int:
    names = [table.name for table in metadata.sorted_tables]
    with psycopg.connect(pg_dsn(url), autocommit=True) as conn:
        total = conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname = ANY(%s)",
            (names,),
        ).fetchone()
    return int(total[0]) if total else 0


def _vacuum(url: str, backend: str, *, full: bool) -> None:
    """SQLite: VACUUM rebuilds the file (``full`` only; freed pages are reused anyway).
    PostgreSQL: plain VACUUM (what autovacuum does: dead tuples become reusable) or VACUUM FULL
    (rewrites the tables)."""
    if backend == "sqlite":
        if not full:
            return
        lite = sqlite3.connect(sqlite_path(url))
        try:
            lite.execute("VACUUM")
        finally:
            lite.close()
    else:
        with psycopg.connect(pg_dsn(url), autocommit=True) as conn:
            conn.execute("VACUUM FULL" if full else "VACUUM")


def _size(url: str, backend: str) -> int:
    if backend == "sqlite":
        sqlite_checkpoint(url)
        return sqlite_bytes(url)
    return _pg_bytes(url)


async def _finish_tasks(url: str, person_id: str, steps: int) -> None:
    """Run TASKS noop tasks of ``steps`` steps to completion with a real worker."""
    store = await Store.open(url)
    try:
        clock = Clock()
        spec = TaskSpec(kind="noop", input={"steps": steps})
        await gather_chunked(
            lambda: store.tasks.create_task(spec, person_id=person_id, now=clock.now())
            for _ in range(TASKS)
        )
        await Worker(store, builtin_harness(), clock, concurrency=16).run_until_idle()
        counts = await store.tasks.count_tasks()
        if counts.get(TaskStatus.SUCCEEDED.value) != TASKS:
            raise RuntimeError(f"tasks did not all succeed: {counts}")
    finally:
        await store.close()


async def _prune(url: str) -> dict[str, int]:
    store = await Store.open(url)
    try:
        return await store.schedule.prune_history(before=Clock().now() + timedelta(seconds=1))
    finally:
        await store.close()


async def run(url: str, backend: str, steps: int) -> dict[str, object]:
    store = await Store.open(url)
    try:
        person = await store.persons.create_person(name="me", now=Clock().now(), max_concurrency=16)
    finally:
        await store.close()
    size = asyncio.to_thread
    empty = await size(_size, url, backend)
    await _finish_tasks(url, person.id, steps)
    full = await size(_size, url, backend)
    deleted = await _prune(url)
    pruned = await size(_size, url, backend)
    # a second batch after pruning: does it reuse the freed space?
    await size(_vacuum, url, backend, full=False)
    await _finish_tasks(url, person.id, steps)
    refilled = await size(_size, url, backend)
    await _prune(url)
    await size(_vacuum, url, backend, full=True)
    compacted = await size(_size, url, backend)
    return {
        "tasks": TASKS,
        "steps_per_task": steps,
        "empty_bytes": empty,
        "with_tasks_bytes": full,
        "per_1000_tasks_bytes": full - empty,
        "after_prune_bytes": pruned,
        "refilled_after_prune_bytes": refilled,
        "after_compact_bytes": compacted,
        "pruned_rows": deleted,
    }


def _kib(n: object) -> str:
    return f"{int(n) / 1024:,.0f} KiB"  # type: ignore[call-overload]


async def bench_size(backend: str, quick: bool) -> Outcome:
    out = Outcome()
    compact = "VACUUM" if backend == "sqlite" else "VACUUM FULL"
    for steps in (1,) if quick else (1, 10):
        with fresh_database(backend) as url:
            result = await run(url, backend, steps)
        out.details[f"{steps}_steps"] = result
        out.add(
            bench="size",
            backend=backend,
            name=f"store growth per 1,000 finished tasks of {steps} step(s)",
            value=round(int(result["per_1000_tasks_bytes"]) / 1024, 1),  # type: ignore[call-overload]
            unit="KiB",
            note=f"{_kib(result['empty_bytes'])} -> {_kib(result['with_tasks_bytes'])}; "
            f"pruned: {_kib(result['after_prune_bytes'])}; 2nd batch: "
            f"{_kib(result['refilled_after_prune_bytes'])}; pruned + {compact}: "
            f"{_kib(result['after_compact_bytes'])}",
        )
    one, ten = out.details.get("1_steps"), out.details.get("10_steps")
    if one and ten:
        extra = (ten["per_1000_tasks_bytes"] - one["per_1000_tasks_bytes"]) / (9 * TASKS)
        out.details["bytes_per_extra_step"] = round(extra, 1)
        out.add(
            bench="size",
            backend=backend,
            name="store growth per extra checkpointed step",
            value=round(extra, 1),
            unit="bytes",
            note="(10-step size - 1-step size) / 9,000 steps",
        )
    return out
