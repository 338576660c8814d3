"""Heartbeat and budget SQL on both backends: an event flood against a budgeted event trigger
stops at the budget with one notice; events a waiting task took are not the heartbeat's; a
follow-up set twice by a replayed step is stored once and consumed once."""

from __future__ import annotations

from datetime import timedelta

import pytest

from steward.domain import (
    FiringStatus,
    GoalStatus,
    TaskSpec,
    TaskStatus,
    TriggerKind,
    WaitCondition,
)
from steward.domain.clock import SimulatedClock
from steward.domain.followup import FollowUp
from steward.domain.outcome import Fail, Succeed, Wait
from steward.domain.trigger import TriggerBudget
from steward.errors import TooMany
from steward.runtime.scheduler import Scheduler
from steward.service import Service
from steward.store import Store
from steward.store.heartbeats import MAX_FOLLOW_UPS_PER_TASK
from steward.testing.store_conformance.helpers import claim_one, finish
from support.clock import START


async def test_an_event_flood_stops_at_the_trigger_budget_with_one_notice(store: Store) -> None:
    clock = SimulatedClock(START)
    service = Service(store, clock)
    person = await service.ensure_person()
    flood = await service.add_trigger(
        person_id=person.id,
        kind=TriggerKind.EVENT,
        spec="price.changed",
        name="Price alert",
        task=TaskSpec(kind="noop"),
        budget=TriggerBudget(runs=5),
    )
    for n in range(300):
        await store.schedule.add_event(
            person_id=person.id,
            type="price.changed",
            source="test",
            dedupe_key=f"p{n}",
            payload={"n": n},
            now=clock.now(),
        )
    routed = 0
    while batch := await store.schedule.route_events(now=clock.now()):
        routed += batch
    assert routed == 300

    firings = await store.schedule.list_firings(flood.id)
    assert [f.status for f in firings].count(FiringStatus.FIRED) == 5
    assert [f.status for f in firings].count(FiringStatus.PAUSED) == 1  # then no more records
    assert len(await store.tasks.list_tasks(person_id=person.id)) == 5
    [notice] = await store.inbox.list_notifications(person_id=person.id)
    assert notice.title == "'Price alert' stopped for today: it used its 5 runs."
    # and a report, written with the pause: the goal's policy decides when it reaches them
    [report] = await store.reports.list_for(person.id)
    assert (report.what, report.importance, report.origin) == (
        "'Price alert' stopped for today: it used its 5 runs",
        "actionable",
        "runtime",
    )

    clock.advance(timedelta(days=1))  # a new day: it fires again, up to its budget
    await store.schedule.add_event(
        person_id=person.id,
        type="price.changed",
        source="test",
        dedupe_key="next-day",
        payload={},
        now=clock.now(),
    )
    await store.schedule.route_events(now=clock.now())
    assert len(await store.tasks.list_tasks(person_id=person.id)) == 6
    assert (await store.schedule.get_trigger(flood.id)).paused_until is None


async def test_an_event_a_waiting_task_took_is_not_the_heartbeats(store: Store) -> None:
    clock = SimulatedClock(START)
    service = Service(store, clock)
    person = await service.ensure_person()
    goal = await service.create_goal(person_id=person.id, title="Reply to Ana")
    await service.add_trigger(
        person_id=person.id,
        goal_id=goal.id,
        kind=TriggerKind.HEARTBEAT,
        spec="60",
        task=TaskSpec(kind="noop"),
        watch=["mail.*"],
    )
    waiter = await service.create_task(
        person_id=person.id, goal_id=goal.id, spec=TaskSpec(kind="noop")
    )
    claim = await claim_one(store, clock)
    assert claim.task.id == waiter.id
    condition = WaitCondition(kind="event", event_type="mail.received")
    await finish(store, clock, claim, Wait(condition=condition))
    await service.send_event(person_id=person.id, type="mail.received", dedupe_key="m1")
    await service.send_event(
        person_id=person.id, type="mail.bounced", payload={"to": "ana"}, dedupe_key="m2"
    )
    scheduler = Scheduler(store, clock)
    await scheduler.tick()  # routes both: the waiter takes the first
    clock.advance(timedelta(seconds=60))
    await scheduler.tick()  # the beat

    [task] = [t for t in await store.tasks.list_tasks(goal_id=goal.id) if t.trigger_id]
    assert [e["type"] for e in task.input["event"]["events"]] == ["mail.bounced"]
    assert (await store.tasks.get_task(waiter.id)).status is TaskStatus.PENDING  # it woke


