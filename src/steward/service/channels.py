"""The facade's channels part: the ways Steward reaches the person away from the dashboard —
an Apprise URL (ntfy, Telegram, Slack, e-mail…) or Web Push to a device where the dashboard is
installed — added, listed, tested, turned off and on, removed.

What is secret (the Apprise URL with its tokens, the push subscription's keys) goes to the
vault before the channel is stored; the channel keeps the secret's name and what may be shown
(the service, the URL reduced to its scheme and server, the push service's host). A bad URL or
subscription is refused at the door and nothing is stored. A service on this machine or a
private network (a self-hosted ntfy at home) is accepted only when the person confirms it is
on their own network (``private_network=True``), a confirmation the channel keeps.

A channel is named by its id (``chn_…``) or, within a person, by its name.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from steward.domain.channel import Channel, ChannelKind, ChannelSender, OutboundMessage
from steward.domain.ids import new_id
from steward.domain.tokens import CONTROL, READ
from steward.errors import (
    ChannelGone,
    ChannelRefused,
    ChannelUnavailable,
    Conflict,
    NotFound,
    UsageError,
)
from steward.service.base import ServiceBase
from steward.service.ids import IdService

if TYPE_CHECKING:
    from steward.connectors.notify.webpush import VapidKey

_NAME_MAX = 60


@dataclass(kw_only=True, frozen=True)
class ChannelInfo:
    """A channel as the person sees it (nothing secret)."""

    id: str
    """``chn_…``."""
    name: str
    """The person's label."""
    kind: ChannelKind
    """Apprise or Web Push (or, from other parts, e-mail, Matrix)."""
    summary: str
    """What it reaches, in words: ``ntfy (ntfys://ntfy.example.org/alerts)``."""
    enabled: bool
    """Off: nothing is sent through it."""
    created_at: datetime
    """When it was added."""
    last_used_at: datetime | None
    """When the person last answered through it."""


@dataclass(kw_only=True, frozen=True)
class ChannelTest:
    """What happened when a test message was sent."""

    channel: ChannelInfo
    """The channel tested."""
    ok: bool
    """The service took the message."""
    said: str
    """In words: taken, or why not."""


