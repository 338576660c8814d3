"""Workers running step functions against the real store (SQLite and PostgreSQL) on a simulated
clock: checkpoints and crash recovery, retries and dead letters, control requests at step
boundaries, timed and child waits, the effect journal after a crash, goal budgets."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from steward.domain import Budget, EffectStatus, Person, TaskSpec, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.domain.ids import effect_key
from steward.domain.outcome import Claim, Outcome, Requeue, Succeed, Wait
from steward.domain.task import WaitCondition
from steward.errors import InvalidTransition, LeaseLost, RetryLater
from steward.runtime.run import TaskRun
from steward.runtime.scheduler import Scheduler
from steward.runtime.stepfn import Handler, StepContext, StepHarness
from steward.runtime.worker import Worker
from steward.service import Service
from steward.store import Fence, Store
from support.waiting import lock_waiters

S = TaskStatus
LEASE = 30.0


@pytest.fixture
async def person(store: Store, clock: SimulatedClock) -> Person:
    return await store.persons.create_person(name="p", now=clock.now(), max_concurrency=8)


def worker(store: Store, harness: StepHarness, clock: SimulatedClock, **kw: Any) -> Worker:
    kw.setdefault("retry_base_seconds", 10.0)
    return Worker(store, harness, clock, lease_seconds=LEASE, poll_seconds=None, **kw)


async def die_holding(store: Store, clock: SimulatedClock) -> TaskRun:
    """Claim the due task as a worker that will die: the caller does some work through the
    returned run, then simply stops using it (no outcome, no release)."""
    [claim] = await store.tasks.claim_tasks(
        worker="doomed", limit=1, lease_seconds=LEASE, now=clock.now(), lease_now=clock.lease_now()
    )
    return TaskRun(store=store, clock=clock, claim=claim)


async def reap_after_lease(store: Store, clock: SimulatedClock) -> list[str]:
    """Let the dead worker's lease run out and run the scheduler's sweep once; returns the ids
    of the tasks now pending."""
    clock.advance(timedelta(seconds=LEASE + 1))
    await Scheduler(store, clock).tick()
    return [t.id for t in await store.tasks.list_tasks(status=[S.PENDING])]


# --- checkpoints and crash recovery ---------------------------------------------------------


def counter(executed: list[int], store: Store, *, last: int = 5) -> Handler:
    """Step function of a five-step task that sums its step numbers."""

    async def count(ctx: StepContext) -> Outcome | None:
        # what the store holds while this step runs: every earlier step, committed
        committed = await store.tasks.get_task(ctx.task_id)
        assert committed.step_seq == ctx.step - 1
        assert committed.state == ctx.state
        executed.append(ctx.step)
        ctx.state["sum"] = ctx.state.get("sum", 0) + ctx.step
        ctx.state["seen"] = [*ctx.state.get("seen", []), ctx.step]
        return Succeed(result=ctx.state) if ctx.step >= last else None

    return count


def harness_of(**handlers: Handler) -> StepHarness:
    harness = StepHarness()
    for kind, handler in handlers.items():
        harness.register(kind, handler)
    return harness


async def test_every_step_is_checkpointed(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """A five-step task commits a journal entry and its state after each step (each step sees
    the previous one committed), in one activation, and succeeds with the accumulated state."""
    executed: list[int] = []
    task = await store.tasks.create_task(
        TaskSpec(kind="count"), person_id=person.id, now=clock.now()
    )
    harness = harness_of(count=counter(executed, store))
    assert await worker(store, harness, clock).run_until_idle() == 1
    done = await store.tasks.get_task(task.id)
    assert done.status is S.SUCCEEDED
    assert done.step_seq == 5
    assert done.result == {"sum": 15, "seen": [1, 2, 3, 4, 5]}
    assert executed == [1, 2, 3, 4, 5]
    journal = await store.activations.list_steps(task.id)
    assert [s.seq for s in journal] == [1, 2, 3, 4, 5]
    assert [s.output for s in journal] == [None, None, None, None, "succeed"]
    [activation] = await store.activations.list_activations(task_id=task.id)
    assert (activation.reason, activation.outcome, activation.steps) == (
        "created",
        "succeed",
        5,
    )


async def test_crashed_task_resumes_from_last_committed_step(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """A worker commits two steps, runs a third without committing it and dies. After its lease
    lapses the scheduler re-queues the task and a new worker resumes at step 3: committed steps
    are never repeated, the uncommitted step's state change is discarded, and the journal holds
    each step once."""
    executed: list[int] = []
    count = counter(executed, store)
    task = await store.tasks.create_task(
        TaskSpec(kind="count"), person_id=person.id, now=clock.now()
    )

    dead = await die_holding(store, clock)
    ctx = StepContext(dead)
    for _ in range(2):
        assert await count(ctx) is None
        await dead.checkpoint()
    assert await count(ctx) is None  # step 3 computed, then the process is gone
    assert executed == [1, 2, 3]

    assert await reap_after_lease(store, clock) == [task.id]
    requeued = await store.tasks.get_task(task.id)
    assert (requeued.step_seq, requeued.attempts, requeued.state) == (
        2,
        1,
        {"sum": 3, "seen": [1, 2]},
    )

    assert await worker(store, harness_of(count=count), clock).run_until_idle() == 1
    done = await store.tasks.get_task(task.id)
    assert done.status is S.SUCCEEDED
    assert done.result == {"sum": 15, "seen": [1, 2, 3, 4, 5]}
    assert executed == [1, 2, 3, 3, 4, 5]  # only the uncommitted step ran again
    journal = await store.activations.list_steps(task.id)
    assert [s.seq for s in journal] == [1, 2, 3, 4, 5]
    first, second = await store.activations.list_activations(task_id=task.id)
    assert {s.activation_id for s in journal[:2]} == {first.id}
    assert {s.activation_id for s in journal[2:]} == {second.id}
    assert (first.outcome, second.reason, second.outcome) == ("lost", "recovered", "succeed")


async def test_dead_workers_fence_cannot_write_after_recovery(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """Once a task was recovered by another worker, the dead worker's run (a zombie that wakes
    up) cannot checkpoint into it."""
    await store.tasks.create_task(TaskSpec(kind="count"), person_id=person.id, now=clock.now())
    zombie = await die_holding(store, clock)
    await reap_after_lease(store, clock)
    await store.tasks.claim_tasks(
        worker="w2", limit=1, lease_seconds=LEASE, now=clock.now(), lease_now=clock.lease_now()
    )
    with pytest.raises(LeaseLost):
        await zombie.checkpoint()
    assert await store.activations.list_steps(zombie.task.id) == []


# --- retries --------------------------------------------------------------------------------


async def test_failing_step_backs_off_then_dead_letters(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """A step that raises is retried with exponential backoff (run_at moves into the future by
    at most base·2^attempt, attempts counts up, nothing runs early) and the task is
    dead-lettered with the reason once max_attempts is used up."""
    runs: list[int] = []
    harness = StepHarness()

    @harness.handler("flaky")
    async def flaky(ctx: StepContext) -> Outcome | None:
        runs.append(ctx.step)
        raise ValueError("upstream said no")

    task = await store.tasks.create_task(
        TaskSpec(kind="flaky", max_attempts=3), person_id=person.id, now=clock.now()
    )
    w = worker(store, harness, clock)
    for attempt in (1, 2):
        before = clock.now()
        assert await w.run_until_idle() == 1
        waiting = await store.tasks.get_task(task.id)
        assert waiting.status is S.PENDING
        assert waiting.attempts == attempt
        assert waiting.error == "ValueError: upstream said no"
        assert before < waiting.run_at <= before + timedelta(seconds=10 * 2 ** (attempt - 1))
        clock.advance(waiting.run_at - clock.now() - timedelta(microseconds=1))
        assert await w.run_until_idle() == 0  # not a microsecond before its time
        clock.advance(timedelta(microseconds=1))  # and exactly at it
    assert await w.run_until_idle() == 1
    dead = await store.tasks.get_task(task.id)
    assert dead.status is S.DEAD_LETTERED
    assert dead.attempts == 3
    assert dead.error == "gave up after 3 attempts: ValueError: upstream said no"
    assert dead.finished_at is not None
    assert runs == [1, 1, 1]
    outcomes = [a.outcome for a in await store.activations.list_activations(task_id=task.id)]
    assert outcomes == ["retry", "retry", "dead_lettered"]
    assert await w.run_until_idle() == 0


async def test_retry_later_uses_the_requested_delay(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """RetryLater(delay_seconds=120) puts the task back exactly 120 s later with the reason
    recorded; it does not run before, and runs (and succeeds) then."""
    calls: list[int] = []
    harness = StepHarness()

    @harness.handler("limited")
    async def limited(ctx: StepContext) -> Outcome | None:
        calls.append(ctx.step)
        if len(calls) == 1:
            raise RetryLater("rate limited", delay_seconds=120)
        return Succeed(result="ok")

    task = await store.tasks.create_task(
        TaskSpec(kind="limited"), person_id=person.id, now=clock.now()
    )
    start = clock.now()
    w = worker(store, harness, clock)
    await w.run_until_idle()
    later = await store.tasks.get_task(task.id)
    assert (later.status, later.attempts, later.error) == (S.PENDING, 1, "rate limited")
    assert later.run_at == start + timedelta(seconds=120)
    clock.advance(timedelta(seconds=119))
    assert await w.run_until_idle() == 0
    clock.advance(timedelta(seconds=1))
    assert await w.run_until_idle() == 1
    assert (await store.tasks.get_task(task.id)).status is S.SUCCEEDED


async def test_retry_is_claimable_exactly_at_its_run_at(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """A task put back with a delay is claimable at exactly the run_at the store reports (the
    time a worker, or a simulated clock, sleeps until)."""
    harness = StepHarness()

    @harness.handler("later")
    async def later(ctx: StepContext) -> Outcome | None:
        if ctx.wake.get("reason") != "retry":
            # a jittered backoff has digits below the microsecond, like this one
            raise RetryLater("later", delay_seconds=1.0000004)
        return Succeed(result=None)

    task = await store.tasks.create_task(
        TaskSpec(kind="later"), person_id=person.id, now=clock.now()
    )
    w = worker(store, harness, clock)
    await w.run_until_idle()
    due = await store.tasks.next_run_time()
    assert due == (await store.tasks.get_task(task.id)).run_at
    assert due is not None
    clock.advance(due - clock.now())
    assert await w.run_until_idle() == 1
    assert (await store.tasks.get_task(task.id)).status is S.SUCCEEDED


# --- control at step boundaries -------------------------------------------------------------


@pytest.mark.parametrize("action", ["pause", "cancel"])
async def test_control_while_running_takes_effect_at_next_step_boundary(
    store: Store, clock: SimulatedClock, person: Person, action: str
) -> None:
    """A pause or cancel requested while step 2 is running lets step 2 finish and commit, then
    stops the task there. A paused task resumes at step 3 and finishes without repeating a
    step; a cancelled one never runs again."""
    executed: list[int] = []
    in_step_two = asyncio.Event()
    proceed = asyncio.Event()
    harness = StepHarness()

    @harness.handler("long")
    async def long(ctx: StepContext) -> Outcome | None:
        executed.append(ctx.step)
        if ctx.step == 2 and not proceed.is_set():
            in_step_two.set()
            await proceed.wait()
        return Succeed(result=ctx.step) if ctx.step >= 4 else None

    service = Service(store, clock)
    task = await service.create_task(person_id=person.id, spec=TaskSpec(kind="long"))

    async def person_steers() -> None:
        await in_step_two.wait()
        asked = await service.control_task(task.id, action)
        assert asked.status is S.RUNNING  # only asked; the step is still running
        proceed.set()

    w = worker(store, harness, clock)
    await asyncio.gather(w.run_until_idle(), person_steers())
    stopped = await store.tasks.get_task(task.id)
    assert stopped.step_seq == 2
    assert executed == [1, 2]
    assert stopped.lease_owner is None
    if action == "cancel":
        assert stopped.status is S.CANCELLED
        assert stopped.finished_at is not None
        assert await w.run_until_idle() == 0
        with pytest.raises(InvalidTransition):
            await service.control_task(task.id, "resume")
        return
    assert stopped.status is S.PAUSED
    assert await w.run_until_idle() == 0  # paused: nobody claims it
    assert (await service.control_task(task.id, "resume")).status is S.PENDING
    assert await w.run_until_idle() == 1
    done = await store.tasks.get_task(task.id)
    assert (done.status, done.result, done.step_seq) == (S.SUCCEEDED, 4, 4)
    assert executed == [1, 2, 3, 4]
    reasons = [a.reason for a in await store.activations.list_activations(task_id=task.id)]
    assert reasons == ["created", "resumed"]


# --- waits ----------------------------------------------------------------------------------


async def test_timed_wait_releases_the_lease_and_wakes_on_time(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """A task that waits an hour becomes a row (waiting, no lease, no worker busy); the
    scheduler reports the wake time, does not wake it a second early, and wakes it exactly on
    time with reason 'timer'."""
    seen: list[tuple[str | None, Any]] = []
    harness = StepHarness()

    @harness.handler("sleeper")
    async def sleeper(ctx: StepContext) -> Outcome | None:
        if "until" not in ctx.state:
            until = ctx.now() + timedelta(hours=1)
            ctx.state["until"] = until.isoformat()
            return Wait(condition=WaitCondition(kind="until", until=until))
        seen.append((ctx.wake.get("reason"), ctx.now().isoformat()))
        return Succeed(result=None)

    task = await store.tasks.create_task(
        TaskSpec(kind="sleeper"), person_id=person.id, now=clock.now()
    )
    until = clock.now() + timedelta(hours=1)
    w = worker(store, harness, clock)
    assert await w.run_until_idle() == 1
    asleep = await store.tasks.get_task(task.id)
    assert asleep.status is S.WAITING
    assert (asleep.lease_owner, asleep.lease_expires_at) == (None, None)
    assert asleep.wait == WaitCondition(kind="until", until=until)
    assert [a.outcome for a in await store.activations.list_activations(task_id=task.id)] == [
        "wait"
    ]

    scheduler = Scheduler(store, clock)
    clock.advance(timedelta(minutes=59, seconds=59))
    assert await scheduler.tick() == until
    assert (await store.tasks.get_task(task.id)).status is S.WAITING
    assert await w.run_until_idle() == 0
    clock.advance(timedelta(seconds=1))
    await scheduler.tick()
    assert (await store.tasks.get_task(task.id)).status is S.PENDING
    assert await w.run_until_idle() == 1
    assert (await store.tasks.get_task(task.id)).status is S.SUCCEEDED
    assert seen == [("timer", until.isoformat())]


async def test_parent_waits_for_its_children(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """A parent that spawns two subtasks and waits for its children sleeps while they run and is
    woken (reason 'children') only when both have finished."""
    parent_status_seen_by_children: list[TaskStatus] = []
    harness = StepHarness()

    @harness.handler("parent")
    async def parent(ctx: StepContext) -> Outcome | None:
        if ctx.step == 1:
            ctx.state["children"] = [
                await ctx.spawn(TaskSpec(kind="child", input={"n": n})) for n in (1, 2)
            ]
            return Wait(condition=WaitCondition(kind="children"))
        assert ctx.wake.get("reason") == "children"
        children = [await store.tasks.get_task(c) for c in ctx.state["children"]]
        return Succeed(result=[(c.status.value, c.result) for c in children])

    @harness.handler("child")
    async def child(ctx: StepContext) -> Outcome | None:
        parent_id = (await store.tasks.get_task(ctx.task_id)).parent_id
        assert parent_id is not None
        parent_status_seen_by_children.append((await store.tasks.get_task(parent_id)).status)
        return Succeed(result=ctx.input["n"] * 10)

    task = await store.tasks.create_task(
        TaskSpec(kind="parent"), person_id=person.id, now=clock.now()
    )
    # the two children run at once: whichever finishes last wakes the parent
    await worker(store, harness, clock).run_until_idle()
    done = await store.tasks.get_task(task.id)
    assert done.status is S.SUCCEEDED
    assert done.result == [["succeeded", 10], ["succeeded", 20]]
    assert parent_status_seen_by_children == [S.WAITING, S.WAITING]
    children = await store.tasks.list_tasks(parent_id=task.id)
    assert sorted(c.input["n"] for c in children) == [1, 2]
    assert {c.goal_id for c in children} == {None}
    reasons = [a.reason for a in await store.activations.list_activations(task_id=task.id)]
    assert reasons == ["created", "children"]


async def test_spawn_replayed_after_a_crash_finds_the_same_child(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """A worker spawns a subtask in step 1 and dies before committing the step. The step runs
    again on recovery; the spawn finds the child created the first time instead of making a
    second one."""
    child_runs: list[str] = []
    harness = StepHarness()

    @harness.handler("parent")
    async def parent(ctx: StepContext) -> Outcome | None:
        if ctx.step == 1:
            ctx.state["child"] = await ctx.spawn(TaskSpec(kind="child"))
            return Wait(condition=WaitCondition(kind="children"))
        return Succeed(result=ctx.state["child"])

    @harness.handler("child")
    async def child(ctx: StepContext) -> Outcome | None:
        child_runs.append(ctx.task_id)
        return Succeed(result=None)

    task = await store.tasks.create_task(
        TaskSpec(kind="parent"), person_id=person.id, now=clock.now()
    )
    dead = await die_holding(store, clock)
    first_id = await StepContext(dead).spawn(TaskSpec(kind="child"))
    await reap_after_lease(store, clock)
    # parent and child run at once: the child may finish before or as the parent sleeps
    await worker(store, harness, clock).run_until_idle()
    done = await store.tasks.get_task(task.id)
    assert done.status is S.SUCCEEDED
    assert done.result == first_id
    assert [c.id for c in await store.tasks.list_tasks(parent_id=task.id)] == [first_id]
    assert child_runs == [first_id]


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("stall", ["before-looking", "after-looking"])
async def test_child_finishing_as_parent_goes_to_sleep_wakes_it(
    db_url: str, store: Store, clock: SimulatedClock, person: Person, stall: str
) -> None:
    """The parent's 'wait for children' and its child's completion are committed by two workers
    at the same moment. Another session stalls the parent's transaction either before it looks
    at its children (holding the parent's row) or after (holding its activation's row) while
    the child finishes; either way the parent ends up runnable, not asleep forever."""
    await store.tasks.create_task(TaskSpec(kind="parent"), person_id=person.id, now=clock.now())

    async def claim(name: str) -> Claim:
        [claimed] = await store.tasks.claim_tasks(
            worker=name, limit=1, lease_seconds=LEASE, now=clock.now(), lease_now=clock.lease_now()
        )
        return claimed

    parent = await claim("w1")
    child_id = await StepContext(TaskRun(store=store, clock=clock, claim=parent)).spawn(
        TaskSpec(kind="child")
    )
    child = await claim("w2")
    assert child.task.id == child_id

    def finish(claimed: Claim, outcome: Outcome) -> asyncio.Future[Any]:
        return asyncio.ensure_future(
            store.activations.finish_activation(
                Fence.of(claimed),
                outcome,
                now=clock.now(),
                steps_taken=1,
                lease_now=clock.lease_now(),
            )
        )

    stall_on = (
        ("SELECT 1 FROM tasks WHERE id = %s FOR UPDATE", parent.task.id)
        if stall == "before-looking"
        else ("SELECT 1 FROM activations WHERE id = %s FOR UPDATE", parent.activation.id)
    )
    with (
        psycopg.connect(db_url) as blocker,
        psycopg.connect(db_url, autocommit=True) as watcher,
    ):
        blocker.execute(stall_on[0], (stall_on[1],))
        going_to_sleep = finish(parent, Wait(condition=WaitCondition(kind="children")))
        await lock_waiters(watcher, at_least=1)
        child_done = finish(child, Succeed(result=None))
        with contextlib.suppress(TimeoutError):  # done, or (with row locks) queued behind
            await asyncio.wait_for(asyncio.shield(child_done), timeout=2)
        blocker.rollback()
    await asyncio.gather(going_to_sleep, child_done)
    assert (await store.tasks.get_task(child_id)).status is S.SUCCEEDED
    assert (await store.tasks.get_task(parent.task.id)).status is S.PENDING


# --- the effect journal after a crash -------------------------------------------------------


class Tool:
    """A side effect the test can count: each call records the idempotency key it got."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    async def __call__(self, key: str, fence: str) -> Any:
        self.keys.append(key)
        return {"done": key}


