"""Conformance suite: the async ``Store`` interface as the runtime uses it, on every backend.

Every test runs once on SQLite and once on PostgreSQL through the ``store`` fixture. Times come
from the simulated ``clock``; lease expiry is judged by ``clock.lease_now()`` so no test waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import datetime, timedelta
from typing import Any, TypeVar

import pytest

from steward.domain import (
    Budget,
    Effect,
    EffectStatus,
    FiringStatus,
    Goal,
    GoalStatus,
    MissedPolicy,
    Notification,
    Person,
    Task,
    TaskSpec,
    TaskStatus,
    Trigger,
    TriggerKind,
    WaitCondition,
)
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.domain.outcome import Claim, Fail, Outcome, Requeue, Retry, Stop, Succeed, Wait
from steward.errors import EffectMaybeInFlight, InvalidTransition, LeaseLost, NotFound
from steward.store import Fence, Store

LEASE = 30.0
T = TypeVar("T")


async def durable(store: Store, aw: Awaitable[T]) -> T:
    """Await a durable write, failing at once if the SQLite writer thread has died instead of
    waiting forever for a commit that will never come."""
    task = asyncio.ensure_future(aw)
    writer = getattr(store.backend, "_thread", None)
    while True:
        done, _ = await asyncio.wait({task}, timeout=0.05)
        if done:
            return task.result()
        if writer is not None and not writer.is_alive():
            task.cancel()
            pytest.fail("the SQLite writer thread died; this write would never complete")


# --- helpers -----------------------------------------------------------------------------


async def new_person(store: Store, clock: SimulatedClock, *, max_concurrency: int = 4) -> Person:
    return await store.create_person(name="Ada", now=clock.now(), max_concurrency=max_concurrency)


async def new_goal(store: Store, clock: SimulatedClock, person_id: str, **kw: Any) -> Goal:
    return await store.create_goal(
        person_id=person_id, title="Follow #payments", now=clock.now(), **kw
    )


async def new_task(
    store: Store,
    clock: SimulatedClock,
    person_id: str,
    *,
    goal_id: str | None = None,
    priority: int = 0,
    max_attempts: int = 5,
    run_at: datetime | None = None,
    title: str = "",
) -> Task:
    spec = TaskSpec(kind="noop", priority=priority, max_attempts=max_attempts, title=title)
    return await store.create_task(
        spec, person_id=person_id, goal_id=goal_id, now=clock.now(), run_at=run_at
    )


async def claim(
    store: Store, clock: SimulatedClock, *, limit: int = 10, worker: str = "w1"
) -> list[Claim]:
    return await store.claim_tasks(
        worker=worker,
        limit=limit,
        lease_seconds=LEASE,
        now=clock.now(),
        lease_now=clock.lease_now(),
    )


async def claim_one(store: Store, clock: SimulatedClock, *, worker: str = "w1") -> Claim:
    claims = await claim(store, clock, limit=1, worker=worker)
    assert len(claims) == 1, claims
    return claims[0]


async def finish(
    store: Store, clock: SimulatedClock, c: Claim | Fence, outcome: Outcome, *, steps: int = 0
) -> Task:
    fence = c if isinstance(c, Fence) else Fence.of(c)
    return await store.finish_activation(
        fence, outcome, now=clock.now(), steps_taken=steps, lease_now=clock.lease_now()
    )


async def checkpoint(
    store: Store, clock: SimulatedClock, fence: Fence, seq: int, state: dict[str, Any]
) -> str | None:
    return await store.checkpoint(
        fence,
        seq=seq,
        kind="step",
        output={"seq": seq},
        state=state,
        now=clock.now(),
        lease_now=clock.lease_now(),
    )


def make_trigger(
    person_id: str,
    clock: SimulatedClock,
    *,
    kind: TriggerKind = TriggerKind.INTERVAL,
    spec: str = "3600",
    goal_id: str | None = None,
    next_fire_at: datetime | None = None,
    match: dict[str, Any] | None = None,
    enabled: bool = True,
) -> Trigger:
    return Trigger(
        id=new_id("trg"),
        person_id=person_id,
        goal_id=goal_id,
        name=f"{kind} {spec}",
        kind=kind,
        spec=spec,
        match=match or {},
        task=TaskSpec(kind="noop", input={"from": "trigger"}, priority=3),
        enabled=enabled,
        missed_policy=MissedPolicy.RUN_ONCE,
        next_fire_at=next_fire_at,
        created_at=clock.now(),
    )


def later(clock: SimulatedClock, seconds: float) -> datetime:
    return clock.now() + timedelta(seconds=seconds)


# --- persons and goals -------------------------------------------------------------------


async def test_person_create_get_list(store: Store, clock: SimulatedClock) -> None:
    """Persons round-trip every field, list in creation order, and unknown ids are NotFound."""
    ada = await store.create_person(
        name="Ada", now=clock.now(), max_concurrency=2, timezone="Europe/Paris"
    )
    clock.advance(timedelta(seconds=1))
    bob = await store.create_person(name="Bob", now=clock.now(), person_id="per_bob")
    assert bob.id == "per_bob"
    got = await store.get_person(ada.id)
    assert got == ada
    assert (got.name, got.max_concurrency, got.timezone) == ("Ada", 2, "Europe/Paris")
    assert got.created_at == clock.now() - timedelta(seconds=1)
    assert [p.id for p in await store.list_persons()] == [ada.id, bob.id]
    with pytest.raises(NotFound):
        await store.get_person("per_missing")


async def test_goal_create_get_list(store: Store, clock: SimulatedClock) -> None:
    """A goal stores its scope, deadline, policy, sources and budget; lists filter by person
    and status; unknown goals and unknown owners are NotFound."""
    ada = await new_person(store, clock)
    bob = await new_person(store, clock)
    deadline = later(clock, 28 * 86400)
    goal = await store.create_goal(
        person_id=ada.id,
        title="Track settlement bugs",
        now=clock.now(),
        instructions="investigate each valid report",
        constraints=["read only in #payments"],
        deadline=deadline,
        stop_condition="four weeks passed",
        report_policy="actionable",
        sources=["slack:#payments"],
        budget=Budget(max_activations=50, max_cost_usd=2.5),
    )
    got = await store.get_goal(goal.id)
    assert got == goal
    assert got.status is GoalStatus.ACTIVE
    assert got.deadline == deadline
    assert got.constraints == ["read only in #payments"]
    assert got.sources == ["slack:#payments"]
    assert got.budget == Budget(max_activations=50, max_cost_usd=2.5)
    assert got.state == {}
    other = await new_goal(store, clock, bob.id)
    paused = await new_goal(store, clock, ada.id)
    await store.set_goal_status(paused.id, GoalStatus.PAUSED, now=clock.now())
    assert {g.id for g in await store.list_goals(person_id=ada.id)} == {goal.id, paused.id}
    assert [g.id for g in await store.list_goals(status=[GoalStatus.PAUSED])] == [paused.id]
    assert {g.id for g in await store.list_goals()} == {goal.id, paused.id, other.id}
    with pytest.raises(NotFound):
        await store.get_goal("gol_missing")
    with pytest.raises(NotFound):
        await store.create_goal(person_id="per_missing", title="x", now=clock.now())
    assert len(await store.list_goals()) == 3


async def test_goal_status_transitions(store: Store, clock: SimulatedClock) -> None:
    """Goals move active ⇄ paused → completed; an illegal move raises InvalidTransition and
    leaves the goal exactly as it was."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    clock.advance(timedelta(minutes=1))
    paused = await store.set_goal_status(goal.id, GoalStatus.PAUSED, now=clock.now())
    assert paused.status is GoalStatus.PAUSED
    assert paused.updated_at == clock.now()
    with pytest.raises(InvalidTransition):
        await store.set_goal_status(goal.id, GoalStatus.COMPLETED, now=clock.now())
    active = await store.set_goal_status(goal.id, GoalStatus.ACTIVE, now=clock.now())
    assert active.status is GoalStatus.ACTIVE
    with pytest.raises(InvalidTransition):
        await store.set_goal_status(goal.id, GoalStatus.ACTIVE, now=clock.now())
    done = await store.set_goal_status(goal.id, GoalStatus.COMPLETED, now=clock.now())
    clock.advance(timedelta(minutes=1))
    for illegal in (GoalStatus.ACTIVE, GoalStatus.PAUSED, GoalStatus.CANCELLED):
        with pytest.raises(InvalidTransition):
            await store.set_goal_status(goal.id, illegal, now=clock.now())
    assert await store.get_goal(goal.id) == done
    with pytest.raises(NotFound):
        await store.set_goal_status("gol_missing", GoalStatus.PAUSED, now=clock.now())


