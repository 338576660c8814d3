"""Inbox events end to end: delivered through the service, routed by the scheduler to waiting
tasks and event triggers, executed by a worker — on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from datetime import timedelta

import psycopg
import pytest

from steward.domain import FiringStatus, Goal, Person, TaskSpec, TaskStatus, TriggerKind
from steward.domain.clock import SimulatedClock
from steward.domain.outcome import Wait
from steward.domain.task import WaitCondition
from steward.runtime.builtin import builtin_harness
from steward.runtime.scheduler import Scheduler
from steward.runtime.worker import Worker
from steward.service import Service
from steward.store import Fence, Store
from support.waiting import lock_waiters

S = TaskStatus
PR = "webhook.github.pull_request"


@dataclass
class Rig:
    service: Service
    scheduler: Scheduler
    worker: Worker
    person: Person
    goal: Goal
    clock: SimulatedClock

    async def settle(self) -> int:
        """One scheduler pass, then run whatever became due. Returns activations."""
        await self.scheduler.tick()
        return await self.worker.run_until_idle()


@pytest.fixture
async def rig(store: Store, clock: SimulatedClock) -> Rig:
    service = Service(store, clock)
    person = await service.ensure_person()
    goal = await service.create_goal(person_id=person.id, title="review PRs")
    return Rig(
        service=service,
        scheduler=Scheduler(store, clock),
        worker=Worker(store, builtin_harness(), clock, poll_seconds=None),
        person=person,
        goal=goal,
        clock=clock,
    )


async def waiting_for(
    rig: Rig, match: dict[str, object], timeout_seconds: float | None = None
) -> str:
    """A built-in wait_event task for PR events matching ``match``, run until it sleeps."""
    task_input: dict[str, object] = {"type": PR, "match": match}
    if timeout_seconds is not None:
        task_input["timeout_seconds"] = timeout_seconds
    task = await rig.service.create_task(
        person_id=rig.person.id,
        goal_id=rig.goal.id,
        spec=TaskSpec(kind="wait_event", input=task_input),
    )
    assert await rig.worker.run_until_idle() == 1
    asleep = await rig.service.store.tasks.get_task(task.id)
    assert asleep.status is S.WAITING
    assert asleep.lease_owner is None
    return task.id


async def test_duplicate_delivery_is_stored_once_and_acts_once(rig: Rig) -> None:
    """The same webhook delivered twice (same dedupe key) — both before routing and once more
    after — is stored as one event; it wakes the task waiting for it once (one more activation,
    which records it as goal evidence) and fires the matching event trigger once."""
    store = rig.service.store
    task_id = await waiting_for(rig, {"repo": "steward"})
    trigger = await rig.service.add_trigger(
        person_id=rig.person.id,
        goal_id=rig.goal.id,
        kind=TriggerKind.EVENT,
        spec=PR,
        match={"repo": "steward"},
        task=TaskSpec(kind="noop"),
    )
    payload = {"repo": "steward", "number": 42, "action": "synchronize"}

    first, created = await rig.service.send_event(
        person_id=rig.person.id, type=PR, payload=payload, source="github", dedupe_key="gh-9001"
    )
    again, created_again = await rig.service.send_event(
        person_id=rig.person.id, type=PR, payload=payload, source="github", dedupe_key="gh-9001"
    )
    assert (created, created_again) == (True, False)
    assert again.id == first.id

    assert await rig.settle() == 2  # the woken task and the trigger's task
    late, created_late = await rig.service.send_event(
        person_id=rig.person.id, type=PR, payload=payload, source="github", dedupe_key="gh-9001"
    )
    assert (late.id, created_late) == (first.id, False)
    assert await rig.settle() == 0

    assert [e.id for e in await store.schedule.list_events(person_id=rig.person.id)] == [first.id]
    done = await store.tasks.get_task(task_id)
    assert done.status is S.SUCCEEDED
    assert done.result["timed_out"] is False
    assert done.result["event"]["id"] == first.id
    assert done.result["event"]["payload"] == payload
    assert len(await store.activations.list_activations(task_id=task_id)) == 2
    records = await store.goals.list_goal_records(rig.goal.id)
    assert [(r.kind, r.content["event"]["id"]) for r in records] == [("evidence", first.id)]

    [firing] = await store.schedule.list_firings(trigger.id)
    assert firing.status is FiringStatus.FIRED
    assert firing.task_id is not None
    fired_task = await store.tasks.get_task(firing.task_id)
    assert fired_task.status is S.SUCCEEDED
    assert fired_task.input["event"]["id"] == first.id
    from_trigger = [t.id for t in await store.tasks.list_tasks(goal_id=rig.goal.id) if t.trigger_id]
    assert from_trigger == [fired_task.id]


async def test_distinct_deliveries_act_separately(rig: Rig) -> None:
    """Two deliveries with different dedupe keys are two events: the trigger fires for each."""
    trigger = await rig.service.add_trigger(
        person_id=rig.person.id,
        goal_id=rig.goal.id,
        kind=TriggerKind.EVENT,
        spec=PR,
        task=TaskSpec(kind="noop"),
    )
    for key in ("gh-1", "gh-2"):
        _, created = await rig.service.send_event(
            person_id=rig.person.id, type=PR, payload={"n": key}, dedupe_key=key
        )
        assert created
    assert await rig.settle() == 2
    assert len(await rig.service.store.schedule.list_firings(trigger.id)) == 2


async def test_wait_event_times_out(rig: Rig) -> None:
    """A wait_event task with a timeout and no matching event sleeps until exactly the timeout,
    then wakes (reason 'timeout') and finishes with timed_out, recording no evidence."""
    store = rig.service.store
    start = rig.clock.now()
    task_id = await waiting_for(rig, {"repo": "steward"}, timeout_seconds=600)
    asleep = await store.tasks.get_task(task_id)
    assert asleep.wait is not None
    assert asleep.wait.until == start + timedelta(seconds=600)
    rig.clock.advance(timedelta(seconds=599))
    assert await rig.settle() == 0
    assert (await store.tasks.get_task(task_id)).status is S.WAITING
    rig.clock.advance(timedelta(seconds=1))
    assert await rig.settle() == 1
    done = await store.tasks.get_task(task_id)
    assert done.status is S.SUCCEEDED
    assert done.result == {"event": None, "timed_out": True}
    reasons = [a.reason for a in await store.activations.list_activations(task_id=task_id)]
    assert reasons == ["created", "timeout"]
    assert await store.goals.list_goal_records(rig.goal.id) == []


async def test_non_matching_events_do_not_wake(rig: Rig) -> None:
    """Events of another type, or of the right type whose payload does not match the filter,
    leave the waiting task asleep (no activation, no trigger firing); the matching one wakes it
    and is the one it receives."""
    store = rig.service.store
    task_id = await waiting_for(rig, {"repo": "steward", "action": "opened"})
    trigger = await rig.service.add_trigger(
        person_id=rig.person.id,
        goal_id=rig.goal.id,
        kind=TriggerKind.EVENT,
        spec=PR,
        match={"repo": "steward", "action": "opened"},
        task=TaskSpec(kind="noop"),
    )
    near_misses = [
        (PR, {"repo": "other", "action": "opened"}),
        (PR, {"repo": "steward", "action": "closed"}),
        (PR, {"repo": "steward"}),
        ("webhook.github.issues", {"repo": "steward", "action": "opened"}),
    ]
    for i, (event_type, payload) in enumerate(near_misses):
        await rig.service.send_event(
            person_id=rig.person.id, type=event_type, payload=payload, dedupe_key=f"miss-{i}"
        )
    assert await rig.settle() == 0
    asleep = await store.tasks.get_task(task_id)
    assert asleep.status is S.WAITING
    assert asleep.wait is not None
    assert asleep.wait == WaitCondition(
        kind="event",
        event_type=PR,
        match={"repo": "steward", "action": "opened"},
        since=asleep.wait.since,
    )
    assert await store.schedule.list_firings(trigger.id) == []

    hit, _ = await rig.service.send_event(
        person_id=rig.person.id,
        type=PR,
        payload={"repo": "steward", "action": "opened", "number": 7},
        dedupe_key="hit",
    )
    assert await rig.settle() == 2
    done = await store.tasks.get_task(task_id)
    assert done.status is S.SUCCEEDED
    assert done.result["event"]["id"] == hit.id
    assert [f.status for f in await store.schedule.list_firings(trigger.id)] == [FiringStatus.FIRED]


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_event_arriving_as_the_task_goes_to_sleep_wakes_it(db_url: str, rig: Rig) -> None:
    """An event delivered and routed while a worker is committing the task's wait for it still
    wakes the task, whichever of the two transactions the database settles first."""
    store = rig.service.store
    clock = rig.clock
    task = await rig.service.create_task(
        person_id=rig.person.id,
        goal_id=rig.goal.id,
        spec=TaskSpec(kind="wait_event", input={"type": PR}),
    )
    [claim] = await store.tasks.claim_tasks(
        worker="w", limit=1, lease_seconds=30, now=clock.now(), lease_now=clock.lease_now()
    )
    wait = WaitCondition(kind="event", event_type=PR, since=task.created_at)
    # Another session holds the task's row, so the worker's commit of the wait stalls after it
    # has looked for events that already arrived; meanwhile the event comes and is routed.
    with (
        psycopg.connect(db_url) as blocker,
        psycopg.connect(db_url, autocommit=True) as watcher,
    ):
        blocker.execute("SELECT 1 FROM tasks WHERE id = %s FOR UPDATE", (task.id,))
        going_to_sleep = asyncio.ensure_future(
            store.activations.finish_activation(
                Fence.of(claim),
                Wait(condition=wait),
                now=clock.now(),
                steps_taken=1,
                lease_now=clock.lease_now(),
            )
        )
        await lock_waiters(watcher, at_least=1)
        event, _ = await rig.service.send_event(person_id=rig.person.id, type=PR, dedupe_key="e")
        routed = asyncio.ensure_future(rig.scheduler.tick())
        with contextlib.suppress(TimeoutError):  # done, or (with row locks) queued behind
            await asyncio.wait_for(asyncio.shield(routed), timeout=2)
        blocker.rollback()
    await asyncio.gather(going_to_sleep, routed)
    await rig.scheduler.tick()
    assert (await store.tasks.get_task(task.id)).status is S.PENDING
    [woken] = await store.tasks.claim_tasks(
        worker="w", limit=1, lease_seconds=30, now=clock.now(), lease_now=clock.lease_now()
    )
    assert woken.wake.to_json()["reason"] == "event"
    assert woken.wake.to_json()["event"]["id"] == event.id


async def test_wait_event_without_a_goal_receives_its_event(rig: Rig) -> None:
    """A stand-alone wait_event task (no goal) finishes with the event that woke it."""
    store = rig.service.store
    task = await rig.service.create_task(
        person_id=rig.person.id, spec=TaskSpec(kind="wait_event", input={"type": PR})
    )
    await rig.worker.run_until_idle()
    event, _ = await rig.service.send_event(person_id=rig.person.id, type=PR, dedupe_key="x")
    await rig.settle()
    # a failed step is retried after a backoff: let it happen
    rig.clock.advance(timedelta(minutes=5))
    await rig.settle()
    done = await store.tasks.get_task(task.id)
    assert done.status is S.SUCCEEDED
    assert done.result == {
        "event": {
            "id": event.id,
            "type": PR,
            "source": "cli",
            "payload": {},
            "received_at": event.received_at.timestamp(),
        },
        "timed_out": False,
    }