class ChannelService(IdService):
    async def add_apprise_channel(
        self,
        name: str,
        url: str,
        *,
        private_network: bool = False,
        person_id: str | None = None,
    ) -> ChannelInfo:
        """Add a channel through Apprise. ``url`` is kept in the vault only; a URL Apprise
        cannot use, a name taken, or a service on a private network the person did not confirm
        is refused and nothing is stored."""
        from steward.connectors.notify import PRIVATE_NETWORK, private_addresses
        from steward.connectors.notify.apprise import describe

        who = self._for(person_id, CONTROL)
        label = _name(name)
        target = describe(url)
        private = bool(await private_addresses(target.hosts))
        if private and not private_network:
            raise UsageError(
                f"that {target.service} service is on this machine or a private network; if it "
                "is yours (a self-hosted server at home, say), add it again and confirm it is "
                "on your own network. Nothing was added"
            )
        config: dict[str, Any] = {
            "service": target.service,
            "masked": target.masked,
            PRIVATE_NETWORK: private,
        }
        return await self._added(who, ChannelKind.APPRISE, label, url.strip(), config)

    async def push_public_key(self) -> str:
        """The installation's VAPID public key, which a browser subscribes with."""
        self._may(READ)
        return self._vapid().public_key

    async def subscribe_push(
        self, name: str, subscription: dict[str, Any], *, person_id: str | None = None
    ) -> ChannelInfo:
        """Add this device (a browser's ``PushSubscription``) as a channel; the same device
        subscribing again renews its channel instead."""
        from steward.connectors.notify import SECRET, private_addresses, private_push_endpoints
        from steward.connectors.notify.webpush import Subscription

        who = self._for(person_id, CONTROL)
        label = _name(name)
        parsed = Subscription.parse(subscription)
        if not private_push_endpoints() and await private_addresses([parsed.host]):
            raise UsageError(
                "that push service is on this machine or a private network, which a browser's "
                "push service never is. Nothing was added"
            )
        fingerprint = hashlib.sha256(parsed.endpoint.encode()).hexdigest()[:32]
        for known in await self.store.channels.list_for(who):
            if known.kind is ChannelKind.WEBPUSH and known.config.get("device") == fingerprint:
                await self._seal(who, str(known.config[SECRET]), parsed.to_json())
                renewed = await self.store.channels.set_enabled(known.id, enabled=True)
                return channel_info(renewed)
        config: dict[str, Any] = {
            "service": "Web Push",
            "host": parsed.host,
            "device": fingerprint,
        }
        return await self._added(who, ChannelKind.WEBPUSH, label, parsed.to_json(), config)

    async def list_channels(self, *, person_id: str | None = None) -> list[ChannelInfo]:
        """The person's channels, oldest first."""
        who = self._for(person_id, READ)
        return [channel_info(c) for c in await self.store.channels.list_for(who)]

    async def test_channel(self, channel: str, *, person_id: str | None = None) -> ChannelTest:
        """Send a test message through the channel now (also when it is turned off: the
        person asked), and say what happened."""
        found = await self._channel(channel, person_id, CONTROL)
        sender = self.channel_senders().get(found.kind)
        if sender is None:
            raise UsageError(f"a {found.kind.value} channel cannot be tested from here")
        message = OutboundMessage(
            key=f"test:{found.id}:{self.clock.now().timestamp():.0f}",
            person_id=found.person_id,
            kind="notice",
            title="Test from Steward",
            body=f"If you read this, Steward can reach you through '{found.name}'.",
            link="/channels",
        )
        try:
            receipt = await sender.send(found, message)
        except ChannelGone as exc:
            off = await self.store.channels.set_enabled(found.id, enabled=False)
            return ChannelTest(
                channel=channel_info(off), ok=False, said=f"Refused: {exc}. It is turned off."
            )
        except ChannelRefused as exc:
            return ChannelTest(channel=channel_info(found), ok=False, said=f"Refused: {exc}.")
        except ChannelUnavailable as exc:
            return ChannelTest(
                channel=channel_info(found),
                ok=False,
                said=f"Not delivered: {exc}. Try again later.",
            )
        return ChannelTest(channel=channel_info(found), ok=True, said=f"Sent ({receipt.detail}).")

    async def set_channel_enabled(
        self, channel: str, enabled: bool, *, person_id: str | None = None
    ) -> ChannelInfo:
        """Turn a channel off (nothing is sent through it) or on again."""
        found = await self._channel(channel, person_id, CONTROL)
        return channel_info(await self.store.channels.set_enabled(found.id, enabled=enabled))

    async def remove_channel(self, channel: str, *, person_id: str | None = None) -> ChannelInfo:
        """Remove a channel, what waited to go through it, and its secret."""
        from steward.connectors.notify import SECRET

        found = await self._channel(channel, person_id, CONTROL)
        removed = await self.store.channels.remove(found.id)
        secret = found.config.get(SECRET)
        if isinstance(secret, str):
            with contextlib.suppress(NotFound):  # already gone
                await self.store.secrets.delete_secret(
                    found.person_id, secret, now=self.clock.now(), actor=self._decider("person")
                )
        return channel_info(removed)

    def channel_senders(
        self, *, dashboard_url: str | None = None
    ) -> dict[ChannelKind, ChannelSender]:
        """The senders of the channel kinds this part manages, opening secrets from the
        vault; links start with ``dashboard_url`` (Web Push keeps the path: the app opens it
        on its own origin)."""
        from steward.connectors.notify import private_push_endpoints, push_contact
        from steward.connectors.notify.apprise import AppriseSender
        from steward.connectors.notify.webpush import WebPushSender

        if self.data_dir is None:
            raise UsageError("no data directory is configured, so there is no vault")
        secrets = _LazyVault(self)
        return {
            ChannelKind.APPRISE: AppriseSender(secrets, dashboard_url=dashboard_url),
            ChannelKind.WEBPUSH: WebPushSender(
                secrets,
                self._vapid(),
                clock=self.clock,
                contact=push_contact(),
                private_endpoints=private_push_endpoints(),
            ),
        }

    # --- helpers ------------------------------------------------------------------------

    def _vapid(self) -> VapidKey:
        from steward.connectors.notify.webpush import VapidKey

        if self.data_dir is None:
            raise UsageError("no data directory is configured, so there is no push key")
        return VapidKey.load(self.data_dir)

    async def _channel(self, ref: str, person_id: str | None, scope: str) -> Channel:
        self._may(scope)
        return await self.store.channels.get(await self.resolve_id(ref, "chn", person_id=person_id))

    async def _seal(self, person_id: str, secret: str, value: str) -> None:
        from steward.connectors.notify import SEALED_HOST

        await self.store.secrets.put_secret(
            person_id=person_id,
            name=secret,
            ciphertext=(await self._vault()).encrypt(value),
            hosts=[SEALED_HOST],
            now=self.clock.now(),
            actor=self._decider("person"),
        )

    async def _added(
        self,
        person_id: str,
        kind: ChannelKind,
        name: str,
        secret_value: str,
        config: dict[str, Any],
    ) -> ChannelInfo:
        from steward.connectors.notify import SECRET

        for known in await self.store.channels.list_for(person_id):
            if known.name.casefold() == name.casefold():
                raise Conflict(f"there is already a channel named {name!r}; choose another name")
        channel_id = new_id("chn")
        secret = f"channel-{channel_id}"
        await self._seal(person_id, secret, secret_value)
        planned = Channel(
            id=channel_id,
            person_id=person_id,
            kind=kind,
            name=name,
            config={**config, SECRET: secret},
            created_at=self.clock.now(),
        )
        try:
            added = await self.store.channels.add(planned)
        except BaseException:
            await self.store.secrets.delete_secret(
                person_id, secret, now=self.clock.now(), actor=self._decider("person")
            )
            raise
        return channel_info(added)