async def test_ending_goal_cancels_idle_tasks_flags_running_disables_triggers(
    store: Store, clock: SimulatedClock
) -> None:
    """Cancelling a goal cancels its pending/waiting/paused tasks, asks its running task to
    stop (control=cancel), disables its triggers, and touches nothing of other goals."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    other = await new_goal(store, clock, ada.id)
    running = await new_task(store, clock, ada.id, goal_id=goal.id, priority=9)
    c = await claim_one(store, clock)
    assert c.task.id == running.id
    waiting = await new_task(store, clock, ada.id, goal_id=goal.id, priority=8)
    cw = await claim_one(store, clock)
    assert cw.task.id == waiting.id
    await finish(store, clock, cw, Wait(condition=WaitCondition(kind="input", prompt="?")))
    pending = await new_task(store, clock, ada.id, goal_id=goal.id)
    paused = await new_task(store, clock, ada.id, goal_id=goal.id)
    await store.request_control(paused.id, "pause", now=clock.now())
    bystander = await new_task(store, clock, ada.id, goal_id=other.id)
    trig = await store.create_trigger(
        make_trigger(ada.id, clock, goal_id=goal.id, next_fire_at=later(clock, 60))
    )
    other_trig = await store.create_trigger(
        make_trigger(ada.id, clock, goal_id=other.id, next_fire_at=later(clock, 60))
    )

    clock.advance(timedelta(seconds=5))
    ended = await store.set_goal_status(goal.id, GoalStatus.CANCELLED, now=clock.now())
    assert ended.status is GoalStatus.CANCELLED
    for tid in (waiting.id, pending.id, paused.id):
        t = await store.get_task(tid)
        assert t.status is TaskStatus.CANCELLED
        assert t.finished_at == clock.now()
    still = await store.get_task(running.id)
    assert still.status is TaskStatus.RUNNING
    control = await store.renew_lease(Fence.of(c), lease_seconds=LEASE, lease_now=clock.lease_now())
    assert control == "cancel"
    assert await checkpoint(store, clock, Fence.of(c), 1, {}) == "cancel"
    t = await finish(store, clock, c, Stop(control="cancel"), steps=1)
    assert t.status is TaskStatus.CANCELLED
    disabled = await store.get_trigger(trig.id)
    assert (disabled.enabled, disabled.next_fire_at) == (False, None)
    assert (await store.get_trigger(other_trig.id)).enabled
    assert (await store.get_task(bystander.id)).status is TaskStatus.PENDING


async def test_write_goal_merges_state_and_appends_records(
    store: Store, clock: SimulatedClock
) -> None:
    """write_goal merges state keys (latest value wins) and appends records in order, tagged
    with the writing task when written under a fence."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    g = await store.write_goal(goal.id, now=clock.now(), state={"seen": 1, "last": "a"})
    assert g.state == {"seen": 1, "last": "a"}
    await store.write_goal(goal.id, now=clock.now(), record=("note", {"text": "by hand"}))
    task = await new_task(store, clock, ada.id, goal_id=goal.id)
    c = await claim_one(store, clock)
    clock.advance(timedelta(seconds=1))
    g = await store.write_goal(
        goal.id,
        now=clock.now(),
        state={"seen": 2, "extra": [1, 2]},
        record=("result", {"verdict": "valid"}),
        fence=Fence.of(c),
        lease_now=clock.lease_now(),
    )
    assert g.state == {"seen": 2, "last": "a", "extra": [1, 2]}
    assert g.updated_at == clock.now()
    assert (await store.get_goal(goal.id)).state == g.state
    records = await store.list_goal_records(goal.id)
    assert [(r.kind, r.content, r.task_id) for r in records] == [
        ("note", {"text": "by hand"}, None),
        ("result", {"verdict": "valid"}, task.id),
    ]
    assert records[0].id < records[1].id
    with pytest.raises(NotFound):
        await store.write_goal("gol_missing", now=clock.now(), state={"x": 1})


@pytest.mark.parametrize("how", ["expired_lease", "stale_epoch"])
async def test_write_goal_with_stale_fence_writes_nothing(
    store: Store, clock: SimulatedClock, how: str
) -> None:
    """A worker whose lease lapsed, or whose task was claimed again since, cannot write into
    the goal: LeaseLost, and neither state nor records change."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    await store.write_goal(goal.id, now=clock.now(), state={"k": "original"})
    await new_task(store, clock, ada.id, goal_id=goal.id)
    c = await claim_one(store, clock)
    if how == "expired_lease":
        clock.advance(timedelta(seconds=LEASE + 1))
    else:
        await finish(store, clock, c, Requeue())
        again = await claim_one(store, clock)
        assert again.epoch == c.epoch + 1
    with pytest.raises(LeaseLost):
        await store.write_goal(
            goal.id,
            now=clock.now(),
            state={"k": "zombie"},
            record=("evidence", {"x": 1}),
            fence=Fence.of(c),
            lease_now=clock.lease_now(),
        )
    assert (await store.get_goal(goal.id)).state == {"k": "original"}
    assert await store.list_goal_records(goal.id) == []


async def test_expire_goals_by_deadline(store: Store, clock: SimulatedClock) -> None:
    """expire_goals expires live goals (active or paused) whose deadline has passed, cancels
    their idle tasks, and leaves goals without a deadline, with a later one, or already ended."""
    ada = await new_person(store, clock)
    due = await new_goal(store, clock, ada.id, deadline=later(clock, 60))
    due_paused = await new_goal(store, clock, ada.id, deadline=later(clock, 30))
    await store.set_goal_status(due_paused.id, GoalStatus.PAUSED, now=clock.now())
    future = await new_goal(store, clock, ada.id, deadline=later(clock, 3600))
    open_ended = await new_goal(store, clock, ada.id)
    done = await new_goal(store, clock, ada.id, deadline=later(clock, 10))
    await store.set_goal_status(done.id, GoalStatus.COMPLETED, now=clock.now())
    task = await new_task(store, clock, ada.id, goal_id=due.id)
    assert await store.next_deadline() == later(clock, 30)

    assert await store.expire_goals(now=later(clock, 59)) == [due_paused.id]
    clock.advance(timedelta(seconds=60))
    assert await store.expire_goals(now=clock.now()) == [due.id]
    assert (await store.get_goal(due.id)).status is GoalStatus.EXPIRED
    assert (await store.get_goal(due_paused.id)).status is GoalStatus.EXPIRED
    assert (await store.get_goal(future.id)).status is GoalStatus.ACTIVE
    assert (await store.get_goal(open_ended.id)).status is GoalStatus.ACTIVE
    assert (await store.get_goal(done.id)).status is GoalStatus.COMPLETED
    expired_task = await store.get_task(task.id)
    assert expired_task.status is TaskStatus.CANCELLED
    assert await store.expire_goals(now=clock.now()) == []
    assert await store.next_deadline() == future.deadline


# --- tasks: create and claim -------------------------------------------------------------


async def test_create_task_and_list(store: Store, clock: SimulatedClock) -> None:
    """A new task is pending at run_at with epoch 0 and no steps; list_tasks filters by person,
    goal, status and kind; unknown persons, unknown goals and goals of another person are
    NotFound and create nothing."""
    ada = await new_person(store, clock)
    bob = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    bobs_goal = await new_goal(store, clock, bob.id)
    spec = TaskSpec(kind="note", input={"text": "hi"}, priority=2, max_attempts=3, title="Note")
    t = await store.create_task(spec, person_id=ada.id, goal_id=goal.id, now=clock.now())
    assert (t.kind, t.title, t.input, t.priority, t.max_attempts) == (
        "note",
        "Note",
        {"text": "hi"},
        2,
        3,
    )
    assert t.status is TaskStatus.PENDING
    assert (t.attempts, t.step_seq, t.epoch, t.state) == (0, 0, 0, {})
    assert t.run_at == clock.now()
    assert (t.goal_id, t.parent_id, t.lease_owner, t.wait, t.finished_at) == (
        goal.id,
        None,
        None,
        None,
        None,
    )
    assert await store.get_task(t.id) == t
    loose = await new_task(store, clock, ada.id, title="")
    assert loose.title == "noop"  # the kind stands in for a missing title
    bobs = await new_task(store, clock, bob.id)
    with pytest.raises(NotFound):
        await new_task(store, clock, ada.id, goal_id=bobs_goal.id)
    with pytest.raises(NotFound):
        await new_task(store, clock, ada.id, goal_id="gol_missing")
    with pytest.raises(NotFound):
        await new_task(store, clock, "per_missing")
    with pytest.raises(NotFound):
        await store.get_task("tsk_missing")
    assert {x.id for x in await store.list_tasks(person_id=ada.id)} == {t.id, loose.id}
    assert [x.id for x in await store.list_tasks(goal_id=goal.id)] == [t.id]
    assert [x.id for x in await store.list_tasks(person_id=bob.id)] == [bobs.id]
    assert await store.list_tasks(status=[TaskStatus.RUNNING]) == []
    assert len(await store.list_tasks(status=[TaskStatus.PENDING])) == 3
    assert [x.id for x in await store.list_tasks(kind="note")] == [t.id]
    assert [x.id for x in await store.list_tasks(person_id=bob.id, kind="noop")] == [bobs.id]
    assert await store.list_tasks(person_id=bob.id, kind="note") == []
    assert await store.count_tasks() == {"pending": 3}


async def test_claim_in_priority_order(store: Store, clock: SimulatedClock) -> None:
    """Claims take the highest priority first, then the earliest run_at."""
    ada = await new_person(store, clock, max_concurrency=10)
    low = await new_task(store, clock, ada.id, priority=0)
    high = await new_task(store, clock, ada.id, priority=5)
    mid_late = await new_task(store, clock, ada.id, priority=1, run_at=later(clock, -10))
    mid_early = await new_task(store, clock, ada.id, priority=1, run_at=later(clock, -20))
    order = [(await claim_one(store, clock)).task.id for _ in range(4)]
    assert order == [high.id, mid_early.id, mid_late.id, low.id]
    assert await claim(store, clock) == []


async def test_claim_skips_future_run_at(store: Store, clock: SimulatedClock) -> None:
    """A task whose run_at is in the future is not claimed until then."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id, run_at=later(clock, 60))
    assert await store.next_run_time() == later(clock, 60)
    assert await claim(store, clock) == []
    clock.advance(timedelta(seconds=59))
    assert await claim(store, clock) == []
    clock.advance(timedelta(seconds=1))
    assert (await claim_one(store, clock)).task.id == t.id
    assert await store.next_run_time() is None


