"""The live stream: each person's feed as Server-Sent Events, resumable after the last event id
with nothing lost, and nothing of anyone else's."""

from __future__ import annotations

import asyncio

from steward.domain import Notification
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.store import Store
from support.api import Api, EventReader

WAIT = 20.0
"""Seconds a test waits for events that should come within a poll or two."""


async def notify(store: Store, clock: SimulatedClock, person_id: str, title: str) -> None:
    await store.inbox.notify(
        Notification(
            id=new_id("ntf"),
            person_id=person_id,
            kind="info",
            title=title,
            body="",
            created_at=clock.now(),
        )
    )


async def test_a_client_that_reconnects_after_its_last_event_id_misses_nothing(
    api: Api, store: Store, clock: SimulatedClock
) -> None:
    a, b = api.a, api.b
    history = await store.feed.feed_since(person_id=a.person.id)
    # the world's task: created, reported on (the world's report, and the runtime's about its
    # send in doubt), retried once (its send failed), then asking for approval
    assert [e.kind for e in history] == [
        "task.created",
        "report",
        "report",
        "task.pending",
        "notification",
        "approval.requested",
    ]
    async with api.client(a.read) as client:
        async with client.stream("GET", "/stream") as first:
            assert first.status_code == 200
            assert first.headers["content-type"].startswith("text/event-stream")
            seen = await asyncio.wait_for(EventReader(first).next(len(history)), WAIT)
        assert [int(e.id or 0) for e in seen] == [e.seq for e in history]
        assert seen[-1].event == "approval.requested"
        assert seen[-1].data["ref"] == a.approval.id

        # while A is away: news for A, and for B (never A's to see)
        for n in range(5):
            await notify(store, clock, a.person.id, f"for ann {n}")
            await notify(store, clock, b.person.id, f"for bob {n}")

        resume = {"Last-Event-ID": seen[-1].id or ""}
        async with client.stream("GET", "/stream", headers=resume) as second:
            reader = EventReader(second)
            missed = await asyncio.wait_for(reader.next(5), WAIT)
            # and what happens while connected arrives live, after them
            await notify(store, clock, a.person.id, "live")
            [live] = await asyncio.wait_for(reader.next(1), WAIT)

    expected = await store.feed.feed_since(person_id=a.person.id, after_seq=history[-1].seq)
    assert [int(e.id or 0) for e in [*missed, live]] == [e.seq for e in expected]
    assert [e.data["summary"] for e in [*missed, live]] == [
        *(f"for ann {n}" for n in range(5)),
        "live",
    ]
    assert all(e.data["person_id"] == a.person.id for e in [*missed, live])


async def test_entries_written_at_once_arrive_once_each_in_order(
    api: Api, store: Store, clock: SimulatedClock
) -> None:
    a = api.a
    head = await store.feed.feed_head(person_id=a.person.id)
    async with (
        api.client(a.read) as client,
        client.stream("GET", "/stream", params={"after": head}) as stream,
    ):
        writers = asyncio.gather(
            *(notify(store, clock, a.person.id, f"burst {n}") for n in range(40))
        )
        got = await asyncio.wait_for(EventReader(stream).next(40), WAIT)
        await writers
    seqs = [int(e.id or 0) for e in got]
    assert seqs == sorted(seqs)
    assert sorted(e.data["summary"] for e in got) == sorted(f"burst {n}" for n in range(40))


async def test_a_goal_stream_is_the_goals_own_and_bad_resume_points_are_refused(
    api: Api,
) -> None:
    a, b = api.a, api.b
    async with api.client(a.read) as client:
        async with client.stream("GET", "/stream", params={"goal_id": a.goal.id}) as mine:
            assert mine.status_code == 200
        for params, headers, status in (
            ({"goal_id": b.goal.id}, {}, 404),
            ({}, {"Last-Event-ID": "yesterday"}, 400),
            ({"after": "-1"}, {}, 422),
        ):
            answer = await client.get("/stream", params=params, headers=headers)
            assert answer.status_code == status, answer.text
            assert answer.headers["content-type"] == "application/problem+json"
