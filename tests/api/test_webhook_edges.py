"""A webhook delivery whose headers carry bytes beyond ASCII is refused like any other bad
signature (401), never a crash: the route takes no token, so anyone can send one."""

from __future__ import annotations

import json

from structlog.testing import capture_logs

from steward.domain import TaskSpec, TriggerKind
from steward.domain.clock import SimulatedClock
from steward.store import Store
from support.api import Api, delivery


async def test_a_signature_with_a_byte_beyond_ascii_is_refused_not_a_crash(
    api: Api, store: Store, clock: SimulatedClock
) -> None:
    a = api.a
    trigger = await api.owner.add_trigger(
        person_id=a.person.id,
        kind=TriggerKind.EVENT,
        spec="shop.order",
        task=TaskSpec(kind="noop"),
    )
    secret = await api.owner.webhook_secret(trigger.id)
    body = json.dumps({"order": 1}).encode()
    good = delivery(secret, body, at=clock.now())
    before = await store.schedule.list_events(person_id=a.person.id, limit=100)
    with capture_logs() as records:
        async with api.client(None) as hook:
            refused = await hook.post(
                f"/hooks/{trigger.id}",
                content=body,
                headers={**good, "webhook-signature": b"v1,\xe9"},  # sent as latin-1
            )
            # a good signature among the candidates is still found next to such a one
            taken = await hook.post(
                f"/hooks/{trigger.id}",
                content=body,
                headers={
                    **good,
                    "webhook-signature": f"{good['webhook-signature']} v1,\xe9".encode("latin-1"),
                },
            )
    assert refused.status_code == 401, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    assert "signature does not match" in refused.json()["detail"]
    assert taken.status_code == 202, taken.text
    assert [r for r in records if r["log_level"] == "error"] == []
    after = await store.schedule.list_events(person_id=a.person.id, limit=100)
    assert len(after) == len(before) + 1


async def test_a_delivery_id_too_long_to_key_its_event_is_refused(
    api: Api, store: Store, clock: SimulatedClock
) -> None:
    """On main an id of up to 200 characters was taken, and its event's key (the trigger's id
    and the delivery's) no longer fit: PostgreSQL refused it with a 500."""
    a = api.a
    trigger = await api.owner.add_trigger(
        person_id=a.person.id, kind=TriggerKind.EVENT, spec="shop.order", task=TaskSpec(kind="noop")
    )
    secret = await api.owner.webhook_secret(trigger.id)
    body = json.dumps({"order": 1}).encode()
    before = await store.schedule.list_events(person_id=a.person.id, limit=100)
    async with api.client(None) as hook:
        refused = await hook.post(
            f"/hooks/{trigger.id}",
            content=body,
            headers=delivery(secret, body, at=clock.now(), delivery_id="d" * 190),
        )
    assert refused.status_code == 400, refused.text
    assert "webhook-id" in refused.json()["detail"]
    assert await store.schedule.list_events(person_id=a.person.id, limit=100) == before