async def test_claim_honours_max_concurrency(store: Store, clock: SimulatedClock) -> None:
    """A person never has more running tasks than max_concurrency, across claims; other
    persons are not held back, and a finished task frees a slot."""
    ada = await new_person(store, clock, max_concurrency=2)
    bob = await new_person(store, clock, max_concurrency=1)
    for _ in range(5):
        await new_task(store, clock, ada.id)
    for _ in range(2):
        await new_task(store, clock, bob.id)
    claims = await claim(store, clock, limit=10)
    by_person = [c.task.person_id for c in claims]
    assert sorted(by_person) == sorted([ada.id, ada.id, bob.id])
    assert await claim(store, clock, limit=10) == []
    first_ada = next(c for c in claims if c.task.person_id == ada.id)
    await finish(store, clock, first_ada, Succeed())
    more = await claim(store, clock, limit=10)
    assert [c.task.person_id for c in more] == [ada.id]
    assert len(await store.list_tasks(person_id=ada.id, status=[TaskStatus.RUNNING])) == 2
    assert len(await store.list_tasks(person_id=bob.id, status=[TaskStatus.RUNNING])) == 1


async def test_claim_respects_limit(store: Store, clock: SimulatedClock) -> None:
    """claim_tasks never returns more than ``limit`` claims."""
    ada = await new_person(store, clock, max_concurrency=10)
    for _ in range(5):
        await new_task(store, clock, ada.id)
    assert len(await claim(store, clock, limit=2)) == 2
    assert len(await claim(store, clock, limit=10)) == 3


async def test_saturated_person_does_not_block_others(store: Store, clock: SimulatedClock) -> None:
    """A person already at max_concurrency with many due high-priority tasks does not keep a
    worker with free slots from claiming another person's due task."""
    ada = await new_person(store, clock, max_concurrency=1)
    bob = await new_person(store, clock)
    for _ in range(6):
        await new_task(store, clock, ada.id, priority=10)
    await claim_one(store, clock)  # ada is now at her limit
    bobs = await new_task(store, clock, bob.id, priority=0)
    claims = await claim(store, clock, limit=1)
    assert [c.task.id for c in claims] == [bobs.id]


async def test_tasks_of_paused_goal_not_claimed(store: Store, clock: SimulatedClock) -> None:
    """Tasks of a paused goal stay pending until the goal is active again; stand-alone tasks
    are claimed meanwhile."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    in_goal = await new_task(store, clock, ada.id, goal_id=goal.id, priority=5)
    await store.set_goal_status(goal.id, GoalStatus.PAUSED, now=clock.now())
    loose = await new_task(store, clock, ada.id)
    assert [c.task.id for c in await claim(store, clock)] == [loose.id]
    assert await claim(store, clock) == []
    await store.set_goal_status(goal.id, GoalStatus.ACTIVE, now=clock.now())
    assert [c.task.id for c in await claim(store, clock)] == [in_goal.id]


async def test_claim_bumps_epoch_and_opens_activation(store: Store, clock: SimulatedClock) -> None:
    """Each claim bumps the epoch, sets owner and lease expiry (lease_now + lease seconds) and
    opens an activation with the reason the task became runnable."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    t = await new_task(store, clock, ada.id, goal_id=goal.id)
    c1 = await claim_one(store, clock, worker="w-a")
    assert c1.task.id == t.id
    assert c1.task.status is TaskStatus.RUNNING
    assert c1.epoch == 1
    assert c1.task.lease_owner == "w-a"
    assert c1.task.lease_expires_at == later(clock, LEASE)
    assert c1.wake.to_json() == {}
    act = c1.activation
    assert (act.task_id, act.goal_id, act.reason, act.worker, act.epoch) == (
        t.id,
        goal.id,
        "created",
        "w-a",
        1,
    )
    assert act.started_at == clock.now()
    stored = await store.list_activations(task_id=t.id)
    assert len(stored) == 1
    assert stored[0].id == act.id
    assert (stored[0].ended_at, stored[0].outcome) == (None, None)

    await checkpoint(store, clock, Fence.of(c1), 1, {"n": 1})
    clock.advance(timedelta(seconds=1))
    await finish(store, clock, c1, Requeue(reason="step cap"), steps=1)
    c2 = await claim_one(store, clock, worker="w-b")
    assert c2.epoch == 2
    assert c2.task.state == {"n": 1}
    assert c2.task.step_seq == 1
    assert c2.activation.reason == "step cap"
    assert c2.wake.to_json() == {"reason": "step cap"}
    acts = await store.list_activations(task_id=t.id)
    assert [(a.epoch, a.worker) for a in acts] == [(1, "w-a"), (2, "w-b")]
    assert acts[0].ended_at == clock.now()
    assert acts[0].steps == 1
    assert [a.id for a in await store.list_activations(goal_id=goal.id)] == [a.id for a in acts]
    usage = await store.goal_usage(goal.id)
    assert (usage["activations"], usage["steps"]) == (2, 1)


# --- tasks: checkpoints and leases -------------------------------------------------------


async def test_checkpoint_persists_state_and_steps(store: Store, clock: SimulatedClock) -> None:
    """Checkpoints commit the step and the state together; steps come back in order with the
    activation that wrote them."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id)
    c = await claim_one(store, clock)
    fence = Fence.of(c)
    for seq in (1, 2, 3):
        clock.advance(timedelta(seconds=1))
        assert await checkpoint(store, clock, fence, seq, {"upto": seq, "items": [seq]}) is None
    got = await store.get_task(t.id)
    assert got.step_seq == 3
    assert got.state == {"upto": 3, "items": [3]}
    assert got.updated_at == clock.now()
    steps = await store.list_steps(t.id)
    assert [(s.seq, s.kind, s.output, s.activation_id) for s in steps] == [
        (n, "step", {"seq": n}, c.activation.id) for n in (1, 2, 3)
    ]
    assert steps[2].created_at == clock.now()
    assert [s.seq for s in await store.list_steps(t.id, after=1)] == [2, 3]
    assert [s.seq for s in await store.list_steps(t.id, limit=1)] == [1]


async def test_checkpoint_seq_must_be_contiguous(store: Store, clock: SimulatedClock) -> None:
    """A checkpoint must be exactly the next step: a repeated, skipped or zero seq is rejected
    (LeaseLost) and writes neither state nor a step row; the right next seq still commits."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id)
    c = await claim_one(store, clock)
    await checkpoint(store, clock, Fence.of(c), 1, {"ok": 1})
    for wrong in (1, 3, 0):
        with pytest.raises(LeaseLost):
            await checkpoint(store, clock, Fence.of(c), wrong, {"bad": wrong})
        got = await store.get_task(t.id)
        assert (got.step_seq, got.state) == (1, {"ok": 1})
        assert [s.seq for s in await store.list_steps(t.id)] == [1]
    await checkpoint(store, clock, Fence.of(c), 2, {"ok": 2})
    assert [s.seq for s in await store.list_steps(t.id)] == [1, 2]


@pytest.mark.parametrize("how", ["stale_epoch", "expired_lease", "finished"])
async def test_checkpoint_with_lost_lease_writes_nothing(
    store: Store, clock: SimulatedClock, how: str
) -> None:
    """A checkpoint from a worker that no longer holds the task — re-claimed since (stale
    epoch), lease lapsed by the lease clock, or the task already ended — raises LeaseLost and
    writes nothing."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id)
    c = await claim_one(store, clock)
    await checkpoint(store, clock, Fence.of(c), 1, {"v": 1})
    if how == "stale_epoch":
        await finish(store, clock, c, Requeue())
        c2 = await claim_one(store, clock)
        assert c2.epoch == c.epoch + 1
    elif how == "expired_lease":
        clock.advance(timedelta(seconds=LEASE + 0.5))
    else:
        await finish(store, clock, c, Succeed(result="done"))
    before = await store.get_task(t.id)
    with pytest.raises(LeaseLost) as info:
        await checkpoint(store, clock, Fence.of(c), 2, {"v": 2})
    assert (info.value.task_id, info.value.epoch) == (t.id, c.epoch)
    after = await store.get_task(t.id)
    assert after == before
    assert [s.seq for s in await store.list_steps(t.id)] == [1]


async def test_lease_valid_up_to_its_expiry(store: Store, clock: SimulatedClock) -> None:
    """A lease is good through its expiry instant and lost just after it."""
    ada = await new_person(store, clock)
    await new_task(store, clock, ada.id)
    c = await claim_one(store, clock)
    clock.advance(timedelta(seconds=LEASE))
    await checkpoint(store, clock, Fence.of(c), 1, {})
    clock.advance(timedelta(seconds=1))
    with pytest.raises(LeaseLost):
        await checkpoint(store, clock, Fence.of(c), 2, {})


async def test_renew_lease(store: Store, clock: SimulatedClock) -> None:
    """Renewing moves the lease expiry to lease_now + lease seconds and keeps the task alive
    past its first expiry; after a lapse renewal raises LeaseLost."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id)
    c = await claim_one(store, clock)
    fence = Fence.of(c)
    clock.advance(timedelta(seconds=20))
    assert await store.renew_lease(fence, lease_seconds=LEASE, lease_now=clock.lease_now()) is None
    assert (await store.get_task(t.id)).lease_expires_at == later(clock, LEASE)
    clock.advance(timedelta(seconds=20))  # 40 s after the claim: alive thanks to the renewal
    await checkpoint(store, clock, fence, 1, {})
    assert await store.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now()) == []
    clock.advance(timedelta(seconds=11))
    with pytest.raises(LeaseLost):
        await store.renew_lease(fence, lease_seconds=LEASE, lease_now=clock.lease_now())


# --- tasks: outcomes ---------------------------------------------------------------------


