"""How a task goes back to the queue when it did not fail: it waited out an effect that may
still be in flight, or the database cut it off. Neither counts as an attempt, and a task cut
off again and again waits longer each time. A worker or scheduler loop that meets an error it
does not know goes on."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from steward.domain import Person, TaskSpec, TaskStatus
from steward.domain.clock import Clock, SimulatedClock
from steward.domain.outcome import Outcome, Succeed
from steward.errors import DatabaseUnavailable
from steward.runtime.outage import DatabaseOutage
from steward.runtime.scheduler import Scheduler
from steward.runtime.stepfn import StepContext, StepHarness
from steward.runtime.worker import Worker
from steward.store import Store
from support.waiting import eventually

LEASE = 30.0
BASE = 10.0
WAIT_SECONDS = 120.0
"""Generous bound for a loop on a busy machine to get somewhere; a dead loop fails at once."""


@pytest.fixture
async def person(store: Store, clock: SimulatedClock) -> Person:
    return await store.persons.create_person(name="p", now=clock.now(), max_concurrency=8)


def _worker(store: Store, harness: StepHarness, clock: Clock, **kw: Any) -> Worker:
    kw.setdefault("poll_seconds", None)
    return Worker(store, harness, clock, lease_seconds=LEASE, retry_base_seconds=BASE, **kw)


async def test_a_task_cut_off_again_and_again_waits_longer_each_time(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """A step the database cuts off every time (here it raises the outage itself) is handed
    back with a growing delay and no attempt counted (on main: run again at once, a hot
    claim-run-requeue loop calling the model each time)."""
    runs: list[int] = []

    async def cut(ctx: StepContext) -> Outcome | None:
        runs.append(ctx.step)
        if len(runs) <= 3:
            raise DatabaseUnavailable("canceling statement due to lock timeout")
        return Succeed(result=len(runs))

    harness = StepHarness()
    harness.register("cut", cut)
    task = await store.tasks.create_task(
        TaskSpec(kind="cut", max_attempts=1), person_id=person.id, now=clock.now()
    )
    worker = _worker(store, harness, clock)
    for n in (1, 2, 3):
        await worker.run_until_idle()
        assert len(runs) == n, "run again at once after a cut-off"
        back = await store.tasks.get_task(task.id)
        assert (back.status, back.attempts) == (TaskStatus.PENDING, 0)
        assert back.run_at is not None
        ceiling = BASE * 2 ** (n - 1)
        assert ceiling / 2 <= (back.run_at - clock.now()).total_seconds() <= ceiling
        clock.advance(timedelta(seconds=ceiling))
    await worker.run_until_idle()
    assert (await store.tasks.get_task(task.id)).status is TaskStatus.SUCCEEDED


async def _until(check: Any, what: str, loop: asyncio.Future[None]) -> None:
    def gone() -> str | None:
        if not loop.done():
            return None
        loop.result()  # raises what killed it
        return "the loop ended"

    await eventually(check, what, seconds=WAIT_SECONDS, every=0.02, gone=gone)


async def test_worker_and_scheduler_loops_go_on_after_an_unexpected_error(
    store: Store, person: Person, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claiming work, writing an outcome and a scheduler tick each fail once with an error
    that is not an outage: each loop logs it, pauses and goes on (on main the worker's and
    the scheduler's loops died, and an outcome's error escaped as an unretrieved task
    exception)."""
    clock = Clock()
    failed: list[str] = []
    calls: dict[str, int] = {}

    def once(repository: object, name: str) -> None:
        real = getattr(repository, name)

        async def failing(*args: Any, **kwargs: Any) -> Any:
            calls[name] = calls.get(name, 0) + 1
            if name not in failed:
                failed.append(name)
                raise RuntimeError(f"{name}: unexpected")
            return await real(*args, **kwargs)

        monkeypatch.setattr(repository, name, failing)

    once(store.tasks, "claim_tasks")
    once(store.activations, "finish_activation")
    once(store.schedule, "route_events")

    async def done(ctx: StepContext) -> Outcome | None:
        return Succeed(result=1)

    harness = StepHarness()
    harness.register("done", done)
    task = await store.tasks.create_task(
        TaskSpec(kind="done"), person_id=person.id, now=clock.now()
    )
    quick = DatabaseOutage(clock, base_seconds=0.01, cap_seconds=0.05)
    worker = _worker(store, harness, clock, poll_seconds=0.02, outage=quick)
    scheduler = Scheduler(store, clock, max_sleep_seconds=0.02, outage=quick)
    stop = asyncio.Event()
    loops = asyncio.ensure_future(asyncio.gather(worker.run(stop), scheduler.run(stop)))
    try:

        async def finished() -> bool:
            return (await store.tasks.get_task(task.id)).status is TaskStatus.SUCCEEDED

        await _until(finished, "the task to finish", loops)

        async def ticked_again() -> bool:
            return calls.get("route_events", 0) >= 2

        await _until(ticked_again, "the scheduler to tick again", loops)
        assert sorted(failed) == ["claim_tasks", "finish_activation", "route_events"]
    finally:
        stop.set()
        await loops
