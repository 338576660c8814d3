"""Store conformance: effects: idempotent intents, the status machine, fenced writes, resolution."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from steward.domain import (
    Effect,
    EffectStatus,
    Person,
    TaskStatus,
    WaitCondition,
)
from steward.domain.clock import SimulatedClock
from steward.domain.outcome import Claim, Requeue, Wait
from steward.errors import EffectMaybeInFlight, InvalidTransition, LeaseLost, NotFound
from steward.store import Fence, Store
from steward.testing.store_conformance.helpers import (
    LEASE,
    claim,
    claim_one,
    durable,
    finish,
    new_person,
    new_task,
    plan,
)

# --- effects -----------------------------------------------------------------------------


async def _running(store: Store, clock: SimulatedClock) -> tuple[Person, Claim]:
    ada = await new_person(store, clock)
    await new_task(store, clock, ada.id)
    return ada, await claim_one(store, clock)


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
        store.effects.set_effect_status(
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
    assert await store.effects.get_effect_by_key(key) == first
    assert await store.effects.get_effect_by_key("nope") is None
    assert [e.id for e in await store.effects.list_effects(task_id=c.task.id)] == [
        first.id,
        other.id,
    ]


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
    assert await store.effects.get_effect_by_key(eff.key) == eff
    sent = await set_status(store, clock, fence, eff.id, EffectStatus.SENT)
    assert (sent.status, sent.attempts) == (EffectStatus.SENT, 1)
    assert sent.send_deadline == clock.now() + timedelta(seconds=LEASE)
    doubt = await set_status(store, clock, fence, eff.id, EffectStatus.IN_DOUBT, error="timeout")
    assert (doubt.status, doubt.error) == (EffectStatus.IN_DOUBT, "timeout")
    with pytest.raises(EffectMaybeInFlight):
        await set_status(store, clock, fence, eff.id, EffectStatus.SENT)
    assert await store.effects.get_effect_by_key(eff.key) == doubt
    clock.advance(timedelta(seconds=LEASE / 2))
    await store.tasks.renew_lease(fence, lease_seconds=LEASE, lease_now=clock.lease_now())
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
    assert await store.effects.get_effect_by_key(eff.key) == ok
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
            await store.tasks.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now())
    with pytest.raises(LeaseLost):
        await set_status(store, clock, fence, eff.id, EffectStatus.SENT)
    with pytest.raises(LeaseLost):
        await plan(store, clock, fence, f"{c.task.id}:1:1")
    with pytest.raises(LeaseLost):
        await plan(store, clock, fence, eff.key)
    assert [(e.id, e.status, e.attempts) for e in await store.effects.list_effects()] == [
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
    resolved = await store.effects.resolve_effect(eff.id, applied=applied, now=clock.now())
    assert resolved.status is (EffectStatus.SUCCEEDED if applied else EffectStatus.PLANNED)
    assert resolved.updated_at == clock.now()
    assert (await store.tasks.get_task(other.id)).status is TaskStatus.WAITING
    woken = await store.tasks.get_task(c.task.id)
    assert woken.status is TaskStatus.PENDING
    c2 = await claim_one(store, clock)
    assert (c2.task.id, c2.wake.to_json()) == (c.task.id, {"reason": "effect", "effect_id": eff.id})
    with pytest.raises(InvalidTransition):
        await store.effects.resolve_effect(eff.id, applied=applied, now=clock.now())
    with pytest.raises(NotFound):
        await store.effects.resolve_effect("eff_missing", applied=True, now=clock.now())


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
    assert [e.id for e in await store.effects.list_effects(task_id=ca.task.id)] == [ea.id]
    assert [e.id for e in await store.effects.list_effects(person_id=bob.id)] == [eb.id]
    assert [e.id for e in await store.effects.list_effects(status=EffectStatus.SENT)] == [eb.id]
    assert await store.effects.list_effects(status=EffectStatus.SENT, person_id=ada.id) == []
    assert [e.id for e in await store.effects.list_effects()] == [ea.id, eb.id]
    assert len(await store.effects.list_effects(limit=1)) == 1