async def test_finish_succeed_and_fail(store: Store, clock: SimulatedClock) -> None:
    """Succeed stores the result, Fail stores the reason; both are terminal, release the
    lease and close the activation with its step count and usage."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    ok = await new_task(store, clock, ada.id, goal_id=goal.id, priority=1)
    bad = await new_task(store, clock, ada.id, goal_id=goal.id)
    c_ok, c_bad = await claim(store, clock)
    assert c_ok.task.id == ok.id
    await checkpoint(store, clock, Fence.of(c_ok), 1, {})
    clock.advance(timedelta(seconds=3))
    done = await store.finish_activation(
        Fence.of(c_ok),
        Succeed(result={"answer": 42}),
        now=clock.now(),
        steps_taken=1,
        usage={"cost_usd": 0.25, "tokens": 10},
        lease_now=clock.lease_now(),
    )
    assert done.status is TaskStatus.SUCCEEDED
    assert done.result == {"answer": 42}
    assert done.finished_at == clock.now()
    assert (done.lease_owner, done.lease_expires_at) == (None, None)
    act = (await store.list_activations(task_id=ok.id))[0]
    assert act.ended_at == clock.now()
    assert act.outcome == "succeed"
    assert (act.steps, act.usage) == (1, {"cost_usd": 0.25, "tokens": 10})
    failed = await finish(store, clock, c_bad, Fail(reason="refused"))
    assert failed.status is TaskStatus.FAILED
    assert failed.error == "refused"
    assert failed.finished_at == clock.now()
    assert (await store.list_activations(task_id=bad.id))[0].outcome == "fail"
    usage = await store.goal_usage(goal.id)
    assert usage == {"activations": 2, "steps": 1, "cost_usd": 0.25, "tokens": 10, "seconds": 6.0}
    with pytest.raises(LeaseLost):
        await finish(store, clock, c_ok, Fail(reason="again"))
    assert (await store.get_task(ok.id)).status is TaskStatus.SUCCEEDED


async def test_finish_retry_backs_off_then_dead_letters(
    store: Store, clock: SimulatedClock
) -> None:
    """Retry returns the task to pending at now + delay with attempts + 1; the retry that
    reaches max_attempts dead-letters it instead."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id, max_attempts=2)
    c = await claim_one(store, clock)
    retried = await finish(store, clock, c, Retry(reason="HTTP 503", delay_seconds=120))
    assert retried.status is TaskStatus.PENDING
    assert retried.attempts == 1
    assert retried.run_at == later(clock, 120)
    assert retried.error == "HTTP 503"
    assert retried.finished_at is None
    assert (await store.list_activations(task_id=t.id))[0].outcome == "retry"
    clock.advance(timedelta(seconds=119))
    assert await claim(store, clock) == []
    clock.advance(timedelta(seconds=1))
    c2 = await claim_one(store, clock)
    assert c2.activation.reason == "retry"
    assert c2.wake.to_json() == {"reason": "retry"}
    dead = await finish(store, clock, c2, Retry(reason="HTTP 503", delay_seconds=120))
    assert dead.status is TaskStatus.DEAD_LETTERED
    assert dead.attempts == 2
    assert dead.finished_at == clock.now()
    assert dead.error is not None
    assert "HTTP 503" in dead.error
    acts = await store.list_activations(task_id=t.id)
    assert acts[1].outcome == "dead_lettered"
    clock.advance(timedelta(seconds=600))
    assert await claim(store, clock) == []


async def test_finish_wait_until_and_wake_due_waits(store: Store, clock: SimulatedClock) -> None:
    """Wait(until) puts the task to sleep as a row; wake_due_waits wakes it only once the time
    has come, and the next activation says it was the timer."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id)
    c = await claim_one(store, clock)
    until = later(clock, 3600)
    waiting = await finish(
        store, clock, c, Wait(condition=WaitCondition(kind="until", until=until))
    )
    assert waiting.status is TaskStatus.WAITING
    assert waiting.wait == WaitCondition(kind="until", until=until)
    assert (waiting.lease_owner, waiting.lease_expires_at) == (None, None)
    assert (await store.list_activations(task_id=t.id))[0].outcome == "wait"
    assert await store.next_wait_time() == until
    assert await claim(store, clock) == []
    assert await store.wake_due_waits(now=later(clock, 3599)) == 0
    clock.advance(timedelta(seconds=3600))
    assert await store.wake_due_waits(now=clock.now()) == 1
    woken = await store.get_task(t.id)
    assert woken.status is TaskStatus.PENDING
    assert woken.wait is None
    assert woken.run_at == clock.now()
    assert await store.next_wait_time() is None
    assert await store.wake_due_waits(now=clock.now()) == 0
    c2 = await claim_one(store, clock)
    assert (c2.activation.reason, c2.wake.to_json()) == ("timer", {"reason": "timer"})


async def test_wait_timeout_wakes_with_reason_timeout(store: Store, clock: SimulatedClock) -> None:
    """An event wait with a timeout is woken by wake_due_waits with reason 'timeout'; a wait
    without any time is never woken by the clock."""
    ada = await new_person(store, clock)
    timed = await new_task(store, clock, ada.id, priority=1)
    forever = await new_task(store, clock, ada.id)
    c_timed, c_forever = await claim(store, clock)
    assert c_timed.task.id == timed.id
    cond = WaitCondition(kind="event", event_type="x", until=later(clock, 60), match={"a": 1})
    got = await finish(store, clock, c_timed, Wait(condition=cond))
    assert got.wait == cond
    await finish(
        store, clock, c_forever, Wait(condition=WaitCondition(kind="event", event_type="y"))
    )
    clock.advance(timedelta(days=365))
    assert await store.wake_due_waits(now=clock.now()) == 1
    assert (await store.get_task(forever.id)).status is TaskStatus.WAITING
    c = await claim_one(store, clock)
    assert (c.task.id, c.wake.to_json()) == (timed.id, {"reason": "timeout"})


async def test_finish_requeue(store: Store, clock: SimulatedClock) -> None:
    """Requeue gives the worker back: pending again at once with attempts unchanged."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id)
    c = await claim_one(store, clock)
    clock.advance(timedelta(seconds=2))
    back = await finish(store, clock, c, Requeue(reason="fairness"))
    assert back.status is TaskStatus.PENDING
    assert back.run_at == clock.now()
    assert back.attempts == 0
    assert (await store.list_activations(task_id=t.id))[0].outcome == "requeue"
    assert (await claim_one(store, clock)).wake.to_json() == {"reason": "fairness"}


async def test_finish_stop_cancel_and_pause(store: Store, clock: SimulatedClock) -> None:
    """Stop(cancel) ends the task cancelled; Stop(pause) parks it paused, and resume makes it
    runnable again with reason 'resumed'."""
    ada = await new_person(store, clock)
    a = await new_task(store, clock, ada.id, priority=1)
    b = await new_task(store, clock, ada.id)
    ca, cb = await claim(store, clock)
    assert ca.task.id == a.id
    await store.request_control(a.id, "cancel", now=clock.now())
    await store.request_control(b.id, "pause", now=clock.now())
    cancelled = await finish(store, clock, ca, Stop(control="cancel"))
    assert cancelled.status is TaskStatus.CANCELLED
    assert cancelled.finished_at == clock.now()
    paused = await finish(store, clock, cb, Stop(control="pause"))
    assert paused.status is TaskStatus.PAUSED
    assert paused.finished_at is None
    outcomes = {x.task_id: x.outcome for x in await store.list_activations()}
    assert outcomes == {a.id: "cancelled", b.id: "paused"}
    assert await claim(store, clock) == []
    clock.advance(timedelta(seconds=5))
    resumed = await store.request_control(b.id, "resume", now=clock.now())
    assert resumed.status is TaskStatus.PENDING
    assert resumed.run_at == clock.now()
    c = await claim_one(store, clock)
    assert (c.task.id, c.activation.reason) == (b.id, "resumed")


async def test_finish_under_stale_fence_changes_nothing(
    store: Store, clock: SimulatedClock
) -> None:
    """An outcome from a worker whose lease lapsed is rejected and leaves task and activation
    alone (the reaper, not the zombie, decides what happens next)."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id)
    c = await claim_one(store, clock)
    clock.advance(timedelta(seconds=LEASE + 1))
    before = await store.get_task(t.id)
    with pytest.raises(LeaseLost):
        await finish(store, clock, c, Succeed(result="late"))
    assert await store.get_task(t.id) == before
    assert (await store.list_activations(task_id=t.id))[0].ended_at is None


# --- tasks: control from outside ---------------------------------------------------------


async def test_control_idle_tasks(store: Store, clock: SimulatedClock) -> None:
    """Idle tasks change at once: pause parks a pending task (not claimable), resume brings it
    back, cancel ends it; illegal requests raise InvalidTransition and unknown ids NotFound."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id)
    with pytest.raises(InvalidTransition):
        await store.request_control(t.id, "resume", now=clock.now())
    paused = await store.request_control(t.id, "pause", now=clock.now())
    assert paused.status is TaskStatus.PAUSED
    assert await claim(store, clock) == []
    with pytest.raises(InvalidTransition):
        await store.request_control(t.id, "pause", now=clock.now())
    assert (await store.request_control(t.id, "resume", now=clock.now())).status is (
        TaskStatus.PENDING
    )
    cancelled = await store.request_control(t.id, "cancel", now=clock.now())
    assert cancelled.status is TaskStatus.CANCELLED
    assert cancelled.finished_at == clock.now()
    for control in ("cancel", "pause", "resume"):
        with pytest.raises(InvalidTransition):
            await store.request_control(t.id, control, now=clock.now())
    assert (await store.get_task(t.id)) == cancelled
    with pytest.raises(InvalidTransition):
        await store.request_control(t.id, "explode", now=clock.now())
    with pytest.raises(NotFound):
        await store.request_control("tsk_missing", "cancel", now=clock.now())
    assert await claim(store, clock) == []


