"""At most once for an effect whose sender was frozen between marking it sent and sending it.

The zombie, with real processes: worker A marks a non-idempotent effect ``sent`` and is frozen
(SIGSTOP, at the ``effect.after_mark_sent`` failpoint) before its request leaves. Its lease
lapses; the scheduler re-queues the task and worker B finds the effect in doubt. The person
looks at the service's records (nothing arrived), resolves it "not applied", and B sends it.
Then A is thawed: past its send deadline, it must not send. Without the deadline the service
received the effect twice.

In one process: a sender whose send deadline has passed before the request would start records
that it did not send and sends nothing; and nobody may decide an in-doubt effect did not happen
before its send deadline (the message says when they may).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from steward.domain import EffectStatus, Person, TaskSpec, TaskStatus
from steward.domain.clock import Clock, SimulatedClock
from steward.domain.ids import effect_key
from steward.errors import EffectMaybeInFlight, RetryLater
from steward.runtime.run import TaskRun
from steward.service import Service
from steward.store import Store
from steward.testing.effect_service import EffectServiceClient, run_effect_service
from steward.testing.posting import connect_local_service
from support.processes import holds_task_lock, spawn, until
from support.startup import scaled

LEASE_SECONDS = 2.0
"""A worker's lease on a quiet machine (scaled for this one: a starved worker must not lose it
before it gets to mark the effect sent)."""
WAIT_SECONDS = 180.0
"""How long a process may take to get somewhere: generous, since a ``steward`` process alone
takes 3 s to import at rest and 10 s on a loaded machine; a dead process fails the wait at
once."""
FENCE_LOG_LINES = ("activation rejected by fence", "activation abandoned: lease lost")
"""What a worker logs when it finds it lost its lease (which one first is a race inside it)."""
ATTEMPTS = 8
"""Runs of the scenario before giving up on staging it (see :class:`Unstaged`)."""


class Unstaged(Exception):
    """A race made the scenario another one than the one under test, so it is staged again:
    the frozen worker happened to hold a database lock (everybody would wait on it), or, thawed
    inside the residual window, it noticed the lost lease (its heartbeat) and cancelled its
    request before it went out."""


def log_lines(log: Path, *words: str) -> list[str]:
    return [line for line in log.read_text().splitlines() if any(w in line for w in words)]


def stopped(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP): state ``T`` in /proc."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "T"


@pytest.fixture
async def person(store: Store, clock: SimulatedClock) -> Person:
    return await store.persons.create_person(name="p", now=clock.now())


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states in /proc")
@pytest.mark.parametrize(
    ("frozen_at", "check_fence", "requests"),
    [("effect.after_mark_sent", False, 1), ("egress.before_send", True, 2)],
    ids=["before-its-deadline-check", "after-it-inside-the-residual-window"],
)
async def test_frozen_sender_does_not_apply_the_effect_again_after_it_was_resolved_and_resent(
    db_url: str, tmp_path: Path, frozen_at: str, check_fence: bool, requests: int
) -> None:
    """The service applies the effect once: B's send, after the person resolved it. A, frozen
    before its deadline check and thawed past the deadline, sends nothing. A frozen after the
    check (the residual window: its request goes out late) is refused by a service that checks
    the fencing token, as B's newer epoch reached it first."""
    for attempt in range(ATTEMPTS):
        try:
            stats, a_log = await _zombie_scenario(
                db_url, tmp_path / f"run{attempt}", frozen_at, check_fence
            )
        except Unstaged:
            continue
        [(key, seen)] = stats.items()
        if seen["requests"] >= requests:
            break
    else:
        pytest.fail(f"the scenario could not be staged in {ATTEMPTS} runs (see Unstaged)")
    print(f"\nservice saw {key}: {seen}; zombie A logged: {a_log}")
    assert (seen["requests"], seen["applied"]) == (requests, 1), "the effect was applied twice"


