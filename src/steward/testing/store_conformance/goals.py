"""Store conformance: persons and goals (status transitions, fenced writes of goal state)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from steward.domain import (
    Budget,
    GoalStatus,
    TaskStatus,
    WaitCondition,
)
from steward.domain.clock import SimulatedClock
from steward.domain.outcome import Requeue, Stop, Wait
from steward.errors import InvalidTransition, LeaseLost, NotFound
from steward.store import Fence, Store
from steward.testing.store_conformance.helpers import (
    LEASE,
    checkpoint,
    claim_one,
    finish,
    later,
    make_trigger,
    new_goal,
    new_person,
    new_task,
)

# --- persons and goals -------------------------------------------------------------------


async def test_person_create_get_list(store: Store, clock: SimulatedClock) -> None:
    """Persons round-trip every field, list in creation order, and unknown ids are NotFound."""
    ada = await store.persons.create_person(
        name="Ada", now=clock.now(), max_concurrency=2, timezone="Europe/Paris"
    )
    clock.advance(timedelta(seconds=1))
    bob = await store.persons.create_person(name="Bob", now=clock.now(), person_id="per_bob")
    assert bob.id == "per_bob"
    got = await store.persons.get_person(ada.id)
    assert got == ada
    assert (got.name, got.max_concurrency, got.timezone) == ("Ada", 2, "Europe/Paris")
    assert got.created_at == clock.now() - timedelta(seconds=1)
    assert [p.id for p in await store.persons.list_persons()] == [ada.id, bob.id]
    with pytest.raises(NotFound):
        await store.persons.get_person("per_missing")


async def test_goal_create_get_list(store: Store, clock: SimulatedClock) -> None:
    """A goal stores its scope, deadline, policy, sources and budget; lists filter by person
    and status; unknown goals and unknown owners are NotFound."""
    ada = await new_person(store, clock)
    bob = await new_person(store, clock)
    deadline = later(clock, 28 * 86400)
    goal = await store.goals.create_goal(
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
    got = await store.goals.get_goal(goal.id)
    assert got == goal
    assert got.status is GoalStatus.ACTIVE
    assert got.deadline == deadline
    assert got.constraints == ["read only in #payments"]
    assert got.sources == ["slack:#payments"]
    assert got.budget == Budget(max_activations=50, max_cost_usd=2.5)
    assert got.state == {}
    other = await new_goal(store, clock, bob.id)
    paused = await new_goal(store, clock, ada.id)
    await store.goals.set_goal_status(paused.id, GoalStatus.PAUSED, now=clock.now())
    assert {g.id for g in await store.goals.list_goals(person_id=ada.id)} == {goal.id, paused.id}
    assert [g.id for g in await store.goals.list_goals(status=[GoalStatus.PAUSED])] == [paused.id]
    assert {g.id for g in await store.goals.list_goals()} == {goal.id, paused.id, other.id}
    with pytest.raises(NotFound):
        await store.goals.get_goal("gol_missing")
    with pytest.raises(NotFound):
        await store.goals.create_goal(person_id="per_missing", title="x", now=clock.now())
    assert len(await store.goals.list_goals()) == 3


async def test_goal_status_transitions(store: Store, clock: SimulatedClock) -> None:
    """Goals move active ⇄ paused → completed; an illegal move raises InvalidTransition and
    leaves the goal exactly as it was."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    clock.advance(timedelta(minutes=1))
    paused = await store.goals.set_goal_status(goal.id, GoalStatus.PAUSED, now=clock.now())
    assert paused.status is GoalStatus.PAUSED
    assert paused.updated_at == clock.now()
    with pytest.raises(InvalidTransition):
        await store.goals.set_goal_status(goal.id, GoalStatus.COMPLETED, now=clock.now())
    active = await store.goals.set_goal_status(goal.id, GoalStatus.ACTIVE, now=clock.now())
    assert active.status is GoalStatus.ACTIVE
    with pytest.raises(InvalidTransition):
        await store.goals.set_goal_status(goal.id, GoalStatus.ACTIVE, now=clock.now())
    done = await store.goals.set_goal_status(goal.id, GoalStatus.COMPLETED, now=clock.now())
    clock.advance(timedelta(minutes=1))
    for illegal in (GoalStatus.ACTIVE, GoalStatus.PAUSED, GoalStatus.CANCELLED):
        with pytest.raises(InvalidTransition):
            await store.goals.set_goal_status(goal.id, illegal, now=clock.now())
    assert await store.goals.get_goal(goal.id) == done
    with pytest.raises(NotFound):
        await store.goals.set_goal_status("gol_missing", GoalStatus.PAUSED, now=clock.now())


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
    await store.tasks.request_control(paused.id, "pause", now=clock.now())
    bystander = await new_task(store, clock, ada.id, goal_id=other.id)
    trig = await store.schedule.create_trigger(
        make_trigger(ada.id, clock, goal_id=goal.id, next_fire_at=later(clock, 60))
    )
    other_trig = await store.schedule.create_trigger(
        make_trigger(ada.id, clock, goal_id=other.id, next_fire_at=later(clock, 60))
    )

    clock.advance(timedelta(seconds=5))
    ended = await store.goals.set_goal_status(goal.id, GoalStatus.CANCELLED, now=clock.now())
    assert ended.status is GoalStatus.CANCELLED
    for tid in (waiting.id, pending.id, paused.id):
        t = await store.tasks.get_task(tid)
        assert t.status is TaskStatus.CANCELLED
        assert t.finished_at == clock.now()
    still = await store.tasks.get_task(running.id)
    assert still.status is TaskStatus.RUNNING
    control = await store.tasks.renew_lease(
        Fence.of(c), lease_seconds=LEASE, lease_now=clock.lease_now()
    )
    assert control == "cancel"
    assert await checkpoint(store, clock, Fence.of(c), 1, {}) == "cancel"
    t = await finish(store, clock, c, Stop(control="cancel"), steps=1)
    assert t.status is TaskStatus.CANCELLED
    disabled = await store.schedule.get_trigger(trig.id)
    assert (disabled.enabled, disabled.next_fire_at) == (False, None)
    assert (await store.schedule.get_trigger(other_trig.id)).enabled
    assert (await store.tasks.get_task(bystander.id)).status is TaskStatus.PENDING