async def test_control_running_task_is_a_request(store: Store, clock: SimulatedClock) -> None:
    """On a running task, cancel and pause are requests the worker sees at its next checkpoint
    or renewal; resume withdraws a pause request. The status does not change by itself."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id)
    c = await claim_one(store, clock)
    fence = Fence.of(c)
    asked = await store.request_control(t.id, "pause", now=clock.now())
    assert asked.status is TaskStatus.RUNNING
    assert await checkpoint(store, clock, fence, 1, {}) == "pause"
    await store.request_control(t.id, "resume", now=clock.now())
    assert await store.renew_lease(fence, lease_seconds=LEASE, lease_now=clock.lease_now()) is None
    assert await checkpoint(store, clock, fence, 2, {}) is None
    await store.request_control(t.id, "cancel", now=clock.now())
    assert await store.renew_lease(fence, lease_seconds=LEASE, lease_now=clock.lease_now()) == (
        "cancel"
    )
    assert await checkpoint(store, clock, fence, 3, {}) == "cancel"
    assert (await store.get_task(t.id)).status is TaskStatus.RUNNING
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
    paused = await store.request_control(t.id, "pause", now=clock.now())
    assert paused.status is TaskStatus.PAUSED
    clock.advance(timedelta(seconds=120))
    assert await store.wake_due_waits(now=clock.now()) == 0
    assert (await store.get_task(t.id)).status is TaskStatus.PAUSED
    resumed = await store.request_control(t.id, "resume", now=clock.now())
    assert resumed.status is TaskStatus.WAITING
    assert resumed.wait == cond
    assert await store.wake_due_waits(now=clock.now()) == 1
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
    await store.set_goal_status(goal.id, GoalStatus.CANCELLED, now=clock.now())
    await finish(store, clock, c, outcome)
    assert (await store.get_task(t.id)).status is TaskStatus.CANCELLED


async def test_cancel_request_survives_lost_worker(store: Store, clock: SimulatedClock) -> None:
    """Cancel a running task, then its worker dies: the task ends cancelled rather than being
    re-queued and run again."""
    ada = await new_person(store, clock)
    t = await new_task(store, clock, ada.id)
    await claim_one(store, clock)
    await store.request_control(t.id, "cancel", now=clock.now())
    clock.advance(timedelta(seconds=LEASE + 1))
    await store.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now())
    assert (await store.get_task(t.id)).status is TaskStatus.CANCELLED


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
        kid = await store.create_task(
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
    replay = await store.create_task(
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
    assert {k.id for k in await store.list_tasks(parent_id=parent.id)} == {k.id for k in kids}
    await checkpoint(store, clock, fence, 1, {})
    sleeping = await finish(store, clock, cp, Wait(condition=WaitCondition(kind="children")))
    assert sleeping.status is TaskStatus.WAITING

    c0 = await claim_one(store, clock)
    await finish(store, clock, c0, Succeed())
    assert (await store.get_task(parent.id)).status is TaskStatus.WAITING
    c1 = await claim_one(store, clock)
    await finish(store, clock, c1, Retry(reason="x", delay_seconds=1))  # max_attempts=1: dead
    assert (await store.get_task(c1.task.id)).status is TaskStatus.DEAD_LETTERED
    assert (await store.get_task(parent.id)).status is TaskStatus.WAITING
    await store.request_control(kids[2].id, "cancel", now=clock.now())
    woken = await store.get_task(parent.id)
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
    kid = await store.create_task(
        TaskSpec(kind="noop"),
        person_id=ada.id,
        parent_id=parent.id,
        now=clock.now(),
        task_id=f"{parent.id}.1.0",
        fence=Fence.of(cp),
        lease_now=clock.lease_now(),
    )
    await store.request_control(kid.id, "cancel", now=clock.now())
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
        await store.create_task(
            TaskSpec(kind="noop"),
            person_id=ada.id,
            parent_id=parent.id,
            now=clock.now(),
            task_id=f"{parent.id}.1.0",
            fence=Fence.of(cp),
            lease_now=clock.lease_now(),
        )
    assert await store.list_tasks(parent_id=parent.id) == []


async def test_child_dead_lettered_by_reaper_wakes_parent(
    store: Store, clock: SimulatedClock
) -> None:
    """When the reaper dead-letters the last live child, the parent waiting on its children
    wakes, as it does for any other way a child ends."""
    ada = await new_person(store, clock)
    parent = await new_task(store, clock, ada.id, priority=9)
    cp = await claim_one(store, clock)
    await store.create_task(
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
    await store.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now())
    assert (await store.get_task(parent.id)).status is TaskStatus.PENDING


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
    assert await store.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now()) == []
    clock.advance(timedelta(seconds=LEASE - 20 + 1))
    assert await store.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now()) == [t.id]
    reaped = await store.get_task(t.id)
    assert reaped.status is TaskStatus.PENDING
    assert reaped.attempts == 1
    assert (reaped.lease_owner, reaped.lease_expires_at) == (None, None)
    assert (reaped.step_seq, reaped.state) == (1, {"v": 1})
    act = (await store.list_activations(task_id=t.id))[0]
    assert (act.outcome, act.ended_at) == ("lost", clock.now())
    assert (await store.get_task(healthy.id)).status is TaskStatus.RUNNING

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
    assert [s.activation_id for s in await store.list_steps(t.id)] == [
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
        assert await store.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now()) == [
            t.id
        ]
        assert (await store.get_task(t.id)).attempts == attempt
    dead = await store.get_task(t.id)
    assert dead.status is TaskStatus.DEAD_LETTERED
    assert dead.finished_at == clock.now()
    assert [a.outcome for a in await store.list_activations(task_id=t.id)] == ["lost", "lost"]
    assert await claim(store, clock) == []


# --- effects -----------------------------------------------------------------------------


async def _running(store: Store, clock: SimulatedClock) -> tuple[Person, Claim]:
    ada = await new_person(store, clock)
    await new_task(store, clock, ada.id)
    return ada, await claim_one(store, clock)


async def plan(store: Store, clock: SimulatedClock, fence: Fence, key: str, **kw: Any) -> Effect:
    return await durable(
        store,
        store.plan_effect(
            fence,
            key=key,
            step_seq=kw.get("step_seq", 1),
            tool=kw.get("tool", "email.send"),
            args=kw.get("args", {"to": "bob@example.com"}),
            idempotent=kw.get("idempotent", False),
            now=clock.now(),
            lease_now=clock.lease_now(),
        ),
    )


async def set_status(
    store: Store,
    clock: SimulatedClock,
    fence: Fence,
    effect_id: str,
    status: EffectStatus,
    **kw: Any,
) -> Effect:
    return await durable(
        store,
        store.set_effect_status(
            fence, effect_id, status, now=clock.now(), lease_now=clock.lease_now(), **kw
        ),
    )


async def test_plan_effect_is_idempotent_per_key(
    store: Store, clock: SimulatedClock, request: pytest.FixtureRequest
) -> None:
    """Planning the same key twice returns the first journal entry unchanged; another key
    makes another entry."""
    _, c = await _running(store, clock)
    fence = Fence.of(c)
    key = f"{c.task.id}:1:0"
    first = await plan(store, clock, fence, key, args={"to": "bob@example.com"}, idempotent=True)
    assert first.status is EffectStatus.PLANNED
    assert (first.task_id, first.step_seq, first.key, first.tool) == (
        c.task.id,
        1,
        key,
        "email.send",
    )
    assert (first.args, first.idempotent, first.attempts) == ({"to": "bob@example.com"}, True, 0)
    clock.advance(timedelta(seconds=1))
    again = await plan(store, clock, fence, key, args={"to": "eve@example.com"})
    assert again == first
    other = await plan(store, clock, fence, f"{c.task.id}:1:1")
    assert other.id != first.id
    assert await store.get_effect_by_key(key) == first
    assert await store.get_effect_by_key("nope") is None
    assert [e.id for e in await store.list_effects(task_id=c.task.id)] == [first.id, other.id]


async def test_effect_status_machine(
    store: Store, clock: SimulatedClock, request: pytest.FixtureRequest
) -> None:
    """planned → sent → in_doubt → sent → succeeded is allowed (sending counts attempts);
    skipping or leaving a settled state raises InvalidTransition and changes nothing. Sending
    stores the lease's expiry as the send deadline; an in-doubt effect without a key the
    service dedupes is not sent again before it has passed."""
    _, c = await _running(store, clock)
    fence = Fence.of(c)
    eff = await plan(store, clock, fence, f"{c.task.id}:1:0")
    for illegal in (EffectStatus.SUCCEEDED, EffectStatus.FAILED, EffectStatus.IN_DOUBT):
        with pytest.raises(InvalidTransition):
            await set_status(store, clock, fence, eff.id, illegal)
    assert await store.get_effect_by_key(eff.key) == eff
    sent = await set_status(store, clock, fence, eff.id, EffectStatus.SENT)
    assert (sent.status, sent.attempts) == (EffectStatus.SENT, 1)
    assert sent.send_deadline == clock.now() + timedelta(seconds=LEASE)
    doubt = await set_status(store, clock, fence, eff.id, EffectStatus.IN_DOUBT, error="timeout")
    assert (doubt.status, doubt.error) == (EffectStatus.IN_DOUBT, "timeout")
    with pytest.raises(EffectMaybeInFlight):
        await set_status(store, clock, fence, eff.id, EffectStatus.SENT)
    assert await store.get_effect_by_key(eff.key) == doubt
    clock.advance(timedelta(seconds=LEASE / 2))
    await store.renew_lease(fence, lease_seconds=LEASE, lease_now=clock.lease_now())
    clock.advance(timedelta(seconds=LEASE / 2 + 1))  # past the deadline, within the lease
    resent = await set_status(store, clock, fence, eff.id, EffectStatus.SENT)
    assert resent.attempts == 2
    assert resent.send_deadline == clock.now() + timedelta(seconds=LEASE / 2 - 1)
    clock.advance(timedelta(seconds=1))
    ok = await set_status(
        store, clock, fence, eff.id, EffectStatus.SUCCEEDED, result={"message_id": "m1"}
    )
    assert (ok.status, ok.result, ok.updated_at) == (
        EffectStatus.SUCCEEDED,
        {"message_id": "m1"},
        clock.now(),
    )
    for illegal in EffectStatus:
        with pytest.raises(InvalidTransition):
            await set_status(store, clock, fence, eff.id, illegal)
    assert await store.get_effect_by_key(eff.key) == ok
    failing = await plan(store, clock, fence, f"{c.task.id}:1:1")
    await set_status(store, clock, fence, failing.id, EffectStatus.SENT)
    failed = await set_status(
        store, clock, fence, failing.id, EffectStatus.FAILED, error="550 no such user"
    )
    assert (failed.status, failed.error) == (EffectStatus.FAILED, "550 no such user")
    with pytest.raises(NotFound):
        await set_status(store, clock, fence, "eff_missing", EffectStatus.SENT)


@pytest.mark.parametrize("how", ["expired_lease", "stale_epoch", "reaped"])
async def test_effect_writes_under_stale_fence(
    store: Store, clock: SimulatedClock, request: pytest.FixtureRequest, how: str
) -> None:
    """A worker that lost its lease (lapsed, re-claimed since, or reaped) cannot move an
    effect nor plan one, not even one whose key already exists: LeaseLost, nothing written."""
    _, c = await _running(store, clock)
    fence = Fence.of(c)
    eff = await plan(store, clock, fence, f"{c.task.id}:1:0")
    if how == "stale_epoch":
        await finish(store, clock, c, Requeue())
        await claim_one(store, clock)
    else:
        clock.advance(timedelta(seconds=LEASE + 1))
        if how == "reaped":
            await store.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now())
    with pytest.raises(LeaseLost):
        await set_status(store, clock, fence, eff.id, EffectStatus.SENT)
    with pytest.raises(LeaseLost):
        await plan(store, clock, fence, f"{c.task.id}:1:1")
    with pytest.raises(LeaseLost):
        await plan(store, clock, fence, eff.key)
    assert [(e.id, e.status, e.attempts) for e in await store.list_effects()] == [
        (eff.id, EffectStatus.PLANNED, 0)
    ]


@pytest.mark.parametrize("applied", [True, False])
async def test_resolve_effect_wakes_waiting_task(
    store: Store, clock: SimulatedClock, request: pytest.FixtureRequest, applied: bool
) -> None:
    """A person resolving an in-doubt effect settles it (applied → succeeded, not applied →
    planned, to be sent again) and wakes the task waiting on that effect, and only that one."""
    ada, c = await _running(store, clock)
    fence = Fence.of(c)
    eff = await plan(store, clock, fence, f"{c.task.id}:1:0")
    for status in (EffectStatus.SENT, EffectStatus.IN_DOUBT):
        await set_status(store, clock, fence, eff.id, status)
    await finish(store, clock, c, Wait(condition=WaitCondition(kind="effect", ref=eff.id)))
    # another task waits on an effect with a different id: it must stay asleep
    other = await new_task(store, clock, ada.id)
    co = await claim_one(store, clock)
    other_eff = await plan(store, clock, Fence.of(co), f"{other.id}:1:0")
    for status in (EffectStatus.SENT, EffectStatus.IN_DOUBT):
        await set_status(store, clock, Fence.of(co), other_eff.id, status)
    await finish(store, clock, co, Wait(condition=WaitCondition(kind="effect", ref=other_eff.id)))

    clock.advance(timedelta(hours=5))
    resolved = await store.resolve_effect(eff.id, applied=applied, now=clock.now())
    assert resolved.status is (EffectStatus.SUCCEEDED if applied else EffectStatus.PLANNED)
    assert resolved.updated_at == clock.now()
    assert (await store.get_task(other.id)).status is TaskStatus.WAITING
    woken = await store.get_task(c.task.id)
    assert woken.status is TaskStatus.PENDING
    c2 = await claim_one(store, clock)
    assert (c2.task.id, c2.wake.to_json()) == (c.task.id, {"reason": "effect", "effect_id": eff.id})
    with pytest.raises(InvalidTransition):
        await store.resolve_effect(eff.id, applied=applied, now=clock.now())
    with pytest.raises(NotFound):
        await store.resolve_effect("eff_missing", applied=True, now=clock.now())


async def test_list_effects_filters(
    store: Store, clock: SimulatedClock, request: pytest.FixtureRequest
) -> None:
    """list_effects filters by task, by status and by the owning person."""
    ada = await new_person(store, clock)
    bob = await new_person(store, clock)
    await new_task(store, clock, ada.id, priority=1)
    await new_task(store, clock, bob.id)
    ca, cb = await claim(store, clock)
    assert ca.task.person_id == ada.id
    ea = await plan(store, clock, Fence.of(ca), f"{ca.task.id}:1:0")
    clock.advance(timedelta(seconds=1))
    eb = await plan(store, clock, Fence.of(cb), f"{cb.task.id}:1:0")
    await set_status(store, clock, Fence.of(cb), eb.id, EffectStatus.SENT)
    assert [e.id for e in await store.list_effects(task_id=ca.task.id)] == [ea.id]
    assert [e.id for e in await store.list_effects(person_id=bob.id)] == [eb.id]
    assert [e.id for e in await store.list_effects(status=EffectStatus.SENT)] == [eb.id]
    assert await store.list_effects(status=EffectStatus.SENT, person_id=ada.id) == []
    assert [e.id for e in await store.list_effects()] == [ea.id, eb.id]
    assert len(await store.list_effects(limit=1)) == 1


# --- events ------------------------------------------------------------------------------


async def test_add_event_dedupes_per_person(store: Store, clock: SimulatedClock) -> None:
    """The same delivery (person, dedupe key) is stored once; the second add reports
    created=False and returns the first copy. Another person's key space is separate."""
    ada = await new_person(store, clock)
    bob = await new_person(store, clock)
    ev, created = await store.add_event(
        person_id=ada.id,
        type="email.received",
        source="imap",
        dedupe_key="msg-1",
        payload={"subject": "hi"},
        now=clock.now(),
    )
    assert created is True
    assert (ev.type, ev.source, ev.payload, ev.received_at, ev.routed_at) == (
        "email.received",
        "imap",
        {"subject": "hi"},
        clock.now(),
        None,
    )
    clock.advance(timedelta(seconds=1))
    again, created = await store.add_event(
        person_id=ada.id,
        type="email.received",
        source="imap",
        dedupe_key="msg-1",
        payload={"subject": "changed"},
        now=clock.now(),
    )
    assert created is False
    assert again == ev
    bobs, created = await store.add_event(
        person_id=bob.id,
        type="email.received",
        source="imap",
        dedupe_key="msg-1",
        payload={},
        now=clock.now(),
    )
    assert created is True
    assert bobs.id != ev.id
    assert [e.id for e in await store.list_events(person_id=ada.id)] == [ev.id]
    assert len(await store.list_events()) == 2
    with pytest.raises(NotFound):
        await store.add_event(
            person_id="per_missing",
            type="x",
            source="s",
            dedupe_key="k",
            payload={},
            now=clock.now(),
        )


