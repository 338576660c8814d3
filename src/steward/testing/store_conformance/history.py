"""Store conformance: pruning history; the audit log and notifications read back."""

from __future__ import annotations

from datetime import timedelta

import pytest

from steward.domain import (
    FiringStatus,
    GoalStatus,
    Notification,
    TaskStatus,
    WaitCondition,
)
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.domain.outcome import Succeed, Wait
from steward.errors import NotFound
from steward.store import Fence, Store
from steward.testing.store_conformance.helpers import (
    checkpoint,
    claim_one,
    finish,
    later,
    make_trigger,
    new_goal,
    new_person,
    new_task,
    plan,
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
    await store.goals.write_goal(
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
    trig = await store.schedule.create_trigger(
        make_trigger(ada.id, clock, next_fire_at=clock.now())
    )
    await store.schedule.apply_firings(
        trig, [(clock.now(), FiringStatus.MISSED)], next_fire_at=later(clock, 60), now=clock.now()
    )
    await store.schedule.add_event(
        person_id=ada.id, type="x", source="s", dedupe_key="old", payload={}, now=clock.now()
    )
    await store.schedule.route_events(now=clock.now())

    clock.advance(timedelta(days=30))
    recent = await new_task(store, clock, ada.id)
    await store.tasks.request_control(recent.id, "cancel", now=clock.now())
    unrouted, _ = await store.schedule.add_event(
        person_id=ada.id, type="y", source="s", dedupe_key="new", payload={}, now=clock.now()
    )
    cutoff = clock.now() - timedelta(days=1)
    feed = await store.feed.feed_since(person_id=ada.id)
    counts = await store.schedule.prune_history(before=cutoff)
    assert counts == {
        "steps": 1,
        "effects": 0,
        "activations": 1,
        "tasks": 1,
        "events": 1,
        "firings": 1,
        "feed entries": sum(1 for e in feed if e.at < cutoff),
        "follow-ups": 0,
    }
    # what happened since the cutoff stays in the feed, and its seqs do not change
    assert await store.feed.feed_since(person_id=ada.id) == [e for e in feed if e.at >= cutoff]
    assert [e.kind for e in await store.feed.feed_since(person_id=ada.id)] == [
        "task.created",
        "task.cancel",
    ]
    with pytest.raises(NotFound):
        await store.tasks.get_task(old.id)
    assert await store.activations.list_steps(old.id) == []
    assert await store.activations.list_activations(task_id=old.id) == []
    assert (await store.tasks.get_task(live.id)).status is TaskStatus.WAITING
    assert [s.seq for s in await store.activations.list_steps(live.id)] == [1]
    assert len(await store.activations.list_activations(task_id=live.id)) == 1
    assert (await store.tasks.get_task(recent.id)).status is TaskStatus.CANCELLED
    assert [e.id for e in await store.schedule.list_events()] == [unrouted.id]
    assert (await store.goals.get_goal(goal.id)).status is GoalStatus.ACTIVE
    assert [r.task_id for r in await store.goals.list_goal_records(goal.id)] == [old.id]
    assert (await store.schedule.get_trigger(trig.id)).enabled
    assert await store.schedule.list_firings(trig.id) == []
    assert await store.schedule.prune_history(before=cutoff) == dict.fromkeys(counts, 0)


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
    counts = await store.schedule.prune_history(before=clock.now() - timedelta(days=1))
    assert (counts["effects"], counts["tasks"]) == (1, 1)
    assert await store.effects.list_effects() == [kept]


async def test_recent_audit_reads_newest_first(store: Store, clock: SimulatedClock) -> None:
    """The newest entries first, one person's or everyone's, before a seq and up to a limit: the
    same entries the oldest-first read returns, in the other order."""
    ada = await new_person(store, clock)
    bob = await new_person(store, clock)
    for n in range(5):
        for who in (ada, bob):
            await store.audit.append_audit(
                person_id=who.id, kind="test", actor="t", data={"n": n}, now=clock.now()
            )
            clock.advance(timedelta(seconds=1))
    everyone = await store.audit.list_audit(limit=1000)
    adas = await store.audit.list_audit(person_id=ada.id, limit=1000)
    assert await store.audit.list_recent_audit(limit=1000) == everyone[::-1]
    assert await store.audit.list_recent_audit(person_id=ada.id, limit=1000) == adas[::-1]
    newest = await store.audit.list_recent_audit(person_id=ada.id, limit=2)
    assert [e.data["n"] for e in newest] == [4, 3]
    older = await store.audit.list_recent_audit(
        person_id=ada.id, before_seq=newest[-1].seq, limit=2
    )
    assert [e.data["n"] for e in older] == [2, 1]
    assert {e.person_id for e in older} == {ada.id}
    first = await store.audit.list_recent_audit(before_seq=everyone[0].seq, limit=10)
    assert first == []
    assert await store.audit.list_recent_audit(person_id="per_missing") == []


async def test_mark_read_is_the_persons_own(store: Store, clock: SimulatedClock) -> None:
    """Marking read is idempotent; an unknown id, or another person's with ``person_id``, is
    NotFound and changes nothing."""
    ada = await new_person(store, clock)
    bob = await new_person(store, clock)
    ids = {}
    for who in (ada, bob):
        ids[who.id] = new_id("ntf")
        await store.inbox.notify(
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
            await store.inbox.mark_read(missing, now=clock.now(), person_id=mine)
    assert [n.read_at for n in await store.inbox.list_notifications(person_id=bob.id)] == [None]
    await store.inbox.mark_read(ids[ada.id], now=clock.now(), person_id=ada.id)
    clock.advance(timedelta(minutes=1))
    await store.inbox.mark_read(ids[ada.id], now=clock.now(), person_id=ada.id)  # again: unchanged
    [read] = await store.inbox.list_notifications(person_id=ada.id)
    assert read.read_at == clock.now() - timedelta(minutes=1)
