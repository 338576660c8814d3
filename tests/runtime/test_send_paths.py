"""What a sender does between its send deadline check and the bytes leaving, in one process.

An effect goes through the egress broker, which still reads the database, resolves the host
and connects before its request starts. A request that would start past the effect's send
deadline is not sent at all; a failure before any byte left (the database away during those
lookups, no address accepting the connection) leaves the effect as it was — not in doubt —
and the step is tried again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from steward.domain import Connection, EffectStatus, Person, TaskSpec
from steward.domain.clock import SimulatedClock
from steward.domain.secrets import SecretInfo
from steward.errors import DatabaseUnavailable, RetryLater
from steward.runtime.run import TaskRun
from steward.sentinel.egress import EgressBroker
from steward.sentinel.vault import Vault, VaultKeys, generate_key
from steward.store import Store
from steward.testing.effect_service import (
    EffectServiceClient,
    RunningService,
    run_effect_service,
)
from steward.testing.posting import connect_local_service

TRIES = 5
"""Runs before giving up on staging a scenario whose timing a busy machine can spoil."""


class Blip:
    """The broker's view of the store through a database that stalls, or is away."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.stall_seconds = 0.0
        self.away = False
        self.entered = False
        """Whether the broker got as far as its lookups (the tool was called)."""

    @property
    def secrets(self) -> Blip:
        return self

    @property
    def authority(self) -> Blip:
        return self

    async def list_connections(self, person_id: str) -> list[Connection]:
        self.entered = True
        if self.away:
            raise DatabaseUnavailable("connection refused")
        await asyncio.sleep(self.stall_seconds)
        return await self.store.authority.list_connections(person_id)

    async def secret_ciphertext(self, person_id: str, name: str) -> tuple[SecretInfo, str]:
        return await self.store.secrets.secret_ciphertext(person_id, name)

    async def put_secret(
        self,
        *,
        person_id: str,
        name: str,
        ciphertext: str,
        hosts: Iterable[str],
        now: datetime,
        actor: str = "person",
    ) -> SecretInfo:
        return await self.store.secrets.put_secret(
            person_id=person_id,
            name=name,
            ciphertext=ciphertext,
            hosts=hosts,
            now=now,
            actor=actor,
        )


@pytest.fixture
def service() -> Iterator[RunningService]:
    with run_effect_service() as running:
        yield running


@pytest.fixture
async def person(store: Store, clock: SimulatedClock, service: RunningService) -> Person:
    person = await store.persons.create_person(name="p", now=clock.now())
    await connect_local_service(store, person.id, service.url, now=clock.now())
    return person


async def _claimed_run(store: Store, clock: SimulatedClock, person: Person) -> TaskRun:
    task = await store.tasks.create_task(TaskSpec(kind="pay"), person_id=person.id, now=clock.now())
    claims = await store.tasks.claim_tasks(
        worker="w", limit=1, lease_seconds=30, now=clock.now(), lease_now=clock.lease_now()
    )
    [claim] = [c for c in claims if c.task.id == task.id]
    return TaskRun(store=store, clock=clock, claim=claim)


def _poster(broker: EgressBroker, person: Person, url: str) -> Any:
    async def call(key: str, fence: str) -> Any:
        response = await broker.request(
            person_id=person.id,
            method="POST",
            url=url,
            json={"n": 1},
            headers={"Idempotency-Key": key, "X-Steward-Fence": fence},
            actor="task:t",
        )
        return response.json()

    return call


def _broker(blip: Blip) -> EgressBroker:
    return EgressBroker(blip, Vault(VaultKeys(keys=(generate_key(),), source="test")))


async def test_a_request_that_would_start_past_its_send_deadline_is_not_sent(
    store: Store, clock: SimulatedClock, person: Person, service: RunningService
) -> None:
    """The send deadline was met when the tool was called, but the broker's database read
    stalled past it: the request is not sent, and the effect is back to planned with no send
    counted (on main the broker sent it late, when another worker may have resent it)."""
    blip = Blip(store)
    blip.stall_seconds = 1.5  # longer than the deadline below: half of 2 s of lease left
    call = _poster(_broker(blip), person, f"{service.url}/effect/unkeyed")
    for _ in range(TRIES):
        run = await _claimed_run(store, clock, person)
        clock.advance(timedelta(seconds=28))  # 2 s of lease left when it is marked sent
        blip.entered = False
        with pytest.raises(RetryLater, match="not sent") as late:
            await run.effect("post", {"n": 1}, call, idempotent=False)
        if blip.entered:
            break
        # the machine was so slow that it missed the deadline before calling the tool
        assert "could not start within its send deadline" in str(late.value)
    else:
        pytest.fail(f"the tool was never called within its deadline in {TRIES} runs")
    [effect] = await store.effects.list_effects(task_id=run.task.id)
    assert (effect.status, effect.attempts) == (EffectStatus.PLANNED, 0)
    assert effect.error is not None
    assert "send deadline" in effect.error
    assert await EffectServiceClient(service.url).stats() == {}


async def test_the_database_away_during_the_brokers_lookups_leaves_the_effect_planned(
    store: Store, clock: SimulatedClock, person: Person, service: RunningService
) -> None:
    """Nothing left: the effect is not in doubt (no person needed); the activation meets the
    outage as at any other write, and the task is resumed once the database answers."""
    blip = Blip(store)
    blip.away = True
    run = await _claimed_run(store, clock, person)
    call = _poster(_broker(blip), person, f"{service.url}/effect/unkeyed")
    with pytest.raises(DatabaseUnavailable):
        await run.effect("post", {"n": 1}, call, idempotent=False)
    [effect] = await store.effects.list_effects(task_id=run.task.id)
    assert (effect.status, effect.attempts) == (EffectStatus.PLANNED, 0)
    assert await EffectServiceClient(service.url).stats() == {}


async def test_a_refused_connection_leaves_the_effect_planned_and_retries(
    store: Store, clock: SimulatedClock, person: Person
) -> None:
    """No address accepted the connection (nothing listens on port 1): certainly not sent."""
    run = await _claimed_run(store, clock, person)
    call = _poster(_broker(Blip(store)), person, "http://127.0.0.1:1/effect/unkeyed")
    with pytest.raises(RetryLater, match="not sent"):
        await run.effect("post", {"n": 1}, call, idempotent=False)
    [effect] = await store.effects.list_effects(task_id=run.task.id)
    assert (effect.status, effect.attempts) == (EffectStatus.PLANNED, 0)
