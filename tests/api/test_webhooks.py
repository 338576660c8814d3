"""Webhook deliveries over HTTP: signed with the trigger's secret, taken once per delivery id,
and turned into an event that fires the trigger under its goal."""

from __future__ import annotations

import json

from steward.domain import TaskSpec, TriggerKind
from steward.domain.clock import SimulatedClock
from steward.store import Store
from support.api import Api, delivery


async def test_a_signed_delivery_is_taken_once_and_fires_the_goals_trigger(
    api: Api, store: Store, clock: SimulatedClock
) -> None:
    a = api.a
    trigger = await api.owner.add_trigger(
        person_id=a.person.id,
        kind=TriggerKind.EVENT,
        spec="github.push",
        task=TaskSpec(kind="noop", title="look at the push"),
        goal_id=a.goal.id,
        name="pushes",
    )
    async with api.client(a.control) as client:
        made = await client.post(f"/triggers/{trigger.id}/webhook-secret")
        assert made.status_code == 201, made.text
        secret, url = made.json()["secret"], made.json()["url"]
        assert url.endswith(f"/api/v1/hooks/{trigger.id}")
    body = json.dumps({"ref": "main", "commits": 3}).encode()
    events_before = await store.schedule.list_events(person_id=a.person.id, limit=100)

    async with api.client(None) as hook:
        forged = await hook.post(
            f"/hooks/{trigger.id}",
            content=body,
            headers=delivery("whsec_Z3Vlc3NlZA==", body, at=clock.now()),
        )
        assert forged.status_code == 401
        assert forged.headers["content-type"] == "application/problem+json"
        assert await store.schedule.list_events(person_id=a.person.id, limit=100) == events_before

        headers = delivery(secret, body, at=clock.now())
        taken = await hook.post(f"/hooks/{trigger.id}", content=body, headers=headers)
        again = await hook.post(f"/hooks/{trigger.id}", content=body, headers=headers)
        # the same body signed under another delivery id is another delivery
        other = await hook.post(
            f"/hooks/{trigger.id}",
            content=body,
            headers=delivery(secret, body, at=clock.now(), delivery_id="d-2"),
        )

    assert (taken.status_code, taken.json()["duplicate"]) == (202, False)
    assert (again.status_code, again.json()) == (202, taken.json() | {"duplicate": True})
    assert (other.status_code, other.json()["duplicate"]) == (202, False)
    events = await store.schedule.list_events(person_id=a.person.id, limit=100)
    delivered = [e for e in events if e.source == f"webhook:{trigger.id}"]
    assert sorted(e.dedupe_key for e in delivered) == [
        f"webhook:{trigger.id}:d-1",
        f"webhook:{trigger.id}:d-2",
    ]
    assert all(
        e.type == "github.push" and e.payload == {"ref": "main", "commits": 3} for e in delivered
    )

    await store.schedule.route_events(now=clock.now())  # what the running scheduler does next
    fired = [
        t for t in await store.tasks.list_tasks(goal_id=a.goal.id) if t.title == "look at the push"
    ]
    assert len(fired) == 2  # one task per delivery, none for the repeat


async def test_a_delivery_needs_this_triggers_current_secret_and_a_json_object(
    api: Api, store: Store, clock: SimulatedClock
) -> None:
    a, b = api.a, api.b
    mine = await api.owner.add_trigger(
        person_id=a.person.id,
        kind=TriggerKind.EVENT,
        spec="shop.order",
        task=TaskSpec(kind="noop"),
    )
    theirs = await api.owner.add_trigger(
        person_id=b.person.id,
        kind=TriggerKind.EVENT,
        spec="shop.order",
        task=TaskSpec(kind="noop"),
    )
    async with api.client(a.control) as client:
        old = (await client.post(f"/triggers/{mine.id}/webhook-secret")).json()["secret"]
        new = (await client.post(f"/triggers/{mine.id}/webhook-secret")).json()["secret"]
        # B's trigger is not A's to give a secret to; a cron trigger takes no deliveries
        assert (await client.post(f"/triggers/{theirs.id}/webhook-secret")).status_code == 404
        cron = await client.post(f"/triggers/{a.trigger.id}/webhook-secret")
        assert cron.status_code == 400
        assert "only an event trigger" in cron.json()["detail"]
    async with api.client(b.control) as client:
        b_secret = (await client.post(f"/triggers/{theirs.id}/webhook-secret")).json()["secret"]

    body = b'{"order": 7}'

    async def deliver(trigger_id: str, secret: str, content: bytes = body) -> int:
        async with api.client(None) as hook:
            answer = await hook.post(
                f"/hooks/{trigger_id}",
                content=content,
                headers=delivery(secret, content, at=clock.now(), delivery_id="x"),
            )
        return answer.status_code

    before = await store.schedule.list_events(person_id=a.person.id, limit=100)
    assert await deliver(mine.id, old) == 401  # replaced: the old secret signs nothing
    assert await deliver(mine.id, b_secret) == 401  # another trigger's secret
    assert await deliver("trg_nonexistent", new) == 401  # no such trigger: the same answer
    assert await deliver(mine.id, new, b"[1, 2]") == 400
    assert await deliver(mine.id, new, b"not json") == 400
    assert await store.schedule.list_events(person_id=a.person.id, limit=100) == before
    assert await deliver(mine.id, new) == 202
