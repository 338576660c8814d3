"""What happens to a task's effects when the task ends, and what a decision on one records.

* A task that ends for any reason (dead-lettered by the reaper or by its last retry, failed,
  cancelled, its goal ended) turns every effect it sent without an answer into an in-doubt
  effect the person sees, and closes the intents it never sent (``abandoned``).
* Such an effect can still be decided; the task stays as it ended, and the message and the
  audit log say so.
* "Applied" records the answer the person (or a reconcile hook) gives; without one, the step
  reads an explicit "applied; result unknown" marker, never a bare null.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from steward.cli.main import app
from steward.domain import EffectStatus, GoalStatus, Person, TaskSpec, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.domain.ids import effect_key
from steward.domain.journal import APPLIED_RESULT_UNKNOWN, resolution_summary
from steward.domain.outcome import Claim, Fail, Outcome, Retry, Succeed
from steward.errors import UsageError
from steward.runtime.stepfn import StepContext, StepHarness
from steward.runtime.worker import Worker
from steward.service import Service
from steward.store import Fence, Store
from support.clock import START

LEASE = 30.0


@pytest.fixture
async def person(store: Store, clock: SimulatedClock) -> Person:
    return await store.persons.create_person(name="p", now=clock.now(), max_concurrency=8)


async def sent_and_planned(
    store: Store, clock: SimulatedClock, person: Person, *, max_attempts: int = 1, **task: Any
) -> tuple[Claim, str, str]:
    """A claimed task that marked one effect sent (no answer recorded) and planned another.
    Returns the claim and the two effect ids."""
    await store.tasks.create_task(
        TaskSpec(kind="pay", max_attempts=max_attempts),
        person_id=person.id,
        now=clock.now(),
        **task,
    )
    [claim] = await store.tasks.claim_tasks(
        worker="w", limit=1, lease_seconds=LEASE, now=clock.now(), lease_now=clock.lease_now()
    )
    fence = Fence.of(claim)
    ids = []
    for index in (0, 1):
        effect = await store.effects.plan_effect(
            fence,
            key=effect_key(claim.task.id, 1, index),
            step_seq=1,
            tool="pay",
            args={"amount": 5},
            idempotent=False,
            now=clock.now(),
            lease_now=clock.lease_now(),
        )
        ids.append(effect.id)
    await store.effects.mark_effect_sent(
        fence, ids[0], now=clock.now(), lease_now=clock.lease_now()
    )
    return claim, ids[0], ids[1]


async def ends(store: Store, clock: SimulatedClock, claim: Claim, outcome: Outcome) -> None:
    await store.activations.finish_activation(
        Fence.of(claim), outcome, now=clock.now(), steps_taken=0, lease_now=clock.lease_now()
    )


async def statuses(store: Store, task_id: str) -> list[EffectStatus]:
    return [e.status for e in await store.effects.list_effects(task_id=task_id)]


@pytest.mark.parametrize(
    "how", ["reaped", "last retry", "failed", "succeeded", "cancelled", "goal ended"]
)
async def test_an_ended_task_leaves_its_unknown_effects_in_doubt_and_closes_its_intents(
    store: Store, clock: SimulatedClock, person: Person, how: str
) -> None:
    goal = await store.goals.create_goal(person_id=person.id, title="g", now=clock.now())
    last = how in ("reaped", "last retry")
    claim, sent, planned = await sent_and_planned(
        store, clock, person, max_attempts=1 if last else 5, goal_id=goal.id
    )
    task_id = claim.task.id
    expected = {
        "reaped": TaskStatus.DEAD_LETTERED,
        "last retry": TaskStatus.DEAD_LETTERED,
        "failed": TaskStatus.FAILED,
        "succeeded": TaskStatus.SUCCEEDED,
        "cancelled": TaskStatus.CANCELLED,
        "goal ended": TaskStatus.CANCELLED,
    }[how]
    if how == "reaped":  # its worker died holding it
        clock.advance(timedelta(seconds=LEASE + 1))
        assert await store.tasks.reap_expired_leases(
            now=clock.now(), lease_now=clock.lease_now()
        ) == [task_id]
    elif how == "last retry":
        await ends(store, clock, claim, Retry(reason="flaky", delay_seconds=1))
    elif how == "failed":
        await ends(store, clock, claim, Fail(reason="no"))
    elif how == "succeeded":
        await ends(store, clock, claim, Succeed(result=None))
    else:
        await ends(store, clock, claim, Retry(reason="once more", delay_seconds=600))
        assert (
            await store.tasks.get_task(task_id)
        ).status is TaskStatus.PENDING  # idle, then ended
        if how == "cancelled":
            await store.tasks.request_control(task_id, "cancel", now=clock.now())
        else:
            await store.goals.set_goal_status(goal.id, GoalStatus.CANCELLED, now=clock.now())
    assert (await store.tasks.get_task(task_id)).status is expected
    assert await statuses(store, task_id) == [EffectStatus.IN_DOUBT, EffectStatus.ABANDONED]
    in_doubt = await Service(store, clock).in_doubt_effects(person.id)
    assert [e.id for e in in_doubt] == [sent]
    said = expected.value.replace("_", "-")
    assert in_doubt[0].error == (
        f"outcome unknown: the task ended ({said}) before its answer was recorded"
    )
    assert (
        await store.effects.get_effect(planned)
    ).error == f"not sent: the task ended ({said}) first"


@pytest.mark.parametrize("applied", [True, False])
async def test_an_effect_of_an_ended_task_is_decided_and_the_task_stays_ended(
    store: Store, clock: SimulatedClock, person: Person, applied: bool
) -> None:
    claim, sent, _ = await sent_and_planned(store, clock, person)
    clock.advance(timedelta(seconds=LEASE + 1))
    await store.tasks.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now())
    before = await store.tasks.get_task(claim.task.id)
    assert before.status is TaskStatus.DEAD_LETTERED
    service = Service(store, clock)
    resolved = await service.resolve_effect(
        sent, applied=applied, result={"receipt": 7} if applied else None
    )
    after = await store.tasks.get_task(claim.task.id)
    assert after == before
    if applied:
        assert (resolved.status, resolved.result) == (EffectStatus.SUCCEEDED, {"receipt": 7})
        assert resolution_summary(resolved, after.status) == (
            "Recorded: pay happened; the task stays dead-lettered."
        )
    else:
        assert resolved.status is EffectStatus.ABANDONED
        assert resolution_summary(resolved, after.status) == (
            "Recorded: pay did not happen; the task stays dead-lettered, so it is not sent."
        )
    [entry] = [
        a for a in await store.audit.list_audit(person_id=person.id) if a.data.get("resolution")
    ]
    assert (entry.actor, entry.data["effect"], entry.data["task_status"]) == (
        "person",
        sent,
        "dead_lettered",
    )
    assert entry.data["resolution"] == ("applied" if applied else "not applied")
    assert await service.in_doubt_effects(person.id) == []


# --- the answer an "applied" decision records --------------------------------------------------


def pay_harness(sends: list[str]) -> StepHarness:
    harness = StepHarness()

    @harness.handler("pay")
    async def pay(ctx: StepContext) -> Outcome | None:
        async def call(key: str, fence: str) -> Any:
            sends.append(key)
            return {"receipt": key}

        return Succeed(result=await ctx.effect("pay", {"amount": 5}, call, idempotent=False))

    return harness


async def in_doubt_while_waiting(
    store: Store, clock: SimulatedClock, person: Person, worker: Worker
) -> tuple[str, str]:
    """A worker died between sending and recording; the next activation finds the effect in
    doubt and the task waits for the person. Returns (task id, effect id)."""
    claim, sent, _ = await sent_and_planned(store, clock, person, max_attempts=5)
    clock.advance(timedelta(seconds=LEASE + 1))
    await store.tasks.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now())
    await worker.run_until_idle()
    assert (await store.tasks.get_task(claim.task.id)).status is TaskStatus.WAITING
    return claim.task.id, sent


@pytest.mark.parametrize(
    ("given", "reads"), [({"receipt": "r-42"}, {"receipt": "r-42"}), (None, APPLIED_RESULT_UNKNOWN)]
)
async def test_the_step_reads_the_answer_given_with_applied_or_that_it_is_unknown(
    store: Store, clock: SimulatedClock, person: Person, given: Any, reads: Any
) -> None:
    sends: list[str] = []
    worker = Worker(store, pay_harness(sends), clock, lease_seconds=LEASE, poll_seconds=None)
    task_id, effect_id = await in_doubt_while_waiting(store, clock, person, worker)
    service = Service(store, clock)
    resolved = await service.resolve_effect(effect_id, applied=True, result=given)
    said = "Recorded: pay happened; the task goes on."
    if given is None:
        said = "Recorded: pay happened (its result is recorded as unknown); the task goes on."
    assert resolution_summary(resolved, TaskStatus.PENDING) == said
    await worker.run_until_idle()
    done = await store.tasks.get_task(task_id)
    assert (done.status, done.result) == (TaskStatus.SUCCEEDED, reads)
    assert sends == []
    with pytest.raises(UsageError, match="only with an effect that happened"):
        await service.resolve_effect(effect_id, applied=False, result={"x": 1})


async def test_a_reconcile_hook_that_confirms_without_an_answer_records_it_as_unknown(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    harness = StepHarness()

    async def reconcile(key: str) -> tuple[bool, Any] | None:
        return True, None

    @harness.handler("pay")
    async def pay(ctx: StepContext) -> Outcome | None:
        async def call(key: str, fence: str) -> Any:
            raise AssertionError("an applied effect is not sent again")

        result = await ctx.effect("pay", {}, call, idempotent=False, reconcile=reconcile)
        return Succeed(result=result)

    claim, _, _ = await sent_and_planned(store, clock, person, max_attempts=5)
    clock.advance(timedelta(seconds=LEASE + 1))
    await store.tasks.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now())
    await Worker(store, harness, clock, lease_seconds=LEASE, poll_seconds=None).run_until_idle()
    done = await store.tasks.get_task(claim.task.id)
    assert (done.status, done.result) == (TaskStatus.SUCCEEDED, APPLIED_RESULT_UNKNOWN)


def test_cli_resolve_takes_the_result_as_json_and_says_what_changed(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'cli.db'}"

    async def setup() -> tuple[str, str]:
        store = await Store.open(db)
        try:
            clock = SimulatedClock(START)
            person = await store.persons.create_person(name="p", now=clock.now())
            claim, sent, _ = await sent_and_planned(store, clock, person)
            clock.advance(timedelta(seconds=LEASE + 1))
            await store.tasks.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now())
            return claim.task.id, sent
        finally:
            await store.close()

    _, effect_id = asyncio.run(setup())
    runner = CliRunner()
    bad = runner.invoke(
        app, ["effect", "resolve", effect_id, "--applied", "--result", "{x", "--db", db]
    )
    assert bad.exit_code != 0
    assert "not JSON" in bad.output
    wrong = runner.invoke(
        app, ["effect", "resolve", effect_id, "--not-applied", "--result", "{}", "--db", db]
    )
    assert wrong.exit_code != 0
    assert "--result goes only with --applied" in wrong.output
    ok = runner.invoke(
        app,
        ["effect", "resolve", effect_id, "--applied", "--result", '{"receipt": 9}', "--db", db],
    )
    assert ok.exit_code == 0, ok.output
    assert "Recorded: pay happened; the task stays dead-lettered." in ok.output
    assert '"receipt": 9' in runner.invoke(app, ["effect", "list", "--json", "--db", db]).output
