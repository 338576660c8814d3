"""Web watches in the store, on both backends: claims under lease (once across claimers),
checks recorded with their reading and event in one transaction, readings bounded."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal

import pytest

from steward.domain import TaskSpec, Trigger, TriggerKind
from steward.domain.ids import new_id
from steward.domain.webwatch import (
    MAX_READINGS,
    WEB_CHANGED,
    Condition,
    ConditionKind,
    Extract,
    Extractor,
    Value,
    WebWatch,
)
from steward.errors import NotFound
from steward.store import Store
from steward.store.webwatches import CheckResult
from support.clock import START


async def _person(store: Store) -> str:
    return (await store.persons.create_person(name="ana", now=START)).id


def _watch(person_id: str, **changes: object) -> WebWatch:
    watch = WebWatch(
        id=new_id("wch"),
        person_id=person_id,
        goal_id=None,
        trigger_id=None,
        name="Laptop",
        url="https://shop.example/laptop",
        extract=Extract(how=Extractor.CSS, expr=".price"),
        conditions=(Condition(kind=ConditionKind.BELOW, threshold=Decimal(1000)),),
        interval_seconds=3600.0,
        jitter_seconds=60.0,
        enabled=True,
        created_at=START,
        next_check_at=START,
    )
    return replace(watch, **changes)  # type: ignore[arg-type]


def _result(at: datetime, text: str, *, changed: bool, event: bool = False) -> CheckResult:
    return CheckResult(
        at=at,
        next_check_at=at + timedelta(hours=1),
        value=Value(text=text, number=Decimal(text.strip("€")), currency="€"),
        matched=event,
        changed=changed,
        etag='"v1"',
        last_modified=None,
        event={"watch_id": "x", "new": text, "untrusted": True} if event else None,
    )


async def test_create_with_a_goal_trigger_and_read_back(store: Store) -> None:
    pid = await _person(store)
    goal = await store.goals.create_goal(person_id=pid, title="buy a laptop", now=START)
    watch = _watch(pid, goal_id=goal.id, trigger_id=new_id("trg"))
    trigger = Trigger(
        id=watch.trigger_id or "",
        person_id=pid,
        goal_id=goal.id,
        name="Laptop changed",
        kind=TriggerKind.EVENT,
        spec=WEB_CHANGED,
        match={"watch_id": watch.id},
        task=TaskSpec(kind="agent"),
        next_fire_at=None,
        created_at=START,
    )
    created = await store.webwatches.create(watch, trigger)
    assert created == watch
    assert await store.webwatches.list_for(pid) == [watch]
    assert (await store.schedule.get_trigger(trigger.id)).match == {"watch_id": watch.id}
    paused = await store.webwatches.set_enabled(watch.id, enabled=False, now=START)
    assert not paused.enabled
    assert not (await store.schedule.get_trigger(trigger.id)).enabled
    await store.webwatches.delete(watch.id)
    with pytest.raises(NotFound):
        await store.webwatches.get(watch.id)
    assert not (await store.schedule.get_trigger(trigger.id)).enabled


async def test_a_goal_of_someone_else_stores_nothing(store: Store) -> None:
    pid = await _person(store)
    other = (await store.persons.create_person(name="bo", now=START)).id
    goal = await store.goals.create_goal(person_id=other, title="theirs", now=START)
    with pytest.raises(NotFound):
        await store.webwatches.create(_watch(pid, goal_id=goal.id))
    assert await store.webwatches.list_for(pid) == []


async def test_due_watches_are_claimed_once_across_two_claimers(store: Store) -> None:
    pid = await _person(store)
    for n in range(40):
        await store.webwatches.create(_watch(pid, next_check_at=START + timedelta(seconds=n)))
    await store.webwatches.create(_watch(pid, next_check_at=START + timedelta(days=1)))
    await store.webwatches.create(_watch(pid, enabled=False))
    now = START + timedelta(minutes=1)

    async def claim(holder: str) -> list[str]:
        taken: list[str] = []
        while batch := await store.webwatches.claim_due(
            holder=holder, now=now, limit=7, lease_seconds=60, lease_now=now
        ):
            taken += [w.id for w in batch]
        return taken

    a, b = await asyncio.gather(claim("a"), claim("b"))
    assert len(a) + len(b) == 40
    assert not set(a) & set(b)
    # while leased, nobody else gets them; when the lease lapses, they are due again
    assert (
        await store.webwatches.claim_due(
            holder="c", now=now, limit=100, lease_seconds=60, lease_now=now
        )
        == []
    )
    later = now + timedelta(seconds=61)
    again = await store.webwatches.claim_due(
        holder="c", now=later, limit=100, lease_seconds=60, lease_now=later
    )
    assert len(again) == 40
    assert all(w.checks == 2 for w in again)
    assert await store.webwatches.next_due() == later + timedelta(seconds=60)


async def test_a_check_stores_state_reading_and_event_together(store: Store) -> None:
    pid = await _person(store)
    watch = await store.webwatches.create(_watch(pid))
    [claimed] = await store.webwatches.claim_due(
        holder="a", now=START, limit=10, lease_seconds=60, lease_now=START
    )
    stored = await store.webwatches.record_check(
        claimed, holder="a", result=_result(START, "€999", changed=False, event=True)
    )
    assert stored is not None
    event, new = stored
    assert new
    assert event.type == WEB_CHANGED
    assert event.payload["new"] == "€999"
    after = await store.webwatches.get(watch.id)
    assert after.value == Value(text="€999", number=Decimal(999), currency="€")
    assert after.matched
    assert after.etag == '"v1"'
    assert after.next_check_at == START + timedelta(hours=1)
    assert [r.value.text for r in await store.webwatches.readings(watch.id)] == ["€999"]
    # the same claim recorded again (a retry) changes nothing: the lease is released
    assert (
        await store.webwatches.record_check(
            claimed, holder="a", result=_result(START, "€999", changed=False, event=True)
        )
        is None
    )
    assert len([e for e in await store.schedule.list_events(person_id=pid)]) == 1


async def test_a_lost_claim_records_nothing(store: Store) -> None:
    pid = await _person(store)
    watch = await store.webwatches.create(_watch(pid))
    [mine] = await store.webwatches.claim_due(
        holder="a", now=START, limit=10, lease_seconds=60, lease_now=START
    )
    later = START + timedelta(minutes=5)
    [theirs] = await store.webwatches.claim_due(
        holder="b", now=later, limit=10, lease_seconds=60, lease_now=later
    )
    assert theirs.checks == mine.checks + 1
    result = _result(START, "€999", changed=True, event=True)
    assert await store.webwatches.record_check(mine, holder="a", result=result) is None
    failed = await store.webwatches.record_failure(mine, holder="a", error="x", retry_at=later)
    assert failed is None
    assert await store.schedule.list_events(person_id=pid) == []
    assert await store.webwatches.readings(watch.id) == []
    assert (await store.webwatches.get(watch.id)).value is None


async def test_failures_count_and_hold_the_watch(store: Store) -> None:
    pid = await _person(store)
    watch = await store.webwatches.create(_watch(pid))
    retry = START + timedelta(minutes=2)
    [claimed] = await store.webwatches.claim_due(
        holder="a", now=START, limit=10, lease_seconds=60, lease_now=START
    )
    assert (
        await store.webwatches.record_failure(claimed, holder="a", error="503", retry_at=retry) == 1
    )
    failing = await store.webwatches.get(watch.id)
    assert (failing.failures, failing.last_error, failing.next_check_at) == (1, "503", retry)
    assert (
        await store.webwatches.claim_due(
            holder="a", now=START + timedelta(minutes=1), limit=10, lease_seconds=60
        )
        == []
    )


async def test_readings_are_bounded(store: Store) -> None:
    pid = await _person(store)
    watch = await store.webwatches.create(_watch(pid))
    at = START
    for n in range(MAX_READINGS + 5):
        [claimed] = await store.webwatches.claim_due(
            holder="a", now=at, limit=1, lease_seconds=60, lease_now=at
        )
        await store.webwatches.record_check(
            claimed, holder="a", result=_result(at, f"€{n}", changed=True)
        )
        at += timedelta(hours=1)
    readings = await store.webwatches.readings(watch.id)
    assert len(readings) == MAX_READINGS
    assert readings[0].value.text == "€5"
    assert readings[-1].value.text == f"€{MAX_READINGS + 4}"
