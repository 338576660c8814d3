"""Store conformance: tasks controlled from outside, subtasks, reaping expired leases."""

from __future__ import annotations

from datetime import timedelta

import pytest

from steward.domain import (
    GoalStatus,
    Task,
    TaskSpec,
    TaskStatus,
    WaitCondition,
)
from steward.domain.clock import SimulatedClock
from steward.domain.outcome import Outcome, Requeue, Retry, Stop, Succeed, Wait
from steward.errors import InvalidTransition, LeaseLost, NotFound
from steward.store import Fence, Store
from steward.testing.store_conformance.helpers import (
    LEASE,
    checkpoint,
    claim,
    claim_one,
    finish,
    later,
    new_goal,
    new_person,
    new_task,
)

# --- tasks: control from outside ---------------------------------------------------------


async def test_control_idle_tasks(store: Store, clock: SimulatedClock) -> None:
    """Idle tasks change at once: pause parks a pending task (not claimable), resume brings it
    back, cancel ends it; illegal requests raise InvalidTransition and unknown ids NotFound."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id)
    with pytest.raises(InvalidTransition):
        await store.tasks.request_control(t.id, "resume", now=clock.now())
    paused = await store.tasks.request_control(t.id, "pause", now=clock.now())
    assert paused.status is TaskStatus.PAUSED
    assert await claim(store, clock) == []
    with pytest.raises(InvalidTransition):
        await store.tasks.request_control(t.id, "pause", now=clock.now())
    assert (await store.tasks.request_control(t.id, "resume", now=clock.now())).status is (
        TaskStatus.PENDING
    )
    cancelled = await store.tasks.request_control(t.id, "cancel", now=clock.now())
    assert cancelled.status is TaskStatus.CANCELLED
    assert cancelled.finished_at == clock.now()
    for control in ("cancel", "pause", "resume"):
        with pytest.raises(InvalidTransition):
            await store.tasks.request_control(t.id, control, now=clock.now())
    assert (await store.tasks.get_task(t.id)) == cancelled
    with pytest.raises(InvalidTransition):
        await store.tasks.request_control(t.id, "explode", now=clock.now())
    with pytest.raises(NotFound):
        await store.tasks.request_control("tsk_missing", "cancel", now=clock.now())
    assert await claim(store, clock) == []


async def test_control_running_task_is_a_request(store: Store, clock: SimulatedClock) -> None:
    """On a running task, cancel and pause are requests the worker sees at its next checkpoint
    or renewal; resume withdraws a pause request. The status does not change by itself."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id)
    c = await claim_one(store, clock)
    fence = Fence.of(c)
    asked = await store.tasks.request_control(t.id, "pause", now=clock.now())
    assert asked.status is TaskStatus.RUNNING
    assert await checkpoint(store, clock, fence, 1, {}) == "pause"
    await store.tasks.request_control(t.id, "resume", now=clock.now())
    assert (
        await store.tasks.renew_lease(fence, lease_seconds=LEASE, lease_now=clock.lease_now())
        is None
    )
    assert await checkpoint(store, clock, fence, 2, {}) is None
    await store.tasks.request_control(t.id, "cancel", now=clock.now())
    assert await store.tasks.renew_lease(
        fence, lease_seconds=LEASE, lease_now=clock.lease_now()
    ) == ("cancel")
    assert await checkpoint(store, clock, fence, 3, {}) == "cancel"
    assert (await store.tasks.get_task(t.id)).status is TaskStatus.RUNNING
    done = await finish(store, clock, c, Stop(control="cancel"), steps=3)
    assert done.status is TaskStatus.CANCELLED


async def test_pause_waiting_task_then_resume_returns_to_waiting(
    store: Store, clock: SimulatedClock
) -> None:
    """Pausing a waiting task suspends its wait (its timer does not wake it); resume puts it
    back to waiting on the same condition, and the timer then wakes it."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id)
    c = await claim_one(store, clock)
    cond = WaitCondition(kind="until", until=later(clock, 60))
    await finish(store, clock, c, Wait(condition=cond))
    paused = await store.tasks.request_control(t.id, "pause", now=clock.now())
    assert paused.status is TaskStatus.PAUSED
    clock.advance(timedelta(seconds=120))
    assert await store.tasks.wake_due_waits(now=clock.now()) == 0
    assert (await store.tasks.get_task(t.id)).status is TaskStatus.PAUSED
    resumed = await store.tasks.request_control(t.id, "resume", now=clock.now())
    assert resumed.status is TaskStatus.WAITING
    assert resumed.wait == cond
    assert await store.tasks.wake_due_waits(now=clock.now()) == 1
    assert (await claim_one(store, clock)).task.id == t.id


@pytest.mark.parametrize(
    "outcome",
    [
        Retry(reason="boom", delay_seconds=1),
        Requeue(),
        Wait(condition=WaitCondition(kind="input", prompt="?")),
    ],
    ids=["retry", "requeue", "wait"],
)
async def test_cancel_request_survives_non_terminal_outcome(
    store: Store, clock: SimulatedClock, outcome: Outcome
) -> None:
    """A goal cancelled while its task runs ends that task even when the activation finishes
    without another checkpoint (a step raised, it yielded, it went to sleep)."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    t = await new_task(store, clock, ada.id, goal_id=goal.id)
    c = await claim_one(store, clock)
    await store.goals.set_goal_status(goal.id, GoalStatus.CANCELLED, now=clock.now())
    await finish(store, clock, c, outcome)
    assert (await store.tasks.get_task(t.id)).status is TaskStatus.CANCELLED