async def _zombie_scenario(
    db_url: str, logs: Path, frozen_at: str, check_fence: bool
) -> tuple[dict[str, Any], list[str]]:
    await asyncio.to_thread(logs.mkdir)
    if db_url.startswith("sqlite"):  # each run its own database
        db_url = f"sqlite:///{logs / 'steward.db'}"
    store = await Store.open(db_url)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    lease = ["--lease-seconds", str(scaled(LEASE_SECONDS))]
    try:
        with run_effect_service() as service:
            client = EffectServiceClient(service.url)
            await client.control(check_fence=check_fence)
            now = datetime.now(UTC)
            person = await store.persons.create_person(name="zombie", now=now)
            await connect_local_service(store, person.id, service.url, now=now)
            spec = TaskSpec(
                kind="http_post",
                input={
                    "url": f"{service.url}/effect/unkeyed",
                    "body": {"n": 1},
                    "idempotent": False,
                },
            )
            task = await store.tasks.create_task(spec, person_id=person.id, now=now)
            key = effect_key(task.id, 1, 0)

            async def effect_is(status: EffectStatus) -> bool:
                found = await store.effects.get_effect_by_key(key)
                return found is not None and found.status is status

            freeze = {"STEWARD_FAILPOINTS": f"{frozen_at}=stop"}
            a = procs["a"] = spawn("worker", db_url, logs / "a.log", *lease, env=freeze)
            await until(
                lambda: effect_is(EffectStatus.SENT), "A to mark it sent", procs, logs, WAIT_SECONDS
            )

            async def a_frozen() -> bool:
                return stopped(a.pid)

            await until(a_frozen, "A to freeze itself", procs, logs, WAIT_SECONDS)
            if await asyncio.to_thread(holds_task_lock, db_url, task.id):
                raise Unstaged
            assert (await client.stats()) == {}, "A sent before freezing"

            procs["scheduler"] = spawn("scheduler", db_url, logs / "scheduler.log")
            procs["b"] = spawn("worker", db_url, logs / "b.log", *lease)

            async def waiting_on_it() -> bool:
                return (await store.tasks.get_task(task.id)).status is TaskStatus.WAITING

            await until(waiting_on_it, "B to find the effect in doubt", procs, logs, WAIT_SECONDS)
            # the person looks at the service's records: it never arrived
            assert not (await client.applied(key))["applied"]
            effect = await store.effects.get_effect_by_key(key)
            assert effect is not None
            assert effect.status is EffectStatus.IN_DOUBT
            await Service(store, Clock()).resolve_effect(effect.id, applied=False)

            async def finished() -> bool:
                return (await store.tasks.get_task(task.id)).status.terminal

            await until(finished, "B to send it and finish", procs, logs, WAIT_SECONDS)
            done = await store.tasks.get_task(task.id)
            assert done.status is TaskStatus.SUCCEEDED, done.error

            a.send_signal(signal.SIGCONT)

            async def a_gave_up() -> bool:
                return bool(log_lines(logs / "a.log", *FENCE_LOG_LINES))

            await until(a_gave_up, "A to give up on the task", procs, logs, WAIT_SECONDS)
            assert a.poll() is None, "worker A crashed instead of shrugging off the fence"
            a_said = log_lines(logs / "a.log", "not sent", "fence", "lease lost")
            final = await store.effects.get_effect_by_key(key)
            assert final is not None
            assert (final.status, final.attempts) == (EffectStatus.SUCCEEDED, 2)
            stats = await client.stats()
            return {key: stats[key]}, a_said
    finally:
        for proc in procs.values():
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            proc.wait()
        await store.close()


# --- in one process ---------------------------------------------------------------------------


async def _claimed_run(store: Store, clock: SimulatedClock, person: Person) -> TaskRun:
    await store.tasks.create_task(TaskSpec(kind="pay"), person_id=person.id, now=clock.now())
    [claim] = await store.tasks.claim_tasks(
        worker="w", limit=1, lease_seconds=30, now=clock.now(), lease_now=clock.lease_now()
    )
    return TaskRun(store=store, clock=clock, claim=claim)


