"""The facade gives every conversation an audience in one spelling and refuses a bad one
before anything is stored."""

from __future__ import annotations

import pytest

from steward.domain import TaskSpec, TriggerKind
from steward.domain.audience import Audience
from steward.domain.clock import SimulatedClock
from steward.errors import UsageError
from steward.service import Service
from steward.store import Store


@pytest.fixture
async def svc(store: Store, clock: SimulatedClock) -> Service:
    return Service(store, clock)


async def test_asking_records_who_hears_the_conversation(svc: Service) -> None:
    person = await svc.ensure_person()
    alone = await svc.ask_agent(person_id=person.id, instructions="what is my budget?")
    family = await svc.ask_agent(
        person_id=person.id,
        instructions="plan the picnic",
        chat=True,
        audience=Audience.parse("group:family"),
    )
    assert alone.input["audience"] == "private"
    assert family.input["audience"] == "group:family"


async def test_a_bad_audience_is_refused_and_nothing_is_stored(svc: Service) -> None:
    person = await svc.ensure_person()
    bad = TaskSpec(kind="agent", input={"instructions": "x", "audience": "everyone"})
    with pytest.raises(UsageError, match="bad audience 'everyone'"):
        await svc.create_task(person_id=person.id, spec=bad)
    with pytest.raises(UsageError, match="bad audience"):
        await svc.add_trigger(
            person_id=person.id, kind=TriggerKind.CRON, spec="0 8 * * *", task=bad
        )
    assert await svc.list_tasks(person_id=person.id) == []
    assert await svc.list_triggers(person_id=person.id) == []


async def test_an_audience_is_kept_in_its_one_spelling(svc: Service) -> None:
    person = await svc.ensure_person()
    spec = TaskSpec(kind="agent", input={"instructions": "x", "audience": " group:family "})
    task = await svc.create_task(person_id=person.id, spec=spec)
    trigger = await svc.add_trigger(
        person_id=person.id, kind=TriggerKind.CRON, spec="0 8 * * *", task=spec
    )
    assert task.input["audience"] == "group:family"
    assert trigger.task.input["audience"] == "group:family"