class _LazyVault:
    """Opens secrets with the vault's keys, loaded when first needed."""

    def __init__(self, service: ServiceBase) -> None:
        self._service = service

    async def open(self, person_id: str, name: str) -> str:
        from steward.connectors.notify import VaultSecrets

        vault = await self._service._vault()
        return await VaultSecrets(self._service.store.secrets, vault).open(person_id, name)


def _name(name: str) -> str:
    label = " ".join(name.split())
    if not label:
        raise UsageError("give the channel a name, such as 'phone' or 'work Slack'")
    if len(label) > _NAME_MAX:
        raise UsageError(f"a channel name is at most {_NAME_MAX} characters")
    return label


def channel_info(channel: Channel) -> ChannelInfo:
    """A channel as the person sees it."""
    return ChannelInfo(
        id=channel.id,
        name=channel.name,
        kind=channel.kind,
        summary=summary(channel),
        enabled=channel.enabled,
        created_at=channel.created_at,
        last_used_at=channel.last_used_at,
    )


def summary(channel: Channel) -> str:
    """What a channel reaches, in words, nothing secret."""
    from steward.connectors.notify import PRIVATE_NETWORK

    config = channel.config
    if channel.kind is ChannelKind.APPRISE:
        where = f"{config.get('service', 'Apprise')} ({config.get('masked', '…')})"
        return where + (", on your own network" if config.get(PRIVATE_NETWORK) else "")
    if channel.kind is ChannelKind.WEBPUSH:
        return f"notifications on a device, through {config.get('host', 'its push service')}"
    if channel.kind is ChannelKind.EMAIL:
        return f"e-mail to {config.get('address', 'your address')}"
    # Matrix: the channel's room is the person's alone (a room shared with others is refused)
    return f"Matrix: your direct room with the agent ({config.get('person', 'you')})"


__all__ = ["ChannelInfo", "ChannelService", "ChannelTest", "channel_info", "summary"]
