"""The sentinel tests' world: a person with a mail connection, two tasks and a store-backed
sentinel (``support.sentinel.World``)."""

from __future__ import annotations

import pytest

from steward.domain import TaskSpec
from steward.domain.authority import Connection
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.sentinel.policy import PolicySentinel
from steward.store import Store
from support.sentinel import World


@pytest.fixture
async def w(store: Store, clock: SimulatedClock) -> World:
    me = await store.persons.create_person(name="me", now=clock.now())
    other = await store.persons.create_person(name="other", now=clock.now())
    spec = TaskSpec(kind="agent", title="t", input={})
    task = await store.tasks.create_task(spec, person_id=me.id, now=clock.now())
    other_task = await store.tasks.create_task(spec, person_id=me.id, now=clock.now())
    mail = await store.authority.add_connection(
        Connection(
            id=new_id("con"),
            person_id=me.id,
            kind="email",
            name="work mail",
            scopes=("email.read", "email.send"),
            hosts=("SMTP.example.com",),
            created_at=clock.now(),
        )
    )
    return World(
        store, clock, PolicySentinel(store, clock), me, other, task.id, other_task.id, mail
    )