async def _wait_for_event(
    store: Store, clock: SimulatedClock, person_id: str, event_type: str, match: dict[str, Any]
) -> Task:
    t = await new_task(store, clock, person_id)
    c = await claim_one(store, clock)
    assert c.task.id == t.id
    cond = WaitCondition(kind="event", event_type=event_type, match=match)
    return await finish(store, clock, c, Wait(condition=cond))


async def test_route_events_wakes_matching_waiters(store: Store, clock: SimulatedClock) -> None:
    """Routing an event wakes the person's tasks waiting on that event type whose match agrees
    with the payload, hands them the event, and leaves the others asleep."""
    ada = await new_person(store, clock)
    bob = await new_person(store, clock)
    hit = await _wait_for_event(store, clock, ada.id, "pr.updated", {"repo": "a"})
    any_pr = await _wait_for_event(store, clock, ada.id, "pr.updated", {})
    miss = await _wait_for_event(store, clock, ada.id, "pr.updated", {"repo": "b"})
    other_type = await _wait_for_event(store, clock, ada.id, "pr.closed", {"repo": "a"})
    other_person = await _wait_for_event(store, clock, bob.id, "pr.updated", {"repo": "a"})
    ev, _ = await store.add_event(
        person_id=ada.id,
        type="pr.updated",
        source="webhook",
        dedupe_key="d1",
        payload={"repo": "a", "n": 7},
        now=clock.now(),
    )
    clock.advance(timedelta(seconds=1))
    assert await store.route_events(now=clock.now()) == 1
    assert (await store.list_events(person_id=ada.id))[0].routed_at == clock.now()
    assert (await store.get_task(hit.id)).status is TaskStatus.PENDING
    assert (await store.get_task(any_pr.id)).status is TaskStatus.PENDING
    for asleep in (miss, other_type, other_person):
        assert (await store.get_task(asleep.id)).status is TaskStatus.WAITING
    assert await store.route_events(now=clock.now()) == 0
    claims = await claim(store, clock)
    assert {c.task.id for c in claims} == {hit.id, any_pr.id}
    for c in claims:
        assert c.activation.reason == "event"
        assert c.wake.to_json() == {
            "reason": "event",
            "event": {
                "id": ev.id,
                "type": "pr.updated",
                "payload": {"repo": "a", "n": 7},
                "received_at": ev.received_at.timestamp(),
            },
        }