async def test_write_goal_merges_state_and_appends_records(
    store: Store, clock: SimulatedClock
) -> None:
    """write_goal merges state keys (latest value wins) and appends records in order, tagged
    with the writing task when written under a fence."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    g = await store.goals.write_goal(goal.id, now=clock.now(), state={"seen": 1, "last": "a"})
    assert g.state == {"seen": 1, "last": "a"}
    await store.goals.write_goal(goal.id, now=clock.now(), record=("note", {"text": "by hand"}))
    task = await new_task(store, clock, ada.id, goal_id=goal.id)
    c = await claim_one(store, clock)
    clock.advance(timedelta(seconds=1))
    g = await store.goals.write_goal(
        goal.id,
        now=clock.now(),
        state={"seen": 2, "extra": [1, 2]},
        record=("result", {"verdict": "valid"}),
        fence=Fence.of(c),
        lease_now=clock.lease_now(),
    )
    assert g.state == {"seen": 2, "last": "a", "extra": [1, 2]}
    assert g.updated_at == clock.now()
    assert (await store.goals.get_goal(goal.id)).state == g.state
    records = await store.goals.list_goal_records(goal.id)
    assert [(r.kind, r.content, r.task_id) for r in records] == [
        ("note", {"text": "by hand"}, None),
        ("result", {"verdict": "valid"}, task.id),
    ]
    assert records[0].id < records[1].id
    with pytest.raises(NotFound):
        await store.goals.write_goal("gol_missing", now=clock.now(), state={"x": 1})


@pytest.mark.parametrize("how", ["expired_lease", "stale_epoch"])
async def test_write_goal_with_stale_fence_writes_nothing(
    store: Store, clock: SimulatedClock, how: str
) -> None:
    """A worker whose lease lapsed, or whose task was claimed again since, cannot write into
    the goal: LeaseLost, and neither state nor records change."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    await store.goals.write_goal(goal.id, now=clock.now(), state={"k": "original"})
    await new_task(store, clock, ada.id, goal_id=goal.id)
    c = await claim_one(store, clock)
    if how == "expired_lease":
        clock.advance(timedelta(seconds=LEASE + 1))
    else:
        await finish(store, clock, c, Requeue())
        again = await claim_one(store, clock)
        assert again.epoch == c.epoch + 1
    with pytest.raises(LeaseLost):
        await store.goals.write_goal(
            goal.id,
            now=clock.now(),
            state={"k": "zombie"},
            record=("evidence", {"x": 1}),
            fence=Fence.of(c),
            lease_now=clock.lease_now(),
        )
    assert (await store.goals.get_goal(goal.id)).state == {"k": "original"}
    assert await store.goals.list_goal_records(goal.id) == []


async def test_expire_goals_by_deadline(store: Store, clock: SimulatedClock) -> None:
    """expire_goals expires live goals (active or paused) whose deadline has passed, cancels
    their idle tasks, and leaves goals without a deadline, with a later one, or already ended."""
    ada = await new_person(store, clock)
    due = await new_goal(store, clock, ada.id, deadline=later(clock, 60))
    due_paused = await new_goal(store, clock, ada.id, deadline=later(clock, 30))
    await store.goals.set_goal_status(due_paused.id, GoalStatus.PAUSED, now=clock.now())
    future = await new_goal(store, clock, ada.id, deadline=later(clock, 3600))
    open_ended = await new_goal(store, clock, ada.id)
    done = await new_goal(store, clock, ada.id, deadline=later(clock, 10))
    await store.goals.set_goal_status(done.id, GoalStatus.COMPLETED, now=clock.now())
    task = await new_task(store, clock, ada.id, goal_id=due.id)
    assert await store.goals.next_deadline() == later(clock, 30)

    assert await store.goals.expire_goals(now=later(clock, 59)) == [due_paused.id]
    clock.advance(timedelta(seconds=60))
    assert await store.goals.expire_goals(now=clock.now()) == [due.id]
    assert (await store.goals.get_goal(due.id)).status is GoalStatus.EXPIRED
    assert (await store.goals.get_goal(due_paused.id)).status is GoalStatus.EXPIRED
    assert (await store.goals.get_goal(future.id)).status is GoalStatus.ACTIVE
    assert (await store.goals.get_goal(open_ended.id)).status is GoalStatus.ACTIVE
    assert (await store.goals.get_goal(done.id)).status is GoalStatus.COMPLETED
    expired_task = await store.tasks.get_task(task.id)
    assert expired_task.status is TaskStatus.CANCELLED
    assert await store.goals.expire_goals(now=clock.now()) == []
    assert await store.goals.next_deadline() == future.deadline