async def test_a_follow_up_is_stored_once_and_consumed_once(store: Store) -> None:
    clock = SimulatedClock(START)
    service = Service(store, clock)
    person = await service.ensure_person()
    goal = await service.create_goal(person_id=person.id, title="The quote")
    beat = await service.add_trigger(
        person_id=person.id,
        goal_id=goal.id,
        kind=TriggerKind.HEARTBEAT,
        spec="60",
        task=TaskSpec(kind="noop"),
    )
    follow_up = FollowUp(
        id="fup_replayed",
        person_id=person.id,
        goal_id=goal.id,
        task_id=None,
        due_at=START + timedelta(seconds=30),
        note="the quote",
        created_at=START,
    )
    await store.heartbeats.add_follow_up(follow_up)
    await store.heartbeats.add_follow_up(follow_up)  # a replayed step
    assert len(await store.heartbeats.list_follow_ups(goal.id)) == 1

    scheduler = Scheduler(store, clock)
    for _ in range(3):
        clock.advance(timedelta(seconds=60))
        await scheduler.tick()
    [task] = await store.tasks.list_tasks(goal_id=goal.id)
    assert task.trigger_id == beat.id
    [done] = await store.heartbeats.list_follow_ups(goal.id)
    assert done.done_task_id == task.id
    assert await store.heartbeats.list_follow_ups(goal.id, pending=True) == []
    assert (await store.schedule.get_trigger(beat.id)).idle_beats == 2


async def test_a_paused_goals_trigger_does_not_keep_the_scheduler_awake(store: Store) -> None:
    """A due trigger of a paused goal is not fired, so it is not the scheduler's next time
    either (it used to be: the scheduler woke for it at once, again and again)."""
    clock = SimulatedClock(START)
    service = Service(store, clock)
    person = await service.ensure_person()
    goal = await service.create_goal(person_id=person.id, title="The quote")
    await service.add_trigger(
        person_id=person.id,
        goal_id=goal.id,
        kind=TriggerKind.INTERVAL,
        spec="60",
        task=TaskSpec(kind="noop"),
    )
    assert await store.schedule.next_trigger_time() == START + timedelta(seconds=60)
    await store.goals.set_goal_status(goal.id, GoalStatus.PAUSED, now=clock.now())
    clock.advance(timedelta(minutes=5))
    assert await store.schedule.due_triggers(now=clock.now()) == []
    assert await store.schedule.next_trigger_time() is None


async def test_a_heartbeat_switched_back_on_does_not_start_on_old_events(store: Store) -> None:
    clock = SimulatedClock(START)
    service = Service(store, clock)
    person = await service.ensure_person()
    goal = await service.create_goal(person_id=person.id, title="Reply to Ana")
    beat = await service.add_trigger(
        person_id=person.id,
        goal_id=goal.id,
        kind=TriggerKind.HEARTBEAT,
        spec="60",
        task=TaskSpec(kind="noop"),
        watch=["mail.*"],
    )
    await service.set_trigger_enabled(beat.id, False)
    await service.send_event(person_id=person.id, type="mail.received", dedupe_key="old")
    scheduler = Scheduler(store, clock)
    await scheduler.tick()  # routed while the heartbeat is off
    clock.advance(timedelta(days=30))
    await service.set_trigger_enabled(beat.id, True)
    clock.advance(timedelta(seconds=60))
    await scheduler.tick()
    assert await store.tasks.list_tasks(goal_id=goal.id) == []
    [report] = await service.trigger_reports(person_id=person.id)
    assert report.checks.startswith("1 check found nothing")
    assert report.today == "0 runs, 0 tokens, $0.00"


