"""Claim-to-start latency: how long a new task waits before a worker starts it.

Latency of a task = its first activation's ``started_at`` - the task's ``created_at`` (both
stamped from the system clock: the service stamps creation before the insert commits, the worker
stamps the activation just before its claim transaction).

* in-process: tasks are created through :class:`~steward.service.Service` wired to a
  :class:`~steward.runtime.runtime.Runtime` in the same process, so each creation nudges the
  idle worker awake;
* cross-process: the runtime is a separate ``steward up --db URL`` process and the service in
  this process has no runtime to nudge, so only the worker's idle poll (1 s) finds the work.

Tasks are created one at a time at spaced, jittered intervals (so creations do not line up with
the poll period), and are single-step ``noop`` tasks.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable

from sqlalchemy import func, select

from bench_support import Outcome, fresh_database, subprocess_up, summary
from steward.domain import TaskSpec
from steward.domain.clock import Clock
from steward.runtime.builtin import builtin_harness
from steward.runtime.runtime import Runtime, RuntimeConfig
from steward.service import Service
from steward.store import Store
from steward.store.schema import activations, tasks

SPEC = TaskSpec(kind="noop")


def _counts(quick: bool) -> tuple[int, float]:
    """(tasks, mean spacing in seconds)."""
    return (60, 0.03) if quick else (300, 0.03)


async def _latencies(store: Store, task_ids: list[str]) -> list[float]:
    """Seconds from creation to first activation start, per task."""
    query = (
        select(tasks.c.created_at, func.min(activations.c.started_at))
        .join(activations, activations.c.task_id == tasks.c.id)
        .where(tasks.c.id.in_(task_ids))
        .group_by(tasks.c.id, tasks.c.created_at)
    )
    found = await store.backend.read(lambda conn: conn.execute(query).all())
    if len(found) != len(task_ids):
        raise RuntimeError(f"only {len(found)} of {len(task_ids)} tasks were started")
    return [started - created for created, started in found]


async def _wait_done(store: Store, task_ids: list[str], within: float) -> None:
    query = select(func.count()).where(tasks.c.id.in_(task_ids), tasks.c.status == "succeeded")
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        done = await store.backend.read(lambda conn: conn.execute(query).scalar())
        if done == len(task_ids):
            return
        await asyncio.sleep(0.2)
    raise RuntimeError(f"tasks not finished after {within}s")


async def _create_spaced(service: Service, person_id: str, n: int, spacing: float) -> list[str]:
    rng = random.Random(7)
    ids: list[str] = []
    for _ in range(n):
        task = await service.create_task(person_id=person_id, spec=SPEC)
        ids.append(task.id)
        await asyncio.sleep(rng.uniform(0.5 * spacing, 1.5 * spacing))
    return ids


async def in_process(url: str, n: int, spacing: float) -> list[float]:
    store = await Store.open(url)
    try:
        clock = Clock()
        runtime = Runtime(store, builtin_harness(), clock, RuntimeConfig())
        service = Service(store, clock, runtime)
        person = await service.ensure_person()
        running = asyncio.ensure_future(runtime.run())
        try:
            await asyncio.sleep(0.5)  # let the loops reach their idle wait
            ids = await _create_spaced(service, person.id, n, spacing)
            await _wait_done(store, ids, within=60)
        finally:
            runtime.stop()
            await running
        return await _latencies(store, ids)
    finally:
        await store.close()


async def cross_process(url: str, n: int, spacing: float) -> list[float]:
    store = await Store.open(url)
    try:
        clock = Clock()
        service = Service(store, clock)  # no runtime here: the worker is another process
        person = await service.ensure_person()
        async with subprocess_up(url):
            # a first task shows the other process is up and idle (not part of the sample)
            warm = await service.create_task(person_id=person.id, spec=SPEC)
            await _wait_done(store, [warm.id], within=60)
            await asyncio.sleep(1.5)
            ids = await _create_spaced(service, person.id, n, spacing)
            await _wait_done(store, ids, within=60)
        return await _latencies(store, ids)
    finally:
        await store.close()


async def bench_latency(backend: str, quick: bool) -> Outcome:
    out = Outcome()
    n, spacing = _counts(quick)
    modes: list[tuple[str, Callable[[str, int, float], Awaitable[list[float]]]]] = [
        ("in-process (nudged)", in_process),
        ("cross-process (polled, 1 s poll)", cross_process),
    ]
    for label, fn in modes:
        with fresh_database(backend) as url:
            values = await fn(url, n, spacing)
        stats = summary(values)
        out.details[label] = stats
        for p in ("p50", "p99"):
            out.add(
                bench="latency",
                backend=backend,
                name=f"claim-to-start {p}, {label}",
                value=round(stats[p] * 1000, 2),
                unit="ms",
                note=f"{n} tasks, ~{spacing * 1000:.0f} ms apart",
            )
    return out
