"""Webhooks: outside services deliver events to one trigger, signed with that trigger's secret
as Standard Webhooks (https://www.standardwebhooks.com) sign them: the headers ``webhook-id``
(unique per delivery), ``webhook-timestamp`` (Unix seconds) and ``webhook-signature``
(``v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">``, several separated by spaces). The
id and time are signed with the body, so a captured delivery cannot be replayed under a new
id, and one sent more than five minutes before or after the server's time is refused; a
delivery id seen before is taken once. A good delivery is an inbox event of the trigger's type:
it fires the trigger and wakes whatever waits on that type."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from datetime import timedelta

from steward.domain import Event
from steward.domain.limits import check_json
from steward.domain.secrets import NOWHERE
from steward.domain.tokens import CONTROL
from steward.domain.trigger import TriggerKind
from steward.errors import Conflict, NotFound, TooLarge, Unauthorized, UsageError
from steward.service.base import ServiceBase

SECRET_PREFIX = "whsec_"
"""A Standard Webhooks secret: this, then the base64 of the key's bytes."""
MAX_BODY = 1_000_000
"""Bytes in one delivery."""
MAX_DELIVERY_ID = 150
"""Characters in a delivery's id: with the trigger's id it keys the event, at most
:data:`~steward.domain.limits.MAX_KEY` characters."""
TOLERANCE = timedelta(minutes=5)
"""How far a delivery's signed time may be from the server's clock, either way."""
_REFUSED = "the delivery's signature does not match this webhook's secret"


def secret_name(trigger_id: str) -> str:
    """The vault entry that holds a trigger's webhook secret (only ever used here, to check
    signatures)."""
    return f"webhook-{trigger_id}"


def sign(secret: str, delivery_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value of one delivery: what a sender computes with the
    secret."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{delivery_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def _signed_by(secret: str, delivery_id: str, timestamp: int, body: bytes, header: str) -> bool:
    expected = sign(secret, delivery_id, timestamp, body).encode()
    # every candidate is compared, so the time taken says nothing about which one matched; as
    # bytes, because a header may carry any byte and compare_digest refuses non-ASCII text
    matches = [hmac.compare_digest(expected, given.encode()) for given in header.split()]
    return any(matches)


class WebhookService(ServiceBase):
    async def webhook_secret(self, trigger_id: str) -> str:
        """Create, or replace, the secret that signs deliveries to an event trigger's webhook.
        It is shown this once; deliveries signed with an older one are refused from now on."""
        trigger = await self._trigger(trigger_id, CONTROL)
        if trigger.kind is not TriggerKind.EVENT:
            raise UsageError(
                f"trigger {trigger_id} is a {trigger.kind} trigger; only an event trigger "
                "takes webhook deliveries"
            )
        secret = SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()
        await self.store.secrets.put_secret(
            person_id=trigger.person_id,
            name=secret_name(trigger_id),
            ciphertext=(await self._vault()).encrypt(secret),
            hosts=(NOWHERE,),
            now=self.clock.now(),
            actor=self._decider("person"),
        )
        return secret

    async def receive_webhook(
        self, trigger_id: str, body: bytes, *, delivery_id: str, timestamp: str, signature: str
    ) -> tuple[Event, bool]:
        """Take one delivery: the event and whether it is new (False: this delivery id came
        before, and nothing happens again). The signature is the credential: a trigger that
        does not exist, has no secret or does not match is refused alike, saying no more."""
        from steward.sentinel.vault import MissingVaultKey

        if len(body) > MAX_BODY:
            raise TooLarge(f"a delivery's body is at most {MAX_BODY} bytes, not {len(body)}")
        delivery_id = delivery_id.strip()
        if not delivery_id or len(delivery_id) > MAX_DELIVERY_ID:
            raise UsageError(
                f"a delivery needs an id (1 to {MAX_DELIVERY_ID} characters) in webhook-id"
            )
        sent_at = _seconds(timestamp)
        try:
            trigger = await self.store.schedule.get_trigger(trigger_id)
            _, ciphertext = await self.store.secrets.secret_ciphertext(
                trigger.person_id, secret_name(trigger_id)
            )
            secret = (await self._vault()).decrypt(ciphertext)
            signed = _signed_by(secret, delivery_id, sent_at, body, signature)
        except (NotFound, binascii.Error):  # binascii: a secret from before v1 signing
            raise Unauthorized(_REFUSED) from None
        except MissingVaultKey:  # the owner is told where the key belongs; a sender is not
            raise Unauthorized(_REFUSED) from None
        if not signed:
            raise Unauthorized(_REFUSED)
        now = self.clock.now()
        if abs(now.timestamp() - sent_at) > TOLERANCE.total_seconds():
            raise Unauthorized(
                "the delivery's webhook-timestamp is more than 5 minutes from the server's "
                "time: a delivery is signed when it is sent"
            )
        try:
            payload = json.loads(body) if body.strip() else {}
        except (ValueError, RecursionError):
            raise UsageError("a delivery's body must be a JSON object") from None
        if not isinstance(payload, dict):
            raise UsageError("a delivery's body must be a JSON object")
        check_json(payload, "a delivery's body")
        if not trigger.enabled:
            raise Conflict(f"trigger {trigger_id} is disabled; enable it to take deliveries")
        event, created = await self.store.schedule.add_event(
            person_id=trigger.person_id,
            type=trigger.spec,
            source=f"webhook:{trigger_id}",
            dedupe_key=f"webhook:{trigger_id}:{delivery_id}",
            payload=payload,
            now=now,
        )
        if created:
            self._nudge(scheduler=True)
        return event, created


def _seconds(timestamp: str) -> int:
    """The signed time, in Unix seconds."""
    stamp = timestamp.strip()
    if not (stamp.isascii() and stamp.isdigit()) or len(stamp) > 12:
        raise UsageError("a delivery needs its send time in webhook-timestamp (Unix seconds)")
    return int(stamp)
