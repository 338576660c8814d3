"""Webhooks: outside services deliver events to one trigger, each delivery signed with that
trigger's secret (HMAC-SHA256 of the body) and named by a delivery id, so a delivery sent
twice is taken once. A good delivery is an inbox event of the trigger's type: it fires the
trigger and wakes whatever waits on that type."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets

from steward.domain import Event
from steward.domain.trigger import TriggerKind
from steward.errors import Conflict, NotFound, Unauthorized, UsageError
from steward.sentinel.tokens import CONTROL
from steward.service.base import ServiceBase

SIGNATURE_PREFIX = "sha256="
MAX_BODY = 1_000_000
"""Bytes in one delivery."""
_REFUSED = "the delivery's signature does not match this webhook's secret"


NOWHERE = "webhook.invalid"
"""The one host a webhook secret is bound to: a vault secret must name where it may be sent,
and ``.invalid`` names no host there can ever be (RFC 2606), so egress never sends it."""


def secret_name(trigger_id: str) -> str:
    """The vault entry that holds a trigger's webhook secret (only ever used here, to check
    signatures)."""
    return f"webhook-{trigger_id}"


def sign(secret: str, body: bytes) -> str:
    """The signature header value of ``body``: what a sender computes with the secret."""
    return SIGNATURE_PREFIX + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class WebhookService(ServiceBase):
    async def webhook_secret(self, trigger_id: str) -> str:
        """Create, or replace, the secret that signs deliveries to an event trigger's webhook.
        It is shown this once; deliveries signed with an older one are refused from now on."""
        self._may(CONTROL)
        trigger = await self.store.get_trigger(trigger_id)
        self._owned("trigger", trigger_id, trigger.person_id)
        if trigger.kind is not TriggerKind.EVENT:
            raise UsageError(
                f"trigger {trigger_id} is a {trigger.kind} trigger; only an event trigger "
                "takes webhook deliveries"
            )
        secret = secrets.token_urlsafe(32)
        await self.store.put_secret(
            person_id=trigger.person_id,
            name=secret_name(trigger_id),
            ciphertext=(await self._vault()).encrypt(secret),
            hosts=(NOWHERE,),
            now=self.clock.now(),
            actor=self._decider("person"),
        )
        return secret

    async def receive_webhook(
        self, trigger_id: str, body: bytes, *, signature: str, delivery_id: str
    ) -> tuple[Event, bool]:
        """Take one delivery: the event and whether it is new (False: this delivery id came
        before, and nothing happens again). The signature is the credential: a trigger that
        does not exist, has no secret or does not match is refused alike, saying no more."""
        try:
            trigger = await self.store.get_trigger(trigger_id)
            _, ciphertext = await self.store.secret_ciphertext(
                trigger.person_id, secret_name(trigger_id)
            )
        except NotFound:
            raise Unauthorized(_REFUSED) from None
        key = (await self._vault()).decrypt(ciphertext)
        if not hmac.compare_digest(sign(key, body), signature):
            raise Unauthorized(_REFUSED)
        delivery_id = delivery_id.strip()
        if not delivery_id or len(delivery_id) > 200:
            raise UsageError("a delivery needs an id (1 to 200 characters) in its delivery header")
        if len(body) > MAX_BODY:
            raise UsageError(f"a delivery's body is at most {MAX_BODY} bytes, not {len(body)}")
        try:
            payload = json.loads(body) if body.strip() else {}
        except ValueError as exc:
            raise UsageError(f"a delivery's body must be a JSON object: {exc}") from None
        if not isinstance(payload, dict):
            raise UsageError("a delivery's body must be a JSON object")
        if not trigger.enabled:
            raise Conflict(f"trigger {trigger_id} is disabled; enable it to take deliveries")
        event, created = await self.store.add_event(
            person_id=trigger.person_id,
            type=trigger.spec,
            source=f"webhook:{trigger_id}",
            dedupe_key=f"webhook:{trigger_id}:{delivery_id}",
            payload=payload,
            now=self.clock.now(),
        )
        if created:
            self._nudge(scheduler=True)
        return event, created
