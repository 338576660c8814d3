"""The facade's code-hosting part: connecting GitHub and GitLab as sources of events, and taking
their webhook deliveries.

Connecting makes a webhook secret, seals it in the vault as the connection's credential (bound
to a host that cannot exist, so it is never sent anywhere) and shows it once, with the address
to paste into the provider's settings and the events to tick. Making a new one replaces it at
once: deliveries proving the old one are refused from then on.

A delivery is checked by the provider's own scheme (:mod:`steward.connectors.codehost`); one
that does not prove the connection's current secret — or names a connection that does not
exist — is refused alike, saying no more. A good one about a repository the connection takes
becomes at most one inbox event of the person (a ``pr.opened`` fires the event triggers on
``pr.opened``, with each trigger's goal's authority and nothing more). It is taken once per
delivery id, and once per happening: its semantic key is the event's dedupe key, so a captured
delivery re-sent under a new id starts nothing.

That key lives as long as the event, and ``steward prune`` deletes events. A provider's proof
covers no time, but the payload it covers says when the happening was (:attr:`CodeEvent.at`):
a delivery telling of something more than :data:`FRESH` old, more than :data:`SKEW` ahead of
this clock, or not saying when, starts nothing. Pruning keeps events for 30 days unless told
otherwise, far longer than a delivery stays fresh, so a happening whose event was pruned is too
old to start anything again (pruning events younger than :data:`FRESH` and :data:`SKEW`
together would reopen that gap). Such a delivery is answered as accepted, with a note saying
why it started nothing, as a duplicate is: a provider that keeps getting refusals disables the
webhook, and GitHub redelivers on request only within three days.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from steward.domain import Connection, Event
from steward.domain.limits import check_json
from steward.domain.tokens import CONTROL
from steward.errors import NotFound, TooLarge, Unauthorized, UsageError
from steward.service.connections import AccountKind, ConnectionService
from steward.service.hooks import MAX_BODY, MAX_DELIVERY_ID

if TYPE_CHECKING:
    from steward.connectors.codehost.connector import CodeHostConnector
    from steward.connectors.codehost.events import CodeEvent, Provider

KINDS = ("github", "gitlab")
"""The connection kinds that take code-hosting deliveries."""
REMEMBERED = 500
"""How many recent delivery ids a connection remembers (a re-sent one older than these is
still caught by its event's semantic key)."""
FRESH = timedelta(days=3)
"""How old a happening may be and still start something: GitHub redelivers a delivery on
request for three days."""
SKEW = timedelta(hours=1)
"""How far ahead of this clock a provider's clock may be."""
_REFUSED = "the delivery does not prove this webhook's secret"
_UNKNOWN = secrets.token_urlsafe(32)
"""A secret no connection has, checked against when the connection is not found."""


@dataclass(kw_only=True, frozen=True)
class CodeHostSetup:
    """A code-hosting connection ready for deliveries: what to paste into the provider."""

    connection: Connection
    """The connection."""
    check: str
    """What it takes, in a sentence."""
    secret: str
    """The webhook secret, shown this once."""
    events: tuple[str, ...]
    """The events to tick in the provider's webhook settings."""
    content_type: str = "application/json"
    """The content type to choose (GitHub asks)."""


@dataclass(kw_only=True, frozen=True)
class Received:
    """What a delivery started."""

    event: Event | None
    """The event it became (or had already become), None when it starts nothing."""
    duplicate: bool
    """This delivery, or the happening it tells of, came before: nothing starts again."""
    note: str
    """What happened, in plain words."""


class CodeHostService(ConnectionService):
    async def connect_codehost(
        self, *, person_id: str, kind: str, name: str, repositories: list[str]
    ) -> CodeHostSetup:
        """Connect GitHub or GitLab (``kind``) as ``name``, taking deliveries about
        ``repositories``; returns the new secret, shown this once."""
        connector = _codehost(kind)
        person_id = self._for(person_id, CONTROL)
        secret = secrets.token_urlsafe(32)
        # not through connect(), which refuses a credential the person gives a code host
        plan = await self._plan(
            person_id, kind, name, {"repositories": repositories}, False, None, None
        )
        done = await self._establish(plan, secret)
        return _setup(connector, done.connection, done.check, secret)

    async def rotate_codehost_secret(self, name: str, *, person_id: str) -> CodeHostSetup:
        """Replace the webhook secret of the code-hosting connection ``name`` (or id): the new
        one is shown this once, and deliveries proving the old one are refused from now on."""
        person_id = self._for(person_id, CONTROL)
        connection = await self._named(person_id, name)
        if connection.kind not in KINDS or connection.secret is None:
            raise UsageError(f"{connection.name} is not a GitHub or GitLab connection")
        connector = _codehost(connection.kind)
        secret = secrets.token_urlsafe(32)
        await self.store.secrets.put_secret(
            person_id=person_id,
            name=connection.secret,
            ciphertext=(await self._vault()).encrypt(secret),
            hosts=connection.hosts,
            now=self.clock.now(),
            actor=self._decider("person"),
        )
        said = await connector.check(connection, await self._connector_env())
        return _setup(connector, connection, said, secret)

    async def account_kinds(self) -> list[AccountKind]:
        """The kinds of account connected with a password or OAuth: not a code host, whose
        secret Steward makes (:meth:`connect_codehost`)."""
        return [k for k in await super().account_kinds() if k.kind not in KINDS]

    async def receive_codehost(
        self, kind: str, connection_id: str, body: bytes, headers: Mapping[str, str]
    ) -> Received:
        """Take one delivery from GitHub or GitLab (``headers`` with lower-case names)."""
        from steward.connectors.codehost.connector import DELIVERIES, CodeHostSettings

        if len(body) > MAX_BODY:
            raise TooLarge(f"a delivery's body is at most {MAX_BODY} bytes, not {len(body)}")
        try:
            connector = _codehost(kind)
        except UsageError:
            raise Unauthorized(_REFUSED) from None
        provider = connector.provider
        connection = await self._proven(provider, connection_id, body, headers)
        delivery = provider.delivery_id(headers)
        if not delivery or len(delivery) > MAX_DELIVERY_ID:
            raise UsageError(
                f"a {provider.title} delivery needs its id (1 to {MAX_DELIVERY_ID} characters)"
            )
        reading = provider.read(headers, _json_object(body))
        settings = CodeHostSettings.model_validate(connection.settings)
        if reading.repo is not None and not settings.accepts(reading.repo):
            raise UsageError(f"{connection.name} does not take deliveries about {reading.repo}")
        stale = self._stale(reading.event)
        if stale:
            return Received(event=None, duplicate=False, note=stale)
        state = await self.store.watches.get(connection.id, DELIVERIES)
        seen: list[str] = list((state.cursor or {}).get("ids", [])) if state else []
        if delivery in seen:
            return Received(event=None, duplicate=True, note="this delivery was taken before")
        found = [] if reading.event is None else [reading.event.found(connection.name, delivery)]
        # the ids are only a shortcut, read and then written with the event: copies racing each
        # other may all pass the check above, or lose each other's id, and then the event's
        # semantic key (kept while the happening is fresh, see above) takes one of them only
        try:
            stored = await self.store.watches.record(
                person_id=connection.person_id,
                connection_id=connection.id,
                source=DELIVERIES,
                found=found,
                cursor={"ids": [*seen, delivery][-REMEMBERED:]},
                now=self.clock.now(),
            )
        except NotFound:  # disconnected meanwhile
            raise Unauthorized(_REFUSED) from None
        if not stored:
            return Received(event=None, duplicate=False, note=reading.note)
        [(event, created)] = stored
        if not created:
            note = f"{event.type} for {reading.repo} was taken before"
            return Received(event=event, duplicate=True, note=note)
        self._nudge(scheduler=True)
        return Received(event=event, duplicate=False, note=f"{event.type} for {reading.repo}")

    def _stale(self, event: CodeEvent | None) -> str:
        """Why a delivery's event is too old (or too far ahead) to start anything, or ``""``."""
        if event is None:
            return ""
        if event.at is None:
            return f"{event.type} for {event.repo} does not say when it happened: not taken"
        now = self.clock.now()
        if event.at < now - FRESH:
            return (
                f"{event.type} for {event.repo} happened more than {FRESH.days} days ago: "
                "too old to start anything"
            )
        if event.at > now + SKEW:
            return f"{event.type} for {event.repo} is dated ahead of this server's clock: not taken"
        return ""

    async def _proven(
        self, provider: Provider, connection_id: str, body: bytes, headers: Mapping[str, str]
    ) -> Connection:
        """The active connection the delivery proves the secret of; :class:`Unauthorized`
        alike for a wrong proof, a missing one and a connection that does not exist."""
        from steward.sentinel.vault import MissingVaultKey

        try:
            found = await self.store.authority.get_connection(connection_id)
        except NotFound:
            found = None
        if found is None or not found.active or found.kind != provider.kind or not found.secret:
            # the check a real one takes, with a secret nobody has: the time taken does not
            # tell which connection ids exist
            provider.signed(_UNKNOWN, body, headers)
            raise Unauthorized(_REFUSED)
        try:
            _, ciphertext = await self.store.secrets.secret_ciphertext(
                found.person_id, found.secret
            )
            secret = (await self._vault()).decrypt(ciphertext)
        except (NotFound, MissingVaultKey):  # the owner is told where the key belongs elsewhere
            raise Unauthorized(_REFUSED) from None
        if not provider.signed(secret, body, headers):
            raise Unauthorized(_REFUSED)
        return found


def _json_object(body: bytes) -> dict[str, Any]:
    """A delivery's body, which must be a JSON object within the stored limits."""
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        payload = None
    if not isinstance(payload, dict):
        raise UsageError(
            "a delivery's body must be a JSON object (choose application/json as the "
            "webhook's content type)"
        )
    check_json(payload, "a delivery's body")
    return payload


def _codehost(kind: str) -> CodeHostConnector:
    from steward.connectors.codehost.connector import CodeHostConnector
    from steward.connectors.registry import known

    if kind not in KINDS:
        raise UsageError(f"{kind} is not a code host; choose {' or '.join(KINDS)}")
    connector = known(kind)
    assert isinstance(connector, CodeHostConnector)
    return connector


def _setup(
    connector: CodeHostConnector, connection: Connection, said: str, secret: str
) -> CodeHostSetup:
    return CodeHostSetup(
        connection=connection,
        check=said,
        secret=secret,
        events=connector.provider.events_to_tick,
    )