async def test_cancel_request_survives_lost_worker(store: Store, clock: SimulatedClock) -> None:
    """Cancel a running task, then its worker dies: the task ends cancelled rather than being
    re-queued and run again."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id)
    await claim_one(store, clock)
    await store.tasks.request_control(t.id, "cancel", now=clock.now())
    clock.advance(timedelta(seconds=LEASE + 1))
    await store.tasks.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now())
    assert (await store.tasks.get_task(t.id)).status is TaskStatus.CANCELLED


# --- subtasks ----------------------------------------------------------------------------


async def test_parent_waiting_on_children_wakes_when_last_child_ends(
    store: Store, clock: SimulatedClock
) -> None:
    """A parent spawns children under its fence (a replayed spawn returns the same child),
    sleeps on them, and wakes with reason 'children' only when the last one has ended —
    whether it succeeded, was cancelled or was dead-lettered."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    parent = await new_task(store, clock, ada.id, goal_id=goal.id, priority=9)
    cp = await claim_one(store, clock)
    fence = Fence.of(cp)
    kids: list[Task] = []
    for i in range(3):
        spec = TaskSpec(kind="noop", max_attempts=1)
        kid = await store.tasks.create_task(
            spec,
            person_id=ada.id,
            goal_id=goal.id,
            parent_id=parent.id,
            now=clock.now(),
            task_id=f"{parent.id}.1.{i}",
            fence=fence,
            lease_now=clock.lease_now(),
        )
        kids.append(kid)
    replay = await store.tasks.create_task(
        TaskSpec(kind="other"),
        person_id=ada.id,
        goal_id=goal.id,
        parent_id=parent.id,
        now=clock.now(),
        task_id=kids[0].id,
        fence=fence,
        lease_now=clock.lease_now(),
    )
    assert replay == kids[0]
    assert {k.id for k in await store.tasks.list_tasks(parent_id=parent.id)} == {k.id for k in kids}
    await checkpoint(store, clock, fence, 1, {})
    sleeping = await finish(store, clock, cp, Wait(condition=WaitCondition(kind="children")))
    assert sleeping.status is TaskStatus.WAITING

    c0 = await claim_one(store, clock)
    await finish(store, clock, c0, Succeed())
    assert (await store.tasks.get_task(parent.id)).status is TaskStatus.WAITING
    c1 = await claim_one(store, clock)
    await finish(store, clock, c1, Retry(reason="x", delay_seconds=1))  # max_attempts=1: dead
    assert (await store.tasks.get_task(c1.task.id)).status is TaskStatus.DEAD_LETTERED
    assert (await store.tasks.get_task(parent.id)).status is TaskStatus.WAITING
    await store.tasks.request_control(kids[2].id, "cancel", now=clock.now())
    woken = await store.tasks.get_task(parent.id)
    assert woken.status is TaskStatus.PENDING
    c = await claim_one(store, clock)
    assert (c.task.id, c.activation.reason, c.wake.to_json()) == (
        parent.id,
        "children",
        {"reason": "children"},
    )


async def test_wait_on_children_already_done_does_not_sleep(
    store: Store, clock: SimulatedClock
) -> None:
    """Waiting on children that have all ended already makes the parent runnable at once."""
    ada = await new_person(store, clock)
    parent = await new_task(store, clock, ada.id, priority=9)
    cp = await claim_one(store, clock)
    kid = await store.tasks.create_task(
        TaskSpec(kind="noop"),
        person_id=ada.id,
        parent_id=parent.id,
        now=clock.now(),
        task_id=f"{parent.id}.1.0",
        fence=Fence.of(cp),
        lease_now=clock.lease_now(),
    )
    await store.tasks.request_control(kid.id, "cancel", now=clock.now())
    got = await finish(store, clock, cp, Wait(condition=WaitCondition(kind="children")))
    assert got.status is TaskStatus.PENDING
    c = await claim_one(store, clock)
    assert (c.task.id, c.wake.to_json()) == (parent.id, {"reason": "children"})


