"""Store conformance: watch cursors, stored with the events a poll found."""

from __future__ import annotations

from datetime import timedelta

import pytest

from steward.domain.authority import Connection
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.domain.watch import Found
from steward.errors import NotFound
from steward.store import Store
from steward.testing.store_conformance.helpers import new_person


async def _connection(store: Store, clock: SimulatedClock, person_id: str) -> Connection:
    return await store.authority.add_connection(
        Connection(
            id=new_id("con"),
            person_id=person_id,
            kind="mail",
            name="home mail",
            scopes=("mail.read",),
            created_at=clock.now(),
            settings={"imap_host": "127.0.0.1"},
        )
    )


async def test_a_poll_stores_its_events_and_cursor_together_once(
    store: Store, clock: SimulatedClock
) -> None:
    person = (await new_person(store, clock)).id
    con = await _connection(store, clock, person)
    assert con.settings == {"imap_host": "127.0.0.1"}
    assert await store.watches.get(con.id, "mail.received") is None
    found = [
        Found(type="mail.received", dedupe_key=f"mail:{con.id}:<{n}@x>", payload={"uid": n})
        for n in (1, 2)
    ]
    first = await store.watches.record(
        person_id=person,
        connection_id=con.id,
        source="mail.received",
        found=found,
        cursor={"last_uid": 2},
        now=clock.now(),
    )
    assert [created for _, created in first] == [True, True]
    # the same changes found again (a crash before the cursor was seen): stored once
    clock.advance(timedelta(seconds=5))
    again = await store.watches.record(
        person_id=person,
        connection_id=con.id,
        source="mail.received",
        found=found[1:],
        cursor={"last_uid": 2},
        now=clock.now(),
    )
    assert [created for _, created in again] == [False]
    assert again[0][0].id == first[1][0].id
    state = await store.watches.get(con.id, "mail.received")
    assert state is not None
    assert state.cursor == {"last_uid": 2}
    assert state.failures == 0
    events = await store.schedule.list_events(person_id=person)
    assert sorted(e.payload["uid"] for e in events) == [1, 2]
    assert {e.source for e in events} == {f"connection:{con.id}"}


async def test_failures_count_up_keep_the_cursor_and_reset_on_success(
    store: Store, clock: SimulatedClock
) -> None:
    person = (await new_person(store, clock)).id
    con = await _connection(store, clock, person)
    await store.watches.record(
        person_id=person,
        connection_id=con.id,
        source="mail.received",
        found=[],
        cursor={"last_uid": 9},
        now=clock.now(),
    )
    retry = clock.now() + timedelta(minutes=5)
    for expected in (1, 2, 3):
        failures = await store.watches.record_failure(
            connection_id=con.id,
            source="mail.received",
            error="refused",
            now=clock.now(),
            retry_at=retry,
        )
        assert failures == expected
    state = await store.watches.get(con.id, "mail.received")
    assert state is not None
    assert (state.cursor, state.failures, state.last_error) == ({"last_uid": 9}, 3, "refused")
    assert state.retry_at == retry
    await store.watches.record(
        person_id=person,
        connection_id=con.id,
        source="mail.received",
        found=[],
        cursor={"last_uid": 10},
        now=clock.now(),
    )
    state = await store.watches.get(con.id, "mail.received")
    assert state is not None
    assert (state.cursor, state.failures, state.last_error) == ({"last_uid": 10}, 0, None)
    assert state.retry_at is None
    assert [s.source for s in await store.watches.list_for(person)] == ["mail.received"]


async def test_a_first_poll_that_fails_leaves_no_cursor(
    store: Store, clock: SimulatedClock
) -> None:
    """The next poll is still a first run (from now), not one from the very beginning."""
    person = (await new_person(store, clock)).id
    con = await _connection(store, clock, person)
    await store.watches.record_failure(
        connection_id=con.id,
        source="mail.received",
        error="connection refused",
        now=clock.now(),
        retry_at=clock.now(),
    )
    state = await store.watches.get(con.id, "mail.received")
    assert state is not None
    assert (state.cursor, state.failures) == (None, 1)


async def test_nothing_is_recorded_for_a_disconnected_account(
    store: Store, clock: SimulatedClock
) -> None:
    person = (await new_person(store, clock)).id
    con = await _connection(store, clock, person)
    await store.authority.disconnect(con.id, person_id=person, now=clock.now())
    with pytest.raises(NotFound):
        await store.watches.record(
            person_id=person,
            connection_id=con.id,
            source="mail.received",
            found=[Found(type="mail.received", dedupe_key="k", payload={})],
            cursor={"last_uid": 1},
            now=clock.now(),
        )
    assert await store.schedule.list_events(person_id=person) == []
    assert con.id not in {c.id for c in await store.authority.list_active_connections()}


async def test_a_connection_that_never_worked_is_removed_without_a_trace_but_the_audit(
    store: Store, clock: SimulatedClock
) -> None:
    person = (await new_person(store, clock)).id
    other = (await new_person(store, clock)).id
    con = await _connection(store, clock, person)
    await store.watches.record_failure(
        connection_id=con.id,
        source="mail.received",
        error="refused",
        now=clock.now(),
        retry_at=clock.now(),
    )
    held = await store.authority.policy_read(person, known=None, now=clock.now())
    assert [c.id for c in held.connections] == [con.id]
    with pytest.raises(NotFound):
        await store.authority.remove_connection(con.id, person_id=other, now=clock.now())

    await store.authority.remove_connection(con.id, person_id=person, now=clock.now())
    assert await store.authority.list_connections(person) == []
    assert await store.watches.get(con.id, "mail.received") is None
    # a holder of the policy cannot fetch a deleted row: it is told to read everything again
    after = await store.authority.policy_read(person, known=held.version, now=clock.now())
    assert (after.complete, after.connections) == (True, ())
    [entry] = [
        e
        for e in await store.audit.list_audit(person_id=person, after_seq=0, limit=100)
        if e.data.get("removed")
    ]
    assert (entry.kind, entry.data["connection"]) == ("connection", con.id)
    with pytest.raises(NotFound):
        await store.authority.remove_connection(con.id, person_id=person, now=clock.now())


async def test_a_connection_is_read_by_its_id_alone(store: Store, clock: SimulatedClock) -> None:
    person = (await new_person(store, clock)).id
    con = await _connection(store, clock, person)
    await _connection(store, clock, (await new_person(store, clock)).id)
    assert await store.authority.get_connection(con.id) == con
    with pytest.raises(NotFound):
        await store.authority.get_connection("con_nothing")
    await store.authority.disconnect(con.id, person_id=person, now=clock.now())
    assert (await store.authority.get_connection(con.id)).active is False
