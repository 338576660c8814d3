"""Reads and bookkeeping of the facade the dashboard relies on, on both backends: marking a
notification read, the newest feed seq, the audit log newest first and tasks of one kind —
through a token, another person's objects answer exactly as ones that do not exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.domain import TaskSpec
from steward.domain.clock import SimulatedClock
from steward.errors import Forbidden, NotFound, UsageError
from steward.service import Service
from steward.store import Store
from support.tenancy import Tenant, make_tenant


@pytest.fixture
async def two(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> tuple[Tenant, Tenant, Service, Service]:
    """Ann and Bob, the owner's facade, and the facade bound to Ann's control token."""
    a = await make_tenant(store, clock, "ann", tmp_path)
    b = await make_tenant(store, clock, "bob", tmp_path)
    owner = Service(store, clock, data_dir=tmp_path)
    return a, b, owner, await owner.authenticate(a.control)


async def test_mark_read_of_anothers_or_a_missing_notification_is_not_found(
    two: tuple[Tenant, Tenant, Service, Service],
) -> None:
    a, b, owner, as_a = two
    answers = []
    for ident in (b.notification, "ntf_missing"):
        with pytest.raises(NotFound) as refused:
            await as_a.mark_read(ident)
        answers.append(str(refused.value).replace(ident, "<id>"))
    assert answers[0] == answers[1]
    with pytest.raises(NotFound):
        await owner.mark_read("ntf_missing")
    [bobs] = await owner.list_notifications(person_id=b.person.id)
    assert bobs.read_at is None
    as_a_reading = await owner.authenticate(a.read)
    await as_a_reading.mark_read(a.notification)  # a reader's own bookkeeping
    await as_a_reading.mark_read(a.notification)  # again: still read, no error
    [anns] = await owner.list_notifications(person_id=a.person.id)
    assert anns.read_at is not None


async def test_feed_head_is_the_persons_newest_seq(
    two: tuple[Tenant, Tenant, Service, Service], store: Store
) -> None:
    a, b, owner, as_a = two
    anns = await owner.feed(person_id=a.person.id, limit=1000)
    assert await as_a.feed_head(person_id="") == anns[-1].seq
    assert await owner.feed_head(person_id=a.person.id) == anns[-1].seq
    # Bob's later entries do not move Ann's head
    await owner.ask_agent(person_id=b.person.id, instructions="later")
    assert await as_a.feed_head(person_id="") == anns[-1].seq
    assert await owner.feed_head(person_id=b.person.id) > anns[-1].seq
    task = await as_a.ask_agent(person_id="", instructions="hello")
    [created] = await owner.feed(person_id=a.person.id, after_seq=anns[-1].seq)
    assert created.task_id == task.id
    assert await as_a.feed_head(person_id="") == created.seq
    with pytest.raises(NotFound):
        await as_a.feed_head(person_id=b.person.id)
    empty = await store.persons.create_person(name="cleo", now=owner.clock.now())
    assert await owner.feed_head(person_id=empty.id) == 0
    with pytest.raises(UsageError, match="which person"):
        await owner.feed_head(person_id="")


async def test_recent_audit_is_newest_first_and_the_persons_own(
    two: tuple[Tenant, Tenant, Service, Service],
) -> None:
    a, b, owner, as_a = two
    oldest_first = await owner.audit_log(person_id=a.person.id, limit=10_000)
    assert len(oldest_first) > 3
    newest_first = await as_a.recent_audit(person_id="", limit=1000)
    assert newest_first == oldest_first[::-1]
    page = await as_a.recent_audit(person_id="", limit=2)
    assert page == newest_first[:2]
    rest = await as_a.recent_audit(person_id="", before_seq=page[-1].seq, limit=1000)
    assert rest == newest_first[2:]
    assert {e.person_id for e in newest_first} == {a.person.id}
    with pytest.raises(NotFound):
        await as_a.recent_audit(person_id=b.person.id)
    for bad in ({"limit": 0}, {"limit": 1001}, {"before_seq": 0}):
        with pytest.raises(UsageError, match="limit is from 1 to 1000"):
            await as_a.recent_audit(person_id="", **bad)


async def test_list_tasks_of_one_kind(two: tuple[Tenant, Tenant, Service, Service]) -> None:
    a, b, owner, as_a = two
    asked = await as_a.ask_agent(person_id="", instructions="find a table")
    await owner.ask_agent(person_id=b.person.id, instructions="bob's question")
    assert [t.id for t in await as_a.list_tasks(kind="agent")] == [asked.id]
    assert [t.id for t in await as_a.list_tasks(kind="noop")] == [a.task.id]
    assert await as_a.list_tasks(kind="nothing.like.this") == []
    everyones = await owner.list_tasks(kind="agent")
    assert {t.person_id for t in everyones} == {a.person.id, b.person.id}
    assert [t.id for t in await owner.list_tasks(person_id=a.person.id, kind="agent")] == [asked.id]
    waits = TaskSpec(kind="wait_event", input={"type": "email.received"})
    waiting = await as_a.create_task(person_id="", spec=waits)
    pending = await as_a.list_tasks(kind="wait_event", status="pending")
    assert [t.id for t in pending] == [waiting.id]
    assert await as_a.list_tasks(kind="noop", status="pending") == []  # it is running
    with pytest.raises(UsageError, match="unknown status"):
        await as_a.list_tasks(status="asleep")
    with pytest.raises(NotFound):
        await as_a.list_tasks(person_id=b.person.id, kind="agent")
    as_a_reading = await owner.authenticate(a.read)
    assert [t.id for t in await as_a_reading.list_tasks(kind="agent")] == [asked.id]
    with pytest.raises(Forbidden):
        await as_a_reading.ask_agent(person_id="", instructions="no")