async def test_spawn_under_stale_fence_creates_nothing(store: Store, clock: SimulatedClock) -> None:
    """A zombie cannot spawn subtasks."""
    ada = await new_person(store, clock)
    parent = await new_task(store, clock, ada.id)
    cp = await claim_one(store, clock)
    clock.advance(timedelta(seconds=LEASE + 1))
    with pytest.raises(LeaseLost):
        await store.tasks.create_task(
            TaskSpec(kind="noop"),
            person_id=ada.id,
            parent_id=parent.id,
            now=clock.now(),
            task_id=f"{parent.id}.1.0",
            fence=Fence.of(cp),
            lease_now=clock.lease_now(),
        )
    assert await store.tasks.list_tasks(parent_id=parent.id) == []


async def test_child_dead_lettered_by_reaper_wakes_parent(
    store: Store, clock: SimulatedClock
) -> None:
    """When the reaper dead-letters the last live child, the parent waiting on its children
    wakes, as it does for any other way a child ends."""
    ada = await new_person(store, clock)
    parent = await new_task(store, clock, ada.id, priority=9)
    cp = await claim_one(store, clock)
    await store.tasks.create_task(
        TaskSpec(kind="noop", max_attempts=1),
        person_id=ada.id,
        parent_id=parent.id,
        now=clock.now(),
        task_id=f"{parent.id}.1.0",
        fence=Fence.of(cp),
        lease_now=clock.lease_now(),
    )
    await finish(store, clock, cp, Wait(condition=WaitCondition(kind="children")))
    await claim_one(store, clock)  # the child; its worker then dies
    clock.advance(timedelta(seconds=LEASE + 1))
    await store.tasks.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now())
    assert (await store.tasks.get_task(parent.id)).status is TaskStatus.PENDING


# --- reaping -----------------------------------------------------------------------------


async def test_reap_expired_leases(store: Store, clock: SimulatedClock) -> None:
    """A running task whose lease lapsed is re-queued with attempts + 1, its activation is
    closed as 'lost', the next claim says 'recovered', and the old fence can no longer write;
    live leases are left alone."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id, priority=1)
    healthy = await new_task(store, clock, ada.id)
    c = await claim_one(store, clock)
    assert c.task.id == t.id
    await checkpoint(store, clock, Fence.of(c), 1, {"v": 1})
    clock.advance(timedelta(seconds=20))
    ch = await claim_one(store, clock)
    assert ch.task.id == healthy.id
    assert await store.tasks.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now()) == []
    clock.advance(timedelta(seconds=LEASE - 20 + 1))
    assert await store.tasks.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now()) == [
        t.id
    ]
    reaped = await store.tasks.get_task(t.id)
    assert reaped.status is TaskStatus.PENDING
    assert reaped.attempts == 1
    assert (reaped.lease_owner, reaped.lease_expires_at) == (None, None)
    assert (reaped.step_seq, reaped.state) == (1, {"v": 1})
    act = (await store.activations.list_activations(task_id=t.id))[0]
    assert (act.outcome, act.ended_at) == ("lost", clock.now())
    assert (await store.tasks.get_task(healthy.id)).status is TaskStatus.RUNNING

    old = Fence.of(c)
    with pytest.raises(LeaseLost):
        await checkpoint(store, clock, old, 2, {"v": "zombie"})
    c2 = await claim_one(store, clock)
    assert (c2.task.id, c2.epoch, c2.activation.reason) == (t.id, 2, "recovered")
    with pytest.raises(LeaseLost):
        await checkpoint(store, clock, old, 2, {"v": "zombie"})
    with pytest.raises(LeaseLost):
        await finish(store, clock, old, Succeed(result="zombie"))
    await checkpoint(store, clock, Fence.of(c2), 2, {"v": 2})
    assert [s.activation_id for s in await store.activations.list_steps(t.id)] == [
        c.activation.id,
        c2.activation.id,
    ]


async def test_reap_dead_letters_at_max_attempts(store: Store, clock: SimulatedClock) -> None:
    """A task that loses its worker on its last attempt is dead-lettered, not re-queued."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id, max_attempts=2)
    for attempt in (1, 2):
        await claim_one(store, clock)
        clock.advance(timedelta(seconds=LEASE + 1))
        assert await store.tasks.reap_expired_leases(
            now=clock.now(), lease_now=clock.lease_now()
        ) == [t.id]
        assert (await store.tasks.get_task(t.id)).attempts == attempt
    dead = await store.tasks.get_task(t.id)
    assert dead.status is TaskStatus.DEAD_LETTERED
    assert dead.finished_at == clock.now()
    assert [a.outcome for a in await store.activations.list_activations(task_id=t.id)] == [
        "lost",
        "lost",
    ]
    assert await claim(store, clock) == []
