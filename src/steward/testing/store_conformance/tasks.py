"""Store conformance: tasks: creation, claims, checkpoints, leases and outcomes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from steward.domain import (
    GoalStatus,
    TaskSpec,
    TaskStatus,
    WaitCondition,
)
from steward.domain.clock import SimulatedClock
from steward.domain.outcome import Fail, Requeue, Retry, Stop, Succeed, Wait
from steward.errors import LeaseLost, NotFound
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
    t = await store.tasks.create_task(spec, person_id=ada.id, goal_id=goal.id, now=clock.now())
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
    assert await store.tasks.get_task(t.id) == t
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
        await store.tasks.get_task("tsk_missing")
    assert {x.id for x in await store.tasks.list_tasks(person_id=ada.id)} == {t.id, loose.id}
    assert [x.id for x in await store.tasks.list_tasks(goal_id=goal.id)] == [t.id]
    assert [x.id for x in await store.tasks.list_tasks(person_id=bob.id)] == [bobs.id]
    assert await store.tasks.list_tasks(status=[TaskStatus.RUNNING]) == []
    assert len(await store.tasks.list_tasks(status=[TaskStatus.PENDING])) == 3
    assert [x.id for x in await store.tasks.list_tasks(kind="note")] == [t.id]
    assert [x.id for x in await store.tasks.list_tasks(person_id=bob.id, kind="noop")] == [bobs.id]
    assert await store.tasks.list_tasks(person_id=bob.id, kind="note") == []
    assert await store.tasks.count_tasks() == {"pending": 3}


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
    assert await store.tasks.next_run_time() == later(clock, 60)
    assert await claim(store, clock) == []
    clock.advance(timedelta(seconds=59))
    assert await claim(store, clock) == []
    clock.advance(timedelta(seconds=1))
    assert (await claim_one(store, clock)).task.id == t.id
    assert await store.tasks.next_run_time() is None


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
    assert len(await store.tasks.list_tasks(person_id=ada.id, status=[TaskStatus.RUNNING])) == 2
    assert len(await store.tasks.list_tasks(person_id=bob.id, status=[TaskStatus.RUNNING])) == 1


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
    await store.goals.set_goal_status(goal.id, GoalStatus.PAUSED, now=clock.now())
    loose = await new_task(store, clock, ada.id)
    assert [c.task.id for c in await claim(store, clock)] == [loose.id]
    assert await claim(store, clock) == []
    await store.goals.set_goal_status(goal.id, GoalStatus.ACTIVE, now=clock.now())
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
    stored = await store.activations.list_activations(task_id=t.id)
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
    acts = await store.activations.list_activations(task_id=t.id)
    assert [(a.epoch, a.worker) for a in acts] == [(1, "w-a"), (2, "w-b")]
    assert acts[0].ended_at == clock.now()
    assert acts[0].steps == 1
    assert [a.id for a in await store.activations.list_activations(goal_id=goal.id)] == [
        a.id for a in acts
    ]
    usage = await store.activations.goal_usage(goal.id)
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
    got = await store.tasks.get_task(t.id)
    assert got.step_seq == 3
    assert got.state == {"upto": 3, "items": [3]}
    assert got.updated_at == clock.now()
    steps = await store.activations.list_steps(t.id)
    assert [(s.seq, s.kind, s.output, s.activation_id) for s in steps] == [
        (n, "step", {"seq": n}, c.activation.id) for n in (1, 2, 3)
    ]
    assert steps[2].created_at == clock.now()
    assert [s.seq for s in await store.activations.list_steps(t.id, after=1)] == [2, 3]
    assert [s.seq for s in await store.activations.list_steps(t.id, limit=1)] == [1]


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
        got = await store.tasks.get_task(t.id)
        assert (got.step_seq, got.state) == (1, {"ok": 1})
        assert [s.seq for s in await store.activations.list_steps(t.id)] == [1]
    await checkpoint(store, clock, Fence.of(c), 2, {"ok": 2})
    assert [s.seq for s in await store.activations.list_steps(t.id)] == [1, 2]


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
    before = await store.tasks.get_task(t.id)
    with pytest.raises(LeaseLost) as info:
        await checkpoint(store, clock, Fence.of(c), 2, {"v": 2})
    assert (info.value.task_id, info.value.epoch) == (t.id, c.epoch)
    after = await store.tasks.get_task(t.id)
    assert after == before
    assert [s.seq for s in await store.activations.list_steps(t.id)] == [1]


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
    assert (
        await store.tasks.renew_lease(fence, lease_seconds=LEASE, lease_now=clock.lease_now())
        is None
    )
    assert (await store.tasks.get_task(t.id)).lease_expires_at == later(clock, LEASE)
    clock.advance(timedelta(seconds=20))  # 40 s after the claim: alive thanks to the renewal
    await checkpoint(store, clock, fence, 1, {})
    assert await store.tasks.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now()) == []
    clock.advance(timedelta(seconds=11))
    with pytest.raises(LeaseLost):
        await store.tasks.renew_lease(fence, lease_seconds=LEASE, lease_now=clock.lease_now())


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
    done = await store.activations.finish_activation(
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
    act = (await store.activations.list_activations(task_id=ok.id))[0]
    assert act.ended_at == clock.now()
    assert act.outcome == "succeed"
    assert (act.steps, act.usage) == (1, {"cost_usd": 0.25, "tokens": 10})
    failed = await finish(store, clock, c_bad, Fail(reason="refused"))
    assert failed.status is TaskStatus.FAILED
    assert failed.error == "refused"
    assert failed.finished_at == clock.now()
    assert (await store.activations.list_activations(task_id=bad.id))[0].outcome == "fail"
    usage = await store.activations.goal_usage(goal.id)
    assert usage == {"activations": 2, "steps": 1, "cost_usd": 0.25, "tokens": 10, "seconds": 6.0}
    with pytest.raises(LeaseLost):
        await finish(store, clock, c_ok, Fail(reason="again"))
    assert (await store.tasks.get_task(ok.id)).status is TaskStatus.SUCCEEDED


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
    assert (await store.activations.list_activations(task_id=t.id))[0].outcome == "retry"
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
    acts = await store.activations.list_activations(task_id=t.id)
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
    assert (await store.activations.list_activations(task_id=t.id))[0].outcome == "wait"
    assert await store.tasks.next_wait_time() == until
    assert await claim(store, clock) == []
    assert await store.tasks.wake_due_waits(now=later(clock, 3599)) == 0
    clock.advance(timedelta(seconds=3600))
    assert await store.tasks.wake_due_waits(now=clock.now()) == 1
    woken = await store.tasks.get_task(t.id)
    assert woken.status is TaskStatus.PENDING
    assert woken.wait is None
    assert woken.run_at == clock.now()
    assert await store.tasks.next_wait_time() is None
    assert await store.tasks.wake_due_waits(now=clock.now()) == 0
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
    assert await store.tasks.wake_due_waits(now=clock.now()) == 1
    assert (await store.tasks.get_task(forever.id)).status is TaskStatus.WAITING
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
    assert (await store.activations.list_activations(task_id=t.id))[0].outcome == "requeue"
    assert (await claim_one(store, clock)).wake.to_json() == {"reason": "fairness"}


async def test_finish_stop_cancel_and_pause(store: Store, clock: SimulatedClock) -> None:
    """Stop(cancel) ends the task cancelled; Stop(pause) parks it paused, and resume makes it
    runnable again with reason 'resumed'."""
    ada = await new_person(store, clock)
    a = await new_task(store, clock, ada.id, priority=1)
    b = await new_task(store, clock, ada.id)
    ca, cb = await claim(store, clock)
    assert ca.task.id == a.id
    await store.tasks.request_control(a.id, "cancel", now=clock.now())
    await store.tasks.request_control(b.id, "pause", now=clock.now())
    cancelled = await finish(store, clock, ca, Stop(control="cancel"))
    assert cancelled.status is TaskStatus.CANCELLED
    assert cancelled.finished_at == clock.now()
    paused = await finish(store, clock, cb, Stop(control="pause"))
    assert paused.status is TaskStatus.PAUSED
    assert paused.finished_at is None
    outcomes = {x.task_id: x.outcome for x in await store.activations.list_activations()}
    assert outcomes == {a.id: "cancelled", b.id: "paused"}
    assert await claim(store, clock) == []
    clock.advance(timedelta(seconds=5))
    resumed = await store.tasks.request_control(b.id, "resume", now=clock.now())
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
    before = await store.tasks.get_task(t.id)
    with pytest.raises(LeaseLost):
        await finish(store, clock, c, Succeed(result="late"))
    assert await store.tasks.get_task(t.id) == before
    assert (await store.activations.list_activations(task_id=t.id))[0].ended_at is None
