"""Store conformance: events, triggers, firings and the leader lease."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from steward.domain import (
    FiringStatus,
    GoalStatus,
    Task,
    TaskStatus,
    TriggerKind,
    WaitCondition,
)
from steward.domain.clock import SimulatedClock
from steward.domain.outcome import Wait
from steward.errors import NotFound
from steward.store import Store
from steward.testing.store_conformance.helpers import (
    claim,
    claim_one,
    finish,
    later,
    make_trigger,
    new_goal,
    new_person,
    new_task,
)

# --- events ------------------------------------------------------------------------------


async def test_add_event_dedupes_per_person(store: Store, clock: SimulatedClock) -> None:
    """The same delivery (person, dedupe key) is stored once; the second add reports
    created=False and returns the first copy. Another person's key space is separate."""
    ada = await new_person(store, clock)
    bob = await new_person(store, clock)
    ev, created = await store.schedule.add_event(
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
    again, created = await store.schedule.add_event(
        person_id=ada.id,
        type="email.received",
        source="imap",
        dedupe_key="msg-1",
        payload={"subject": "changed"},
        now=clock.now(),
    )
    assert created is False
    assert again == ev
    bobs, created = await store.schedule.add_event(
        person_id=bob.id,
        type="email.received",
        source="imap",
        dedupe_key="msg-1",
        payload={},
        now=clock.now(),
    )
    assert created is True
    assert bobs.id != ev.id
    assert [e.id for e in await store.schedule.list_events(person_id=ada.id)] == [ev.id]
    assert len(await store.schedule.list_events()) == 2
    with pytest.raises(NotFound):
        await store.schedule.add_event(
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
    ev, _ = await store.schedule.add_event(
        person_id=ada.id,
        type="pr.updated",
        source="webhook",
        dedupe_key="d1",
        payload={"repo": "a", "n": 7},
        now=clock.now(),
    )
    clock.advance(timedelta(seconds=1))
    assert await store.schedule.route_events(now=clock.now()) == 1
    assert (await store.schedule.list_events(person_id=ada.id))[0].routed_at == clock.now()
    assert (await store.tasks.get_task(hit.id)).status is TaskStatus.PENDING
    assert (await store.tasks.get_task(any_pr.id)).status is TaskStatus.PENDING
    for asleep in (miss, other_type, other_person):
        assert (await store.tasks.get_task(asleep.id)).status is TaskStatus.WAITING
    assert await store.schedule.route_events(now=clock.now()) == 0
    claims = await claim(store, clock)
    assert {c.task.id for c in claims} == {hit.id, any_pr.id}
    for c in claims:
        assert c.activation.reason == "event"
        assert c.wake.to_json() == {
            "reason": "event",
            "event": {
                "id": ev.id,
                "type": "pr.updated",
                "source": "webhook",
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
    reply, _ = await store.schedule.add_event(
        person_id=ada.id,
        type="chat.reply",
        source="chat",
        dedupe_key="r1",
        payload={"thread": "t1"},
        now=clock.now(),
    )
    await store.schedule.route_events(now=clock.now())
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
        assert (await store.tasks.get_task(t.id)).status is TaskStatus.WAITING


async def test_route_events_fires_event_trigger_once(
    store: Store, clock: SimulatedClock, request: pytest.FixtureRequest
) -> None:
    """An enabled event trigger whose type and match agree fires once per event: routing
    again, or the same delivery arriving again, creates nothing more; non-matching events and
    disabled triggers create nothing."""
    ada = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    trig = await store.schedule.create_trigger(
        make_trigger(
            ada.id,
            clock,
            kind=TriggerKind.EVENT,
            spec="pr.updated",
            goal_id=goal.id,
            match={"repo": "a"},
        )
    )
    off = await store.schedule.create_trigger(
        make_trigger(ada.id, clock, kind=TriggerKind.EVENT, spec="pr.updated", enabled=False)
    )

    async def deliver(key: str, payload: dict[str, Any]) -> None:
        await store.schedule.add_event(
            person_id=ada.id,
            type="pr.updated",
            source="webhook",
            dedupe_key=key,
            payload=payload,
            now=clock.now(),
        )

    await deliver("d1", {"repo": "a"})
    await deliver("d2", {"repo": "b"})
    assert await store.schedule.route_events(now=clock.now()) == 2
    tasks = await store.tasks.list_tasks(person_id=ada.id)
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
    firings = await store.schedule.list_firings(trig.id)
    assert [(f.status, f.task_id) for f in firings] == [(FiringStatus.FIRED, task.id)]
    assert await store.schedule.list_firings(off.id) == []

    await deliver("d1", {"repo": "a"})  # redelivery of the same event
    assert await store.schedule.route_events(now=clock.now()) == 0
    assert len(await store.tasks.list_tasks(person_id=ada.id)) == 1
    c = await claim_one(store, clock)
    assert (c.task.id, c.activation.reason) == (task.id, "event")
    await deliver("d3", {"repo": "a"})
    assert await store.schedule.route_events(now=clock.now()) == 1
    assert len(await store.tasks.list_tasks(person_id=ada.id)) == 2
    assert len(await store.schedule.list_firings(trig.id)) == 2


# --- triggers ----------------------------------------------------------------------------


async def test_trigger_create_list_enable_disable(store: Store, clock: SimulatedClock) -> None:
    """Triggers round-trip, list by person and goal, can be disabled (no schedule) and enabled
    again; unknown ids, unknown persons and goals of another person are NotFound."""
    ada = await new_person(store, clock)
    bob = await new_person(store, clock)
    goal = await new_goal(store, clock, ada.id)
    bobs_goal = await new_goal(store, clock, bob.id)
    first = make_trigger(ada.id, clock, goal_id=goal.id, next_fire_at=later(clock, 3600))
    created = await store.schedule.create_trigger(first)
    assert created == first
    assert await store.schedule.get_trigger(first.id) == first
    clock.advance(timedelta(seconds=1))  # lists are in creation order
    loose = await store.schedule.create_trigger(
        make_trigger(ada.id, clock, kind=TriggerKind.CRON, spec="0 9 * * *")
    )
    assert [t.id for t in await store.schedule.list_triggers(person_id=ada.id)] == [
        first.id,
        loose.id,
    ]
    assert [t.id for t in await store.schedule.list_triggers(goal_id=goal.id)] == [first.id]
    assert await store.schedule.list_triggers(person_id=bob.id) == []
    off = await store.schedule.set_trigger_enabled(
        first.id, enabled=False, next_fire_at=None, now=clock.now()
    )
    assert (off.enabled, off.next_fire_at) == (False, None)
    assert await store.schedule.next_trigger_time() is None
    on = await store.schedule.set_trigger_enabled(
        first.id, enabled=True, next_fire_at=later(clock, 60), now=clock.now()
    )
    assert (on.enabled, on.next_fire_at) == (True, later(clock, 60))
    assert await store.schedule.next_trigger_time() == later(clock, 60)
    with pytest.raises(NotFound):
        await store.schedule.get_trigger("trg_missing")
    with pytest.raises(NotFound):
        await store.schedule.set_trigger_enabled(
            "trg_missing", enabled=False, next_fire_at=None, now=clock.now()
        )
    with pytest.raises(NotFound):
        await store.schedule.create_trigger(make_trigger(ada.id, clock, goal_id=bobs_goal.id))
    with pytest.raises(NotFound):
        await store.schedule.create_trigger(make_trigger("per_missing", clock))
    assert len(await store.schedule.list_triggers()) == 2


async def test_due_triggers(store: Store, clock: SimulatedClock) -> None:
    """due_triggers returns enabled triggers whose next fire time has come, earliest first,
    and not those disabled, in the future, of a goal that is not active, or without a time."""
    ada = await new_person(store, clock)
    paused_goal = await new_goal(store, clock, ada.id)
    await store.goals.set_goal_status(paused_goal.id, GoalStatus.PAUSED, now=clock.now())
    active_goal = await new_goal(store, clock, ada.id)
    due_late = await store.schedule.create_trigger(
        make_trigger(ada.id, clock, next_fire_at=later(clock, -10), goal_id=active_goal.id)
    )
    due_early = await store.schedule.create_trigger(
        make_trigger(ada.id, clock, next_fire_at=later(clock, -60))
    )
    at_now = await store.schedule.create_trigger(
        make_trigger(ada.id, clock, next_fire_at=clock.now())
    )
    await store.schedule.create_trigger(make_trigger(ada.id, clock, next_fire_at=later(clock, 1)))
    await store.schedule.create_trigger(
        make_trigger(ada.id, clock, next_fire_at=later(clock, -5), enabled=False)
    )
    await store.schedule.create_trigger(
        make_trigger(ada.id, clock, next_fire_at=later(clock, -5), goal_id=paused_goal.id)
    )
    await store.schedule.create_trigger(
        make_trigger(ada.id, clock, kind=TriggerKind.EVENT, spec="x")
    )
    due = await store.schedule.due_triggers(now=clock.now())
    assert [t.id for t in due] == [due_early.id, due_late.id, at_now.id]
    assert len(await store.schedule.due_triggers(now=clock.now(), limit=1)) == 1


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
    trig = await store.schedule.create_trigger(
        make_trigger(ada.id, clock, goal_id=goal.id, next_fire_at=t0)
    )
    plan = [(t0, FiringStatus.MISSED), (t1, FiringStatus.FIRED)]
    nxt = later(clock, 3600)
    created = await store.schedule.apply_firings(trig, plan, next_fire_at=nxt, now=clock.now())
    assert len(created) == 1
    task = await store.tasks.get_task(created[0])
    assert (task.trigger_id, task.goal_id, task.person_id, task.kind, task.priority) == (
        trig.id,
        goal.id,
        ada.id,
        "noop",
        3,
    )
    assert task.input == {"from": "trigger", "fired_for": t1.isoformat()}
    assert task.run_at == clock.now()
    firings = await store.schedule.list_firings(trig.id)
    assert [(f.scheduled_for, f.status, f.task_id) for f in firings] == [
        (t0, FiringStatus.MISSED, None),
        (t1, FiringStatus.FIRED, task.id),
    ]
    assert all(f.recorded_at == clock.now() for f in firings)
    moved = await store.schedule.get_trigger(trig.id)
    assert (moved.next_fire_at, moved.last_fire_at) == (nxt, t1)
    assert await store.schedule.due_triggers(now=clock.now()) == []
    c = await claim_one(store, clock)
    assert (c.task.id, c.activation.reason) == (task.id, "timer")

    # a second scheduler holding the same (now stale) trigger object
    assert await store.schedule.apply_firings(trig, plan, next_fire_at=nxt, now=clock.now()) == []
    # the schedule rewound to the same slot: the firings exist, so nothing fires again
    await store.schedule.set_trigger_enabled(
        trig.id, enabled=True, next_fire_at=t0, now=clock.now()
    )
    rewound = await store.schedule.get_trigger(trig.id)
    assert (
        await store.schedule.apply_firings(rewound, plan, next_fire_at=nxt, now=clock.now()) == []
    )
    assert len(await store.tasks.list_tasks(person_id=ada.id)) == 1
    assert len(await store.schedule.list_firings(trig.id)) == 2
    # a disabled trigger does not fire
    await store.schedule.set_trigger_enabled(
        trig.id, enabled=False, next_fire_at=None, now=clock.now()
    )
    off = await store.schedule.get_trigger(trig.id)
    t2 = later(clock, 7200)
    assert (
        await store.schedule.apply_firings(
            off, [(t2, FiringStatus.FIRED)], next_fire_at=None, now=t2
        )
        == []
    )
    assert len(await store.tasks.list_tasks(person_id=ada.id)) == 1


async def test_apply_firings_last_firing_ends_schedule(
    store: Store, clock: SimulatedClock, request: pytest.FixtureRequest
) -> None:
    """A one-shot trigger's only firing leaves no next fire time."""
    ada = await new_person(store, clock)
    at = clock.now()
    trig = await store.schedule.create_trigger(
        make_trigger(ada.id, clock, kind=TriggerKind.AT, spec=at.isoformat(), next_fire_at=at)
    )
    created = await store.schedule.apply_firings(
        trig, [(at, FiringStatus.FIRED)], next_fire_at=None, now=clock.now()
    )
    assert len(created) == 1
    done = await store.schedule.get_trigger(trig.id)
    assert (done.next_fire_at, done.last_fire_at) == (None, at)
    assert await store.schedule.next_trigger_time() is None


# --- leader leases -----------------------------------------------------------------------


async def test_leader_lease(store: Store, clock: SimulatedClock) -> None:
    """One holder at a time: a holder renews at the same epoch, another is refused until
    expiry, a takeover bumps the epoch, and a release lets the next holder in at once."""
    ttl = 10.0

    async def acquire(holder: str) -> int | None:
        return await store.schedule.acquire_lease(
            "scheduler", holder=holder, ttl_seconds=ttl, lease_now=clock.lease_now()
        )

    assert await acquire("a") == 1
    clock.advance(timedelta(seconds=5))
    assert await acquire("a") == 1
    assert await acquire("b") is None
    clock.advance(timedelta(seconds=ttl + 1))  # a last renewed ttl + 1 seconds ago
    assert await acquire("b") == 2
    assert await acquire("a") is None
    await store.schedule.release_lease("scheduler", holder="a")  # not the holder: no effect
    assert await acquire("a") is None
    await store.schedule.release_lease("scheduler", holder="b")
    assert await acquire("a") == 3
    assert (
        await store.schedule.acquire_lease(
            "other", holder="b", ttl_seconds=ttl, lease_now=clock.lease_now()
        )
        == 1
    )


async def test_leader_lease_valid_until_expiry(store: Store, clock: SimulatedClock) -> None:
    """A lease is held through its ttl and free just after."""
    assert (
        await store.schedule.acquire_lease("l", holder="a", ttl_seconds=10, lease_now=clock.now())
        == 1
    )
    assert (
        await store.schedule.acquire_lease(
            "l", holder="b", ttl_seconds=10, lease_now=later(clock, 9)
        )
        is None
    )
    assert (
        await store.schedule.acquire_lease(
            "l", holder="b", ttl_seconds=10, lease_now=later(clock, 11)
        )
        == 2
    )