async def test_a_sender_past_its_send_deadline_records_that_it_did_not_send(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """Marked sent with no lease left (its lease runs out at this very instant), the sender's
    deadline has passed before the request would start: the service is never called and the
    effect is back to planned, with no send counted, so a later owner knows it never left."""
    run = await _claimed_run(store, clock, person)
    clock.advance(timedelta(seconds=30))  # the lease expires now: still held, nothing left
    calls: list[tuple[str, str]] = []

    async def call(key: str, fence: str) -> Any:
        calls.append((key, fence))
        return {"ok": True}

    with pytest.raises(RetryLater, match="send deadline"):
        await run.effect("pay", {"amount": 5}, call, idempotent=False)
    assert calls == []
    [effect] = await store.effects.list_effects(task_id=run.task.id)
    assert (effect.status, effect.attempts) == (EffectStatus.PLANNED, 0)
    assert effect.error == "not sent: its send deadline passed before the request started"


async def test_an_in_doubt_effect_not_resent_in_time_stays_in_doubt(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """Re-sending an in-doubt effect under its key, past the send deadline before the request:
    not sent, and back in doubt (an earlier send may have happened), its count unchanged."""
    run = await _claimed_run(store, clock, person)
    planned = await store.effects.plan_effect(
        run.fence,
        key=effect_key(run.task.id, 1, 0),
        step_seq=1,
        tool="pay",
        args={"amount": 5},
        idempotent=True,
        now=clock.now(),
        lease_now=clock.lease_now(),
    )
    await store.effects.mark_effect_sent(
        run.fence, planned.id, now=clock.now(), lease_now=clock.lease_now()
    )
    clock.advance(timedelta(seconds=30))  # the lease expires now: still held, nothing left

    async def call(key: str, fence: str) -> Any:
        raise AssertionError("not sent past its deadline")

    with pytest.raises(RetryLater, match="send deadline"):
        await run.effect("pay", {"amount": 5}, call, idempotent=True)
    effect = await store.effects.get_effect(planned.id)
    assert (effect.status, effect.attempts) == (EffectStatus.IN_DOUBT, 1)


async def test_a_sender_hands_the_fencing_token_to_the_service(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    run = await _claimed_run(store, clock, person)
    calls: list[tuple[str, str]] = []

    async def call(key: str, fence: str) -> Any:
        calls.append((key, fence))
        return {"ok": True}

    assert await run.effect("pay", {"amount": 5}, call, idempotent=False) == {"ok": True}
    assert calls == [(effect_key(run.task.id, 1, 0), f"{run.task.id}:{run.task.epoch}")]


async def test_not_applied_is_refused_until_the_send_deadline_and_says_when(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """An effect whose request failed (outcome unknown) is in doubt at once, but the worker
    that sent it had until the lease's expiry: deciding it did not happen is refused until
    then, with a message saying when; deciding it happened is possible at once; after the
    deadline, "not applied" goes through."""
    run = await _claimed_run(store, clock, person)
    sent_at = clock.now()

    async def reset(key: str, fence: str) -> Any:
        raise ConnectionResetError("connection reset by peer")

    with pytest.raises(RetryLater):
        await run.effect("pay", {"amount": 5}, reset, idempotent=False)
    [effect] = await store.effects.list_effects(task_id=run.task.id)
    assert effect.status is EffectStatus.IN_DOUBT
    deadline = sent_at + timedelta(seconds=30)
    assert effect.send_deadline == deadline
    service = Service(store, clock)
    clock.advance(timedelta(seconds=20))
    with pytest.raises(EffectMaybeInFlight) as refused:
        await service.resolve_effect(effect.id, applied=False)
    message = str(refused.value)
    assert f"until {deadline:%Y-%m-%d %H:%M:%S} UTC" in message
    assert "from then on (in 10 s)" in message
    assert (await store.effects.get_effect(effect.id)).status is EffectStatus.IN_DOUBT
    clock.advance(timedelta(seconds=11))
    resolved = await service.resolve_effect(effect.id, applied=False)
    assert resolved.status is EffectStatus.PLANNED


async def test_a_reconciled_not_applied_effect_is_not_resent_before_the_send_deadline(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """A reconcile hook that says "not applied" while the effect's sender may still be sending
    it does not get it sent again: the step is retried once the deadline has passed."""
    run = await _claimed_run(store, clock, person)
    sends: list[str] = []

    async def reset(key: str, fence: str) -> Any:
        raise ConnectionResetError("connection reset by peer")

    async def call(key: str, fence: str) -> Any:
        sends.append(key)
        return {"ok": True}

    async def not_applied(key: str) -> tuple[bool, Any] | None:
        return False, None

    with pytest.raises(RetryLater):
        await run.effect("pay", {}, reset, idempotent=False)
    clock.advance(timedelta(seconds=10))
    again = TaskRun(store=store, clock=clock, claim=run.claim)  # the step runs again
    with pytest.raises(RetryLater) as later:
        await again.effect("pay", {}, call, idempotent=False, reconcile=not_applied)
    assert later.value.delay_seconds == 20
    assert sends == []
    assert (await store.effects.list_effects(task_id=run.task.id))[
        0
    ].status is EffectStatus.IN_DOUBT