async def test_an_event_a_task_took_as_it_went_to_sleep_is_not_the_heartbeats(
    store: Store,
) -> None:
    """The reply came while the task was still running (routed, nobody waiting); the task then
    waits for it and takes it at once. The heartbeat does not hand it over a second time."""
    clock = SimulatedClock(START)
    service = Service(store, clock)
    person = await service.ensure_person()
    goal = await service.create_goal(person_id=person.id, title="Reply to Ana")
    await service.add_trigger(
        person_id=person.id,
        goal_id=goal.id,
        kind=TriggerKind.HEARTBEAT,
        spec="60",
        task=TaskSpec(kind="noop"),
        watch=["mail.*"],
    )
    waiter = await service.create_task(
        person_id=person.id, goal_id=goal.id, spec=TaskSpec(kind="noop")
    )
    claim = await claim_one(store, clock)
    assert claim.task.id == waiter.id
    await service.send_event(person_id=person.id, type="mail.received", dedupe_key="m1")
    scheduler = Scheduler(store, clock)
    await scheduler.tick()  # routed: nobody waits for it yet
    condition = WaitCondition(kind="event", event_type="mail.received", since=START)
    await finish(store, clock, claim, Wait(condition=condition))
    assert (await store.tasks.get_task(waiter.id)).status is TaskStatus.PENDING  # took it
    clock.advance(timedelta(seconds=60))
    await scheduler.tick()  # the beat
    assert [t.id for t in await store.tasks.list_tasks(goal_id=goal.id)] == [waiter.id]


async def test_a_follow_up_handed_to_a_task_that_failed_is_handed_over_again(
    store: Store,
) -> None:
    clock = SimulatedClock(START)
    service = Service(store, clock)
    person = await service.ensure_person()
    goal = await service.create_goal(person_id=person.id, title="The quote")
    await service.add_trigger(
        person_id=person.id,
        goal_id=goal.id,
        kind=TriggerKind.HEARTBEAT,
        spec="60",
        task=TaskSpec(kind="noop"),
    )
    await store.heartbeats.add_follow_up(
        FollowUp(
            id="fup_quote",
            person_id=person.id,
            goal_id=goal.id,
            task_id=None,
            due_at=START + timedelta(seconds=30),
            note="the quote",
            created_at=START,
        )
    )
    scheduler = Scheduler(store, clock)
    clock.advance(timedelta(seconds=60))
    await scheduler.tick()
    claim = await claim_one(store, clock)
    await finish(store, clock, claim, Fail(reason="the model was down"))
    assert [f.id for f in await store.heartbeats.list_follow_ups(goal.id, pending=True)] == [
        "fup_quote"
    ]
    clock.advance(timedelta(seconds=60))
    await scheduler.tick()
    again = await claim_one(store, clock)
    assert again.task.id != claim.task.id
    assert [f["note"] for f in again.task.input["event"]["follow_ups"]] == ["the quote"]
    await finish(store, clock, again, Succeed(result="called"))
    assert await store.heartbeats.list_follow_ups(goal.id, pending=True) == []


async def test_a_task_sets_at_most_twenty_follow_ups(store: Store) -> None:
    clock = SimulatedClock(START)
    service = Service(store, clock)
    person = await service.ensure_person()
    goal = await service.create_goal(person_id=person.id, title="The quote")
    task = await service.create_task(
        person_id=person.id, goal_id=goal.id, spec=TaskSpec(kind="noop")
    )

    def follow_up(n: int) -> FollowUp:
        return FollowUp(
            id=f"fup_{task.id}.1.{n}",
            person_id=person.id,
            goal_id=goal.id,
            task_id=task.id,
            due_at=START + timedelta(days=1),
            note=f"look {n}",
            created_at=START,
        )

    for n in range(MAX_FOLLOW_UPS_PER_TASK):
        await store.heartbeats.add_follow_up(follow_up(n))
    await store.heartbeats.add_follow_up(follow_up(0))  # a replay is not one more
    with pytest.raises(TooMany, match="at most 20 follow-ups"):
        await store.heartbeats.add_follow_up(follow_up(MAX_FOLLOW_UPS_PER_TASK))
    assert len(await store.heartbeats.list_follow_ups(goal.id)) == MAX_FOLLOW_UPS_PER_TASK
