"""Idle cost: what a runtime burns while 10,000 goals each have a task asleep.

Setup (not measured): 10,000 goals, each with one ``wait_event`` task that has really run its
first step and gone to sleep (status ``waiting``, on an event that never comes, with a timeout a
month away, so it is both an event wait and a far-future timer). The runtime is then a separate
``steward up --db URL`` process; after it has settled, its CPU time (user + system, all threads)
is read with psutil over the window and divided by the wall time: % of one core.

On PostgreSQL part of the work happens in the server: the CPU of the server backends serving
this database (found in ``pg_stat_activity``) over the same window is reported beside it.
"""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any

import psutil
from sqlalchemy import func, select

from bench_support import Outcome, fresh_database, gather_chunked, pg_dsn, subprocess_up
from steward.domain import TaskSpec
from steward.domain.clock import Clock
from steward.runtime.builtin import builtin_harness
from steward.runtime.worker import Worker
from steward.store import Store
from steward.store.schema import tasks

TARGET_CPU = 5.0
MONTH = 30 * 24 * 3600


def _plan(quick: bool) -> tuple[int, float, float]:
    """(goals, settle seconds, measured window seconds)."""
    return (2000, 3.0, 10.0) if quick else (10_000, 5.0, 30.0)


async def setup(url: str, goals: int) -> dict[str, Any]:
    """Create the goals and put one waiting task under each, through a real worker."""
    store = await Store.open(url)
    try:
        clock = Clock()
        t0 = time.perf_counter()
        person = await store.persons.create_person(name="me", now=clock.now(), max_concurrency=64)
        made = await gather_chunked(
            functools.partial(
                store.goals.create_goal, person_id=person.id, title=f"goal {i}", now=clock.now()
            )
            for i in range(goals)
        )
        spec = TaskSpec(
            kind="wait_event",
            input={"type": "never", "match": {}, "timeout_seconds": MONTH},
        )
        await gather_chunked(
            functools.partial(
                store.tasks.create_task, spec, person_id=person.id, goal_id=goal.id, now=clock.now()
            )
            for goal in made
        )
        worker = Worker(store, builtin_harness(), clock, concurrency=64)
        await worker.run_until_idle()
        query = select(func.count()).where(tasks.c.status == "waiting")
        waiting = await store.backend.read(lambda c: c.execute(query).scalar())
        if waiting != goals:
            raise RuntimeError(f"only {waiting} of {goals} tasks are waiting")
        return {"goals": goals, "waiting_tasks": waiting, "setup_seconds": time.perf_counter() - t0}
    finally:
        await store.close()


def _pg_backend_pids(url: str) -> set[int]:
    import psycopg

    dsn = pg_dsn(url)
    dbname = dsn.rpartition("/")[2]
    with psycopg.connect(dsn, autocommit=True) as conn:
        found = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (dbname,),
        ).fetchall()
    return {int(pid) for (pid,) in found}


def _cpu(pid: int) -> float | None:
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return float(times.user + times.system)


async def measure(url: str, backend: str, settle: float, window: float) -> dict[str, Any]:
    async with subprocess_up(url) as proc:
        await asyncio.sleep(settle)
        if proc.returncode is not None:
            raise RuntimeError(f"steward up exited early with {proc.returncode}")
        runtime = psutil.Process(proc.pid)
        pg_before: dict[int, float | None] = {}
        if backend == "postgres":
            pg_before = {pid: _cpu(pid) for pid in _pg_backend_pids(url)}
        cpu0 = runtime.cpu_times()
        wall0 = time.monotonic()
        await asyncio.sleep(window)
        cpu1 = runtime.cpu_times()
        wall = time.monotonic() - wall0
        rss = runtime.memory_info().rss
        pg_cpu = None
        if backend == "postgres":
            pg_after = {pid: _cpu(pid) for pid in _pg_backend_pids(url) | set(pg_before)}
            pg_cpu = 0.0
            for pid, after in pg_after.items():
                if after is None:
                    continue  # a backend that went away: its last share is lost (rare)
                pg_cpu += after - (pg_before.get(pid) or 0.0)
    used = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
    return {
        "window_seconds": round(wall, 2),
        "runtime_cpu_seconds": round(used, 3),
        "runtime_cpu_percent": round(100 * used / wall, 2),
        "runtime_rss_mib": round(rss / 2**20, 1),
        "server_cpu_percent": None if pg_cpu is None else round(100 * pg_cpu / wall, 2),
    }


async def bench_idle(backend: str, quick: bool) -> Outcome:
    out = Outcome()
    goals, settle, window = _plan(quick)
    with fresh_database(backend) as url:
        made = await setup(url, goals)
        result = made | await measure(url, backend, settle, window)
    out.details = result
    cpu = result["runtime_cpu_percent"]
    out.add(
        bench="idle",
        backend=backend,
        name=f"idle CPU of `steward up`, {goals:,} waiting goals",
        value=cpu,
        unit="% of a core",
        target=f"< {TARGET_CPU:.0f} %",
        met=cpu < TARGET_CPU,
        note=f"{result['window_seconds']:.0f} s window, RSS {result['runtime_rss_mib']} MiB",
    )
    if result["server_cpu_percent"] is not None:
        out.add(
            bench="idle",
            backend=backend,
            name="idle CPU of its PostgreSQL backends",
            value=result["server_cpu_percent"],
            unit="% of a core",
            note="server side, same window (not part of the target)",
        )
    return out
