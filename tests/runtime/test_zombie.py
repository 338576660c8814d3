"""Invariant 3, with real processes: a worker that lost its lease cannot write.

Worker A sends an effect and hangs on it (the service holds the request); the test freezes A
with SIGSTOP until its lease lapses, a scheduler reaps it and worker B takes the task over and
finishes it. Then A is thawed with SIGCONT and gets its answer late: every write it still tries
(effect result, checkpoint, outcome) must bounce off the fence.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from steward.domain import TaskSpec, TaskStatus
from steward.domain.journal import EffectStatus
from steward.domain.outcome import Succeed
from steward.errors import LeaseLost
from steward.store import Fence, FinalStep, Store
from steward.testing.effect_service import EffectServiceClient, run_effect_service
from steward.testing.posting import connect_local_service
from support.processes import holds_task_lock, spawn, until
from support.startup import scaled

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("startup")]

LEASE_SECONDS = 2.0
"""On a quiet machine; stretched on a busy one, where a lease this short would lapse at random."""
FENCE_LOG_LINES = (
    "activation rejected by fence",
    "outcome rejected by fence",
    "activation abandoned: lease lost",
)


def worker_pid(worker_name: str) -> int:
    """Workers are named ``host:pid:random``."""
    return int(worker_name.split(":")[-2])


async def snapshot(store: Store, task_id: str) -> tuple[Any, ...]:
    """Everything the journal holds about the task."""
    return (
        await store.tasks.get_task(task_id),
        await store.activations.list_steps(task_id),
        await store.effects.list_effects(task_id=task_id),
        await store.activations.list_activations(task_id=task_id),
    )


def fence_messages(log: Path) -> list[str]:
    """What the worker logged about losing its lease."""
    text = log.read_text()
    return [line for line in FENCE_LOG_LINES if line in text]


async def test_zombie_worker_writes_nothing_after_losing_its_lease(
    db_url: str, tmp_path: Path
) -> None:
    """A SIGSTOPped worker whose lease lapsed, resumed after another worker finished its task,
    changes no task, step, effect or activation row, and sends nothing more; the effect it had
    sent is applied once at the service, although both workers sent it under the same key."""
    store = await Store.open(db_url)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    lease = ["--lease-seconds", str(scaled(LEASE_SECONDS))]
    try:
        with run_effect_service() as service:
            client = EffectServiceClient(service.url)
            now = datetime.now(UTC)
            person = await store.persons.create_person(name="zombie", now=now)
            await connect_local_service(store, person.id, service.url, now=now)
            spec = TaskSpec(
                kind="http_post",
                input={"url": f"{service.url}/effect", "body": {"n": 1}, "calls": 2},
            )
            task = await store.tasks.create_task(spec, person_id=person.id, now=now)
            key1, key2 = f"{task.id}:1:0", f"{task.id}:2:0"

            async def sent(key: str, times: int) -> bool:
                return (await client.stats()).get(key, {}).get("requests", 0) >= times

            await client.control(hold=True)
            a = procs["a"] = spawn("worker", db_url, tmp_path / "a.log", *lease)
            await until(lambda: sent(key1, 1), "A to send the effect", procs, tmp_path, scaled(15))
            for _ in range(10):
                a.send_signal(signal.SIGSTOP)
                if not await asyncio.to_thread(holds_task_lock, db_url, task.id):
                    break
                a.send_signal(signal.SIGCONT)
                await asyncio.sleep(0.1)
            else:
                pytest.fail("could not freeze worker A outside a transaction")
            frozen = await store.tasks.get_task(task.id)
            assert frozen.status is TaskStatus.RUNNING
            assert frozen.epoch == 1
            assert frozen.lease_owner is not None
            assert worker_pid(frozen.lease_owner) == a.pid

            # A's lease lapses while it is frozen; the reaper re-queues, B takes over.
            procs["scheduler"] = spawn("scheduler", db_url, tmp_path / "scheduler.log")
            b = procs["b"] = spawn("worker", db_url, tmp_path / "b.log", *lease)
            await until(
                lambda: sent(key1, 2), "worker B to resend the effect", procs, tmp_path, scaled(30)
            )
            await client.control(hold=False)

            async def finished() -> bool:
                return (await store.tasks.get_task(task.id)).status.terminal

            await until(finished, "worker B to finish the task", procs, tmp_path, scaled(30))
            before = await snapshot(store, task.id)
            done, steps, effects, activations = before
            assert done.status is TaskStatus.SUCCEEDED, done.error
            assert done.epoch == 2
            assert done.attempts == 1  # the lost lease counts as a failed attempt
            act_a, act_b = activations
            assert (worker_pid(act_a.worker), act_a.epoch) == (a.pid, 1)
            assert (act_a.outcome, act_a.steps) == ("lost", 0)
            assert (worker_pid(act_b.worker), act_b.epoch, act_b.reason) == (b.pid, 2, "recovered")
            assert (act_b.outcome, act_b.steps) == ("succeed", 2)
            assert [(s.seq, s.activation_id) for s in steps] == [(1, act_b.id), (2, act_b.id)]
            first, second = effects
            assert (first.key, first.status, first.attempts) == (key1, EffectStatus.SUCCEEDED, 2)
            assert (second.key, second.status, second.attempts) == (key2, EffectStatus.SUCCEEDED, 1)
            applied = await client.applied(key1)
            assert first.result == applied["response"]
            assert done.result == [first.result, second.result]

            # Thaw A: its answer arrives now, long after it lost the lease.
            a.send_signal(signal.SIGCONT)

            async def a_gave_up() -> bool:
                return bool(fence_messages(tmp_path / "a.log"))

            await until(
                a_gave_up, "worker A to notice it lost the lease", procs, tmp_path, scaled(30)
            )
            assert a.poll() is None, "worker A crashed instead of shrugging off the fence"
            print(f"\nzombie worker A logged: {fence_messages(tmp_path / 'a.log')}")

            # Which of A's late writes meets the fence first is a race inside A (its lease
            # renewal or the effect result). So also make each write A could still attempt,
            # with A's fence, through the same store API: every one must be refused.
            fence = Fence(task.id, act_a.epoch, act_a.id)
            now = datetime.now(UTC)
            late_writes: dict[str, Callable[[], Awaitable[object]]] = {
                "renew lease": lambda: store.tasks.renew_lease(fence, lease_seconds=LEASE_SECONDS),
                "effect result": lambda: store.effects.set_effect_status(
                    fence, first.id, EffectStatus.SUCCEEDED, now=now, result={"late": True}
                ),
                "checkpoint": lambda: store.activations.checkpoint(
                    fence, seq=1, kind="step", output=None, state={"late": True}, now=now
                ),
                "next effect": lambda: store.effects.plan_effect(
                    fence,
                    key=f"{task.id}:2:9",
                    step_seq=2,
                    tool="http_post",
                    args={},
                    idempotent=True,
                    now=now,
                ),
                "outcome": lambda: store.activations.finish_activation(
                    fence, Succeed(result="late"), now=now, steps_taken=1
                ),
                "deciding step with its outcome": lambda: store.activations.finish_activation(
                    fence,
                    Succeed(result="late"),
                    now=now,
                    steps_taken=1,
                    final_step=FinalStep(seq=1, kind="step", output="succeed", state={}),
                ),
            }
            refused = []
            for what, write in late_writes.items():
                try:
                    await write()
                except LeaseLost:
                    refused.append(what)
            assert refused == list(late_writes), "the fence let some of the zombie's writes in"
            after = await snapshot(store, task.id)
            stats = await client.stats()
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()
        await store.close()

    assert after == before, "the zombie changed the journal after losing its lease"
    # Both sends of step 1 carried the same key and were applied once; A sent nothing more.
    assert stats[key1] == {"requests": 2, "applied": 1, "senders": [a.pid, b.pid]}
    assert stats[key2] == {"requests": 1, "applied": 1, "senders": [b.pid]}
    assert set(stats) == {key1, key2}