async def test_event_wait_registered_after_its_event_wakes_at_once(
    store: Store, clock: SimulatedClock
) -> None:
    """A wait on an event with ``since`` is satisfied by a matching event that arrived after
    that time but before the wait was registered; an older or non-matching event is not."""
    ada = await new_person(store, clock)
    asked_at = clock.now()
    clock.advance(timedelta(seconds=5))
    reply, _ = await store.add_event(
        person_id=ada.id,
        type="chat.reply",
        source="chat",
        dedupe_key="r1",
        payload={"thread": "t1"},
        now=clock.now(),
    )
    await store.route_events(now=clock.now())
    clock.advance(timedelta(seconds=5))

    async def wait(since: datetime, match: dict[str, Any]) -> Task:
        t = await new_task(store, clock, ada.id)
        c = await claim_one(store, clock)
        assert c.task.id == t.id
        cond = WaitCondition(kind="event", event_type="chat.reply", match=match, since=since)
        return await finish(store, clock, c, Wait(condition=cond))

    early = await wait(asked_at, {"thread": "t1"})
    assert early.status is TaskStatus.PENDING
    c = await claim_one(store, clock)
    assert (c.task.id, c.activation.reason) == (early.id, "event")
    assert c.wake.to_json()["event"]["id"] == reply.id
    late = await wait(clock.now(), {"thread": "t1"})
    other = await wait(asked_at, {"thread": "t2"})
    for t in (late, other):
        assert t.status is TaskStatus.WAITING
        assert (await store.get_task(t.id)).status is TaskStatus.WAITING


async def test_route_events_fires_event_trigger_once(
    store: Store, clock: SimulatedClock, request: pytest.FixtureRequest
) -> None:
    """An enabled event trigger whose type and match agree fires once per event: routing
    again, or the same delivery arriving again, creates nothing more; non-matching events and
    disabled triggers create nothing."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    trig = await store.create_trigger(
        make_trigger(
            ada.id,
            clock,
            kind=TriggerKind.EVENT,
            spec="pr.updated",
            goal_id=goal.id,
            match={"repo": "a"},
        )
    )
    off = await store.create_trigger(
        make_trigger(ada.id, clock, kind=TriggerKind.EVENT, spec="pr.updated", enabled=False)
    )

    async def deliver(key: str, payload: dict[str, Any]) -> None:
        await store.add_event(
            person_id=ada.id,
            type="pr.updated",
            source="webhook",
            dedupe_key=key,
            payload=payload,
            now=clock.now(),
        )

    await deliver("d1", {"repo": "a"})
    await deliver("d2", {"repo": "b"})
    assert await store.route_events(now=clock.now()) == 2
    tasks = await store.list_tasks(person_id=ada.id)
    assert len(tasks) == 1
    task = tasks[0]
    assert (task.trigger_id, task.goal_id, task.priority, task.status) == (
        trig.id,
        goal.id,
        3,
        TaskStatus.PENDING,
    )
    assert task.input["from"] == "trigger"
    assert task.input["event"]["payload"] == {"repo": "a"}
    firings = await store.list_firings(trig.id)
    assert [(f.status, f.task_id) for f in firings] == [(FiringStatus.FIRED, task.id)]
    assert await store.list_firings(off.id) == []

    await deliver("d1", {"repo": "a"})  # redelivery of the same event
    assert await store.route_events(now=clock.now()) == 0
    assert len(await store.list_tasks(person_id=ada.id)) == 1
    c = await claim_one(store, clock)
    assert (c.task.id, c.activation.reason) == (task.id, "event")
    await deliver("d3", {"repo": "a"})
    assert await store.route_events(now=clock.now()) == 1
    assert len(await store.list_tasks(person_id=ada.id)) == 2
    assert len(await store.list_firings(trig.id)) == 2


# --- triggers ----------------------------------------------------------------------------


async def test_trigger_create_list_enable_disable(store: Store, clock: SimulatedClock) -> None:
    """Triggers round-trip, list by person and goal, can be disabled (no schedule) and enabled
    again; unknown ids, unknown persons and goals of another person are NotFound."""
    ada = await new_person(store, clock)
    bob = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    bobs_goal = await new_goal(store, clock, bob.id)
    first = make_trigger(ada.id, clock, goal_id=goal.id, next_fire_at=later(clock, 3600))
    created = await store.create_trigger(first)
    assert created == first
    assert await store.get_trigger(first.id) == first
    clock.advance(timedelta(seconds=1))  # lists are in creation order
    loose = await store.create_trigger(
        make_trigger(ada.id, clock, kind=TriggerKind.CRON, spec="0 9 * * *")
    )
    assert [t.id for t in await store.list_triggers(person_id=ada.id)] == [first.id, loose.id]
    assert [t.id for t in await store.list_triggers(goal_id=goal.id)] == [first.id]
    assert await store.list_triggers(person_id=bob.id) == []
    off = await store.set_trigger_enabled(first.id, enabled=False, next_fire_at=None)
    assert (off.enabled, off.next_fire_at) == (False, None)
    assert await store.next_trigger_time() is None
    on = await store.set_trigger_enabled(first.id, enabled=True, next_fire_at=later(clock, 60))
    assert (on.enabled, on.next_fire_at) == (True, later(clock, 60))
    assert await store.next_trigger_time() == later(clock, 60)
    with pytest.raises(NotFound):
        await store.get_trigger("trg_missing")
    with pytest.raises(NotFound):
        await store.set_trigger_enabled("trg_missing", enabled=False, next_fire_at=None)
    with pytest.raises(NotFound):
        await store.create_trigger(make_trigger(ada.id, clock, goal_id=bobs_goal.id))
    with pytest.raises(NotFound):
        await store.create_trigger(make_trigger("per_missing", clock))
    assert len(await store.list_triggers()) == 2


async def test_due_triggers(store: Store, clock: SimulatedClock) -> None:
    """due_triggers returns enabled triggers whose next fire time has come, earliest first,
    and not those disabled, in the future, of a goal that is not active, or without a time."""
    ada = await new_person(store, clock)
    paused_goal = await new_goal(store, clock, ada.id)
    await store.set_goal_status(paused_goal.id, GoalStatus.PAUSED, now=clock.now())
    active_goal = await new_goal(store, clock, ada.id)
    due_late = await store.create_trigger(
        make_trigger(ada.id, clock, next_fire_at=later(clock, -10), goal_id=active_goal.id)
    )
    due_early = await store.create_trigger(
        make_trigger(ada.id, clock, next_fire_at=later(clock, -60))
    )
    at_now = await store.create_trigger(make_trigger(ada.id, clock, next_fire_at=clock.now()))
    await store.create_trigger(make_trigger(ada.id, clock, next_fire_at=later(clock, 1)))
    await store.create_trigger(
        make_trigger(ada.id, clock, next_fire_at=later(clock, -5), enabled=False)
    )
    await store.create_trigger(
        make_trigger(ada.id, clock, next_fire_at=later(clock, -5), goal_id=paused_goal.id)
    )
    await store.create_trigger(make_trigger(ada.id, clock, kind=TriggerKind.EVENT, spec="x"))
    due = await store.due_triggers(now=clock.now())
    assert [t.id for t in due] == [due_early.id, due_late.id, at_now.id]
    assert len(await store.due_triggers(now=clock.now(), limit=1)) == 1


async def test_apply_firings(
    store: Store, clock: SimulatedClock, request: pytest.FixtureRequest
) -> None:
    """apply_firings records fired and missed firings, creates one task per fired firing and
    moves the schedule on; replaying it with the now-stale trigger creates nothing, and even
    with the schedule rewound the deterministic firing ids keep a firing from firing twice."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    t0 = later(clock, -7200)
    t1 = later(clock, -3600)
    trig = await store.create_trigger(make_trigger(ada.id, clock, goal_id=goal.id, next_fire_at=t0))
    plan = [(t0, FiringStatus.MISSED), (t1, FiringStatus.FIRED)]
    nxt = later(clock, 3600)
    created = await store.apply_firings(trig, plan, next_fire_at=nxt, now=clock.now())
    assert len(created) == 1
    task = await store.get_task(created[0])
    assert (task.trigger_id, task.goal_id, task.person_id, task.kind, task.priority) == (
        trig.id,
        goal.id,
        ada.id,
        "noop",
        3,
    )
    assert task.input == {"from": "trigger", "fired_for": t1.isoformat()}
    assert task.run_at == clock.now()
    firings = await store.list_firings(trig.id)
    assert [(f.scheduled_for, f.status, f.task_id) for f in firings] == [
        (t0, FiringStatus.MISSED, None),
        (t1, FiringStatus.FIRED, task.id),
    ]
    assert all(f.recorded_at == clock.now() for f in firings)
    moved = await store.get_trigger(trig.id)
    assert (moved.next_fire_at, moved.last_fire_at) == (nxt, t1)
    assert await store.due_triggers(now=clock.now()) == []
    c = await claim_one(store, clock)
    assert (c.task.id, c.activation.reason) == (task.id, "timer")

    # a second scheduler holding the same (now stale) trigger object
    assert await store.apply_firings(trig, plan, next_fire_at=nxt, now=clock.now()) == []
    # the schedule rewound to the same slot: the firings exist, so nothing fires again
    await store.set_trigger_enabled(trig.id, enabled=True, next_fire_at=t0)
    rewound = await store.get_trigger(trig.id)
    assert await store.apply_firings(rewound, plan, next_fire_at=nxt, now=clock.now()) == []
    assert len(await store.list_tasks(person_id=ada.id)) == 1
    assert len(await store.list_firings(trig.id)) == 2
    # a disabled trigger does not fire
    await store.set_trigger_enabled(trig.id, enabled=False, next_fire_at=None)
    off = await store.get_trigger(trig.id)
    t2 = later(clock, 7200)
    assert (
        await store.apply_firings(off, [(t2, FiringStatus.FIRED)], next_fire_at=None, now=t2) == []
    )
    assert len(await store.list_tasks(person_id=ada.id)) == 1