def effect_harness(
    tool: Tool,
    *,
    idempotent: bool,
    reconcile: Callable[[str], Awaitable[tuple[bool, Any] | None]] | None = None,
) -> StepHarness:
    harness = StepHarness()

    @harness.handler("pay")
    async def pay(ctx: StepContext) -> Outcome | None:
        result = await ctx.effect(
            "pay", {"amount": 5}, tool, idempotent=idempotent, reconcile=reconcile
        )
        return Succeed(result=result)

    return harness


async def crash_after_send(
    store: Store, clock: SimulatedClock, person: Person, *, idempotent: bool
) -> tuple[str, str]:
    """A worker journals the intent of step 1's effect, marks it sent, and dies before the
    answer is recorded; the task is recovered. Returns (task id, effect key)."""
    task = await store.tasks.create_task(TaskSpec(kind="pay"), person_id=person.id, now=clock.now())
    dead = await die_holding(store, clock)
    key = effect_key(task.id, 1, 0)
    effect = await store.effects.plan_effect(
        Fence.of(dead.claim),
        key=key,
        step_seq=1,
        tool="pay",
        args={"amount": 5},
        idempotent=idempotent,
        now=clock.now(),
        lease_now=clock.lease_now(),
    )
    await store.effects.set_effect_status(
        Fence.of(dead.claim),
        effect.id,
        EffectStatus.SENT,
        now=clock.now(),
        lease_now=clock.lease_now(),
    )
    assert await reap_after_lease(store, clock) == [task.id]
    return task.id, key


