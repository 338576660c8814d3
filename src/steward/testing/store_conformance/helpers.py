"""What the conformance tests share: a person, goal and task to work on, claims, outcomes,
checkpoints and triggers made the way the runtime makes them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import datetime, timedelta
from typing import Any, TypeVar

import pytest

from steward.domain import (
    Effect,
    Goal,
    MissedPolicy,
    Person,
    Task,
    TaskSpec,
    Trigger,
    TriggerKind,
)
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.domain.outcome import Claim, Outcome
from steward.store import Fence, Store

LEASE = 30.0
T = TypeVar("T")


async def durable(store: Store, aw: Awaitable[T]) -> T:
    """Await a durable write, failing at once if the backend's writer has died instead of
    waiting forever for a commit that will never come."""
    task = asyncio.ensure_future(aw)
    while True:
        done, _ = await asyncio.wait({task}, timeout=0.05)
        if done:
            return task.result()
        if not store.backend.writer_alive:
            task.cancel()
            pytest.fail("the store's writer died; this write would never complete")


async def new_person(store: Store, clock: SimulatedClock, *, max_concurrency: int = 4) -> Person:
    return await store.persons.create_person(
        name="Ada", now=clock.now(), max_concurrency=max_concurrency
    )


async def new_goal(store: Store, clock: SimulatedClock, person_id: str, **kw: Any) -> Goal:
    return await store.goals.create_goal(
        person_id=person_id, title="Follow #payments", now=clock.now(), **kw
    )


async def new_task(
    store: Store,
    clock: SimulatedClock,
    person_id: str,
    *,
    goal_id: str | None = None,
    priority: int = 0,
    max_attempts: int = 5,
    run_at: datetime | None = None,
    title: str = "",
) -> Task:
    spec = TaskSpec(kind="noop", priority=priority, max_attempts=max_attempts, title=title)
    return await store.tasks.create_task(
        spec, person_id=person_id, goal_id=goal_id, now=clock.now(), run_at=run_at
    )


async def claim(
    store: Store, clock: SimulatedClock, *, limit: int = 10, worker: str = "w1"
) -> list[Claim]:
    return await store.tasks.claim_tasks(
        worker=worker,
        limit=limit,
        lease_seconds=LEASE,
        now=clock.now(),
        lease_now=clock.lease_now(),
    )


async def claim_one(store: Store, clock: SimulatedClock, *, worker: str = "w1") -> Claim:
    claims = await claim(store, clock, limit=1, worker=worker)
    assert len(claims) == 1, claims
    return claims[0]


async def finish(
    store: Store, clock: SimulatedClock, c: Claim | Fence, outcome: Outcome, *, steps: int = 0
) -> Task:
    fence = c if isinstance(c, Fence) else Fence.of(c)
    return await store.activations.finish_activation(
        fence, outcome, now=clock.now(), steps_taken=steps, lease_now=clock.lease_now()
    )


async def checkpoint(
    store: Store, clock: SimulatedClock, fence: Fence, seq: int, state: dict[str, Any]
) -> str | None:
    return await store.activations.checkpoint(
        fence,
        seq=seq,
        kind="step",
        output={"seq": seq},
        state=state,
        now=clock.now(),
        lease_now=clock.lease_now(),
    )


def make_trigger(
    person_id: str,
    clock: SimulatedClock,
    *,
    kind: TriggerKind = TriggerKind.INTERVAL,
    spec: str = "3600",
    goal_id: str | None = None,
    next_fire_at: datetime | None = None,
    match: dict[str, Any] | None = None,
    enabled: bool = True,
) -> Trigger:
    return Trigger(
        id=new_id("trg"),
        person_id=person_id,
        goal_id=goal_id,
        name=f"{kind} {spec}",
        kind=kind,
        spec=spec,
        match=match or {},
        task=TaskSpec(kind="noop", input={"from": "trigger"}, priority=3),
        enabled=enabled,
        missed_policy=MissedPolicy.RUN_ONCE,
        next_fire_at=next_fire_at,
        created_at=clock.now(),
    )


def later(clock: SimulatedClock, seconds: float) -> datetime:
    return clock.now() + timedelta(seconds=seconds)


async def plan(store: Store, clock: SimulatedClock, fence: Fence, key: str, **kw: Any) -> Effect:
    return await durable(
        store,
        store.effects.plan_effect(
            fence,
            key=key,
            step_seq=kw.get("step_seq", 1),
            tool=kw.get("tool", "email.send"),
            args=kw.get("args", {"to": "bob@example.com"}),
            idempotent=kw.get("idempotent", False),
            now=clock.now(),
            lease_now=clock.lease_now(),
        ),
    )