async def test_apply_firings_last_firing_ends_schedule(
    store: Store, clock: SimulatedClock, request: pytest.FixtureRequest
) -> None:
    """A one-shot trigger's only firing leaves no next fire time."""
    ada = await new_person(store, clock)
    at = clock.now()
    trig = await store.create_trigger(
        make_trigger(ada.id, clock, kind=TriggerKind.AT, spec=at.isoformat(), next_fire_at=at)
    )
    created = await store.apply_firings(
        trig, [(at, FiringStatus.FIRED)], next_fire_at=None, now=clock.now()
    )
    assert len(created) == 1
    done = await store.get_trigger(trig.id)
    assert (done.next_fire_at, done.last_fire_at) == (None, at)
    assert await store.next_trigger_time() is None


# --- leader leases -----------------------------------------------------------------------


async def test_leader_lease(store: Store, clock: SimulatedClock) -> None:
    """One holder at a time: a holder renews at the same epoch, another is refused until
    expiry, a takeover bumps the epoch, and a release lets the next holder in at once."""
    ttl = 10.0

    async def acquire(holder: str) -> int | None:
        return await store.acquire_lease(
            "scheduler", holder=holder, ttl_seconds=ttl, lease_now=clock.lease_now()
        )

    assert await acquire("a") == 1
    clock.advance(timedelta(seconds=5))
    assert await acquire("a") == 1
    assert await acquire("b") is None
    clock.advance(timedelta(seconds=ttl + 1))  # a last renewed ttl + 1 seconds ago
    assert await acquire("b") == 2
    assert await acquire("a") is None
    await store.release_lease("scheduler", holder="a")  # not the holder: no effect
    assert await acquire("a") is None
    await store.release_lease("scheduler", holder="b")
    assert await acquire("a") == 3
    assert (
        await store.acquire_lease("other", holder="b", ttl_seconds=ttl, lease_now=clock.lease_now())
        == 1
    )


async def test_leader_lease_valid_until_expiry(store: Store, clock: SimulatedClock) -> None:
    """A lease is held through its ttl and free just after."""
    assert await store.acquire_lease("l", holder="a", ttl_seconds=10, lease_now=clock.now()) == 1
    assert (
        await store.acquire_lease("l", holder="b", ttl_seconds=10, lease_now=later(clock, 9))
        is None
    )
    assert (
        await store.acquire_lease("l", holder="b", ttl_seconds=10, lease_now=later(clock, 11)) == 2
    )


# --- history -----------------------------------------------------------------------------


async def test_prune_history(store: Store, clock: SimulatedClock) -> None:
    """Pruning deletes tasks that ended before the cutoff with their steps and activations,
    and old routed events, firings and feed entries; live tasks (with their journal),
    recently ended tasks, unrouted events, goals, goal records and triggers stay."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    old = await new_task(store, clock, ada.id, goal_id=goal.id, priority=9)
    c = await claim_one(store, clock)
    await checkpoint(store, clock, Fence.of(c), 1, {})
    await store.write_goal(
        goal.id,
        now=clock.now(),
        record=("result", {"r": 1}),
        fence=Fence.of(c),
        lease_now=clock.lease_now(),
    )
    await finish(store, clock, c, Succeed(), steps=1)
    live = await new_task(store, clock, ada.id, goal_id=goal.id, priority=5)
    cl = await claim_one(store, clock)
    await checkpoint(store, clock, Fence.of(cl), 1, {})
    await finish(store, clock, cl, Wait(condition=WaitCondition(kind="input")))
    trig = await store.create_trigger(make_trigger(ada.id, clock, next_fire_at=clock.now()))
    await store.apply_firings(
        trig, [(clock.now(), FiringStatus.MISSED)], next_fire_at=later(clock, 60), now=clock.now()
    )
    await store.add_event(
        person_id=ada.id, type="x", source="s", dedupe_key="old", payload={}, now=clock.now()
    )
    await store.route_events(now=clock.now())

    clock.advance(timedelta(days=30))
    recent = await new_task(store, clock, ada.id)
    await store.request_control(recent.id, "cancel", now=clock.now())
    unrouted, _ = await store.add_event(
        person_id=ada.id, type="y", source="s", dedupe_key="new", payload={}, now=clock.now()
    )
    cutoff = clock.now() - timedelta(days=1)
    feed = await store.feed_since(person_id=ada.id)
    counts = await store.prune_history(before=cutoff)
    assert counts == {
        "steps": 1,
        "effects": 0,
        "activations": 1,
        "tasks": 1,
        "events": 1,
        "firings": 1,
        "feed entries": sum(1 for e in feed if e.at < cutoff),
    }
    # what happened since the cutoff stays in the feed, and its seqs do not change
    assert await store.feed_since(person_id=ada.id) == [e for e in feed if e.at >= cutoff]
    assert [e.kind for e in await store.feed_since(person_id=ada.id)] == [
        "task.created",
        "task.cancel",
    ]
    with pytest.raises(NotFound):
        await store.get_task(old.id)
    assert await store.list_steps(old.id) == []
    assert await store.list_activations(task_id=old.id) == []
    assert (await store.get_task(live.id)).status is TaskStatus.WAITING
    assert [s.seq for s in await store.list_steps(live.id)] == [1]
    assert len(await store.list_activations(task_id=live.id)) == 1
    assert (await store.get_task(recent.id)).status is TaskStatus.CANCELLED
    assert [e.id for e in await store.list_events()] == [unrouted.id]
    assert (await store.get_goal(goal.id)).status is GoalStatus.ACTIVE
    assert [r.task_id for r in await store.list_goal_records(goal.id)] == [old.id]
    assert (await store.get_trigger(trig.id)).enabled
    assert await store.list_firings(trig.id) == []
    assert await store.prune_history(before=cutoff) == dict.fromkeys(counts, 0)


async def test_prune_history_deletes_effects_of_finished_tasks(
    store: Store, clock: SimulatedClock, request: pytest.FixtureRequest
) -> None:
    """Pruning deletes the effect journal of old finished tasks and keeps a live task's."""
    ada = await new_person(store, clock)
    old = await new_task(store, clock, ada.id, priority=9)
    c = await claim_one(store, clock)
    await plan(store, clock, Fence.of(c), f"{old.id}:1:0")
    await finish(store, clock, c, Succeed())
    live = await new_task(store, clock, ada.id)
    cl = await claim_one(store, clock)
    kept = await plan(store, clock, Fence.of(cl), f"{live.id}:1:0")
    clock.advance(timedelta(days=2))
    counts = await store.prune_history(before=clock.now() - timedelta(days=1))
    assert (counts["effects"], counts["tasks"]) == (1, 1)
    assert await store.list_effects() == [kept]


async def test_recent_audit_reads_newest_first(store: Store, clock: SimulatedClock) -> None:
    """The newest entries first, one person's or everyone's, before a seq and up to a limit: the
    same entries the oldest-first read returns, in the other order."""
    ada = await new_person(store, clock)
    bob = await new_person(store, clock)
    for n in range(5):
        for who in (ada, bob):
            await store.append_audit(
                person_id=who.id, kind="test", actor="t", data={"n": n}, now=clock.now()
            )
            clock.advance(timedelta(seconds=1))
    everyone = await store.list_audit(limit=1000)
    adas = await store.list_audit(person_id=ada.id, limit=1000)
    assert await store.list_recent_audit(limit=1000) == everyone[::-1]
    assert await store.list_recent_audit(person_id=ada.id, limit=1000) == adas[::-1]
    newest = await store.list_recent_audit(person_id=ada.id, limit=2)
    assert [e.data["n"] for e in newest] == [4, 3]
    older = await store.list_recent_audit(person_id=ada.id, before_seq=newest[-1].seq, limit=2)
    assert [e.data["n"] for e in older] == [2, 1]
    assert {e.person_id for e in older} == {ada.id}
    first = await store.list_recent_audit(before_seq=everyone[0].seq, limit=10)
    assert first == []
    assert await store.list_recent_audit(person_id="per_missing") == []


async def test_mark_read_is_the_persons_own(store: Store, clock: SimulatedClock) -> None:
    """Marking read is idempotent; an unknown id, or another person's with ``person_id``, is
    NotFound and changes nothing."""
    ada = await new_person(store, clock)
    bob = await new_person(store, clock)
    ids = {}
    for who in (ada, bob):
        ids[who.id] = new_id("ntf")
        await store.notify(
            Notification(
                id=ids[who.id],
                person_id=who.id,
                kind="info",
                title="hello",
                body="",
                created_at=clock.now(),
            )
        )
    for missing, mine in (("ntf_missing", None), ("ntf_missing", ada.id), (ids[bob.id], ada.id)):
        with pytest.raises(NotFound):
            await store.mark_read(missing, now=clock.now(), person_id=mine)
    assert [n.read_at for n in await store.list_notifications(person_id=bob.id)] == [None]
    await store.mark_read(ids[ada.id], now=clock.now(), person_id=ada.id)
    clock.advance(timedelta(minutes=1))
    await store.mark_read(ids[ada.id], now=clock.now(), person_id=ada.id)  # again: unchanged
    [read] = await store.list_notifications(person_id=ada.id)
    assert read.read_at == clock.now() - timedelta(minutes=1)