async def test_idempotent_effect_is_resent_with_the_same_key(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """After a crash between sending and recording, an effect whose tool honours idempotency
    keys is sent again under the same key (the service dedupes it) and its result recorded."""
    tool = Tool()
    task_id, key = await crash_after_send(store, clock, person, idempotent=True)
    await worker(store, effect_harness(tool, idempotent=True), clock).run_until_idle()
    assert tool.keys == [key]
    effect = await store.effects.get_effect_by_key(key)
    assert effect is not None
    assert (effect.status, effect.attempts, effect.result) == (
        EffectStatus.SUCCEEDED,
        2,
        {"done": key},
    )
    done = await store.tasks.get_task(task_id)
    assert (done.status, done.result) == (S.SUCCEEDED, {"done": key})


@pytest.mark.parametrize("applied", [False, True])
async def test_non_idempotent_effect_in_doubt_waits_for_the_person(
    store: Store, clock: SimulatedClock, person: Person, applied: bool
) -> None:
    """After a crash between sending and recording, an effect whose tool ignores keys is never
    blindly re-sent: it is marked in doubt and the task waits (kind 'effect') holding no lease.
    If the person says it did not happen, the task sends it once on resume under the same key;
    if it did, the task continues without sending."""
    tool = Tool()
    task_id, key = await crash_after_send(store, clock, person, idempotent=False)
    w = worker(store, effect_harness(tool, idempotent=False), clock)
    assert await w.run_until_idle() == 1
    assert tool.keys == []
    effect = await store.effects.get_effect_by_key(key)
    assert effect is not None
    assert effect.status is EffectStatus.IN_DOUBT
    waiting = await store.tasks.get_task(task_id)
    assert waiting.status is S.WAITING
    assert waiting.wait == WaitCondition(kind="effect", ref=effect.id)
    assert waiting.lease_owner is None
    assert await w.run_until_idle() == 0  # stays asleep until decided

    service = Service(store, clock)
    assert [e.id for e in await service.in_doubt_effects(person.id)] == [effect.id]
    resolved = await service.resolve_effect(effect.id, applied=applied)
    assert resolved.status is (EffectStatus.SUCCEEDED if applied else EffectStatus.PLANNED)
    assert (await store.tasks.get_task(task_id)).status is S.PENDING
    assert await w.run_until_idle() == 1
    assert tool.keys == ([] if applied else [key])
    final = await store.effects.get_effect_by_key(key)
    assert final is not None
    assert final.status is EffectStatus.SUCCEEDED
    assert final.attempts == (1 if applied else 2)
    assert (await store.tasks.get_task(task_id)).status is S.SUCCEEDED


@pytest.mark.parametrize(
    ("answer", "sent", "status"),
    [
        ((True, {"receipt": 7}), False, S.SUCCEEDED),
        ((False, None), True, S.SUCCEEDED),
        (None, False, S.WAITING),
    ],
    ids=["applied", "not-applied", "cannot-tell"],
)
async def test_reconcile_hook_settles_an_unknown_effect(
    store: Store,
    clock: SimulatedClock,
    person: Person,
    answer: tuple[bool, Any] | None,
    sent: bool,
    status: TaskStatus,
) -> None:
    """For a tool without idempotency keys, a reconcile hook asked with the effect's key decides
    an unknown outcome: applied → the recorded result is used and nothing is sent; not applied →
    sent once; cannot tell → in doubt, the task waits for the person."""
    tool = Tool()
    asked: list[str] = []

    async def reconcile(key: str) -> tuple[bool, Any] | None:
        asked.append(key)
        return answer

    task_id, key = await crash_after_send(store, clock, person, idempotent=False)
    harness = effect_harness(tool, idempotent=False, reconcile=reconcile)
    await worker(store, harness, clock).run_until_idle()
    assert asked == [key]
    assert tool.keys == ([key] if sent else [])
    task = await store.tasks.get_task(task_id)
    assert task.status is status
    effect = await store.effects.get_effect_by_key(key)
    assert effect is not None
    if answer is not None and answer[0]:
        assert (effect.status, effect.result, task.result) == (
            EffectStatus.SUCCEEDED,
            {"receipt": 7},
            {"receipt": 7},
        )
    elif answer is None:
        assert effect.status is EffectStatus.IN_DOUBT


# --- budgets --------------------------------------------------------------------------------


async def test_goal_budget_caps_activations(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """A goal allowing two activations: a task that keeps yielding runs twice, and the third
    activation is refused — the task fails with a budget error without running its step. The
    cap is the goal's, so another task of the same goal is refused at once too."""
    runs: list[str] = []
    harness = StepHarness()

    @harness.handler("again")
    async def again(ctx: StepContext) -> Outcome | None:
        runs.append(ctx.task_id)
        return Requeue(reason="more to do")

    goal = await store.goals.create_goal(
        person_id=person.id, title="g", now=clock.now(), budget=Budget(max_activations=2)
    )
    task = await store.tasks.create_task(
        TaskSpec(kind="again"), person_id=person.id, goal_id=goal.id, now=clock.now()
    )
    w = worker(store, harness, clock)
    await w.run_until_idle()
    failed = await store.tasks.get_task(task.id)
    assert failed.status is S.FAILED
    assert failed.error is not None
    assert "budget" in failed.error
    assert runs == [task.id, task.id]
    assert [a.outcome for a in await store.activations.list_activations(task_id=task.id)] == [
        "requeue",
        "requeue",
        "fail",
    ]
    other = await store.tasks.create_task(
        TaskSpec(kind="again"), person_id=person.id, goal_id=goal.id, now=clock.now()
    )
    await w.run_until_idle()
    refused = await store.tasks.get_task(other.id)
    assert refused.status is S.FAILED
    assert refused.error is not None
    assert "budget" in refused.error
    assert runs == [task.id, task.id]
