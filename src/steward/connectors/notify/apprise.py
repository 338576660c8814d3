"""Apprise: one URL reaches ntfy, Telegram, Slack, Discord, Matrix, e-mail, JSON webhooks and
a hundred more services (https://github.com/caronc/apprise).

The channel's Apprise URL carries the service's tokens, so it lives in the vault (see
:mod:`steward.connectors.notify`); the channel's ``config`` holds the secret's name, the
service's name (``"ntfy"``, ``"Telegram"``) and the URL reduced to its scheme and server.
Messages, errors and logs never contain the URL.

**Addresses.** Apprise opens its own sockets, so the egress broker does not see them. When the
channel is added, the hosts the URL names are resolved — the host of the self-hostable
services (JSON/XML/form webhooks, ntfy on one's own server, Gotify, Matrix, e-mail's SMTP
server…, and any service whose plugin takes a "host", however it is spelled: ``kodi://nas``,
``synology://2130706433``) and any host given as a dotted name or an IP address — and a
loopback, private or link-local address needs the person's confirmation that the service is
on their own network. Cloud services' fixed endpoints (Telegram, Slack, ntfy.sh…) are public;
their URL's "host" is often a token and is never looked up. Each send then runs under the
outbound guard (:mod:`~steward.connectors.notify.guard`), which checks every connection
Apprise opens at the socket: a redirect, or a name that resolves elsewhere by then, cannot
reach a private address the person did not confirm.

**Outcome.** A service that answers 4xx (other than 408/429) refused the message for good
(:class:`~steward.errors.ChannelRefused`); a timeout, a connection failure or a 5xx/429 may
pass (:class:`~steward.errors.ChannelUnavailable`). Apprise's own log lines are read only for
the status code; their text (which may name the URL) is never passed on.

Apprise is imported where an address is read or a message sent: every command imports this
module through the facade, and Apprise costs ~40 ms to import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from steward.domain.channel import (
    Channel,
    ChannelKind,
    DeliveryReceipt,
    OutboundMessage,
    dashboard_link,
)
from steward.errors import ChannelRefused, ChannelUnavailable, UsageError
from steward.sentinel.urls import ip_of

from . import PRIVATE_NETWORK, SECRET, SecretOpener, private_addresses
from .guard import guarded

if TYPE_CHECKING:
    from apprise import AppriseAsset, NotifyType

SELF_HOSTED = frozenset(
    {
        "json",
        "jsons",
        "xml",
        "xmls",
        "form",
        "forms",
        "ntfy",
        "ntfys",
        "gotify",
        "gotifys",
        "mailto",
        "mailtos",
        "apprise",
        "apprises",
        "matrix",
        "matrixs",
        "mqtt",
        "mqtts",
        "rocket",
        "rockets",
        "mmost",
        "mmosts",
        "nctalk",
        "nctalks",
        "ncloud",
        "nclouds",
        "hassio",
        "hassios",
        "signal",
        "signals",
        "gorush",
        "gorushs",
    }
)
"""URL schemes whose host is the server to connect to, whatever it looks like."""

_STATUS = re.compile(r"error=(\d{3})\b")
_PASSING = frozenset({408, 425, 429})


@dataclass(kw_only=True, frozen=True)
class AppriseTarget:
    """What an Apprise URL reaches, as far as may be shown and checked."""

    service: str
    """Apprise's name for the service (``"ntfy"``, ``"Telegram"``, ``"E-Mail"``)."""
    masked: str
    """The URL with all but its scheme and server masked (``ntfys://ntfy.example.org/…``,
    ``tgram://…``)."""
    hosts: tuple[str, ...]
    """The hosts it connects to that are checked for private addresses."""


def describe(url: str) -> AppriseTarget:
    """What ``url`` reaches; a URL Apprise cannot use is a :class:`UsageError` that does not
    repeat it."""
    from apprise import Apprise

    text = url.strip()
    plugin = Apprise.instantiate(text, asset=_asset()) if text else None
    if plugin is None:
        raise UsageError(
            "Apprise does not understand that address: it should look like "
            "'ntfy://ntfy.example.org/topic', 'tgram://bottoken/chatid' or "
            "'mailto://user:password@example.org' (see the Apprise wiki for your service)"
        )
    scheme = text.partition("://")[0].lower()
    hosts: list[str] = []
    for attribute in ("host", "smtp_host"):
        value = getattr(plugin, attribute, None)
        if not isinstance(value, str) or not value or value in hosts:
            continue
        if scheme.startswith("ntfy") and getattr(plugin, "mode", "") != "private":
            continue
        if (
            scheme in SELF_HOSTED
            or attribute in getattr(plugin, "template_tokens", {})  # the plugin's server
            or "." in value
            or value == "localhost"
            or ip_of(value)
        ):
            hosts.append(value)
    # only a server's name is shown: a path, a user or a cloud service's "host" may be a token
    masked = f"{scheme}://{hosts[0]}/…" if hosts else f"{scheme}://…"
    return AppriseTarget(service=str(plugin.service_name), masked=masked, hosts=tuple(hosts))


async def needs_private_network(url: str) -> bool:
    """Whether a host of ``url`` is on this machine or a private network (the person must
    then confirm the service is theirs)."""
    return bool(await private_addresses(describe(url).hosts))


class AppriseSender:
    """:class:`~steward.domain.channel.ChannelSender` for :attr:`ChannelKind.APPRISE`."""

    kind = ChannelKind.APPRISE

    def __init__(
        self, secrets: SecretOpener, *, dashboard_url: str | None = None, timeout: float = 30.0
    ) -> None:
        self._secrets = secrets
        self._dashboard_url = dashboard_url
        self._timeout = timeout

    async def send(self, channel: Channel, message: OutboundMessage) -> DeliveryReceipt:
        secret = channel.config.get(SECRET)
        if not isinstance(secret, str):
            raise ChannelRefused("this channel has no address; add it again")
        url = await self._secrets.open(channel.person_id, secret)
        try:
            target = describe(url)
        except UsageError:
            raise ChannelRefused("Apprise no longer understands this channel's address") from None
        from apprise import Apprise

        sender = Apprise(asset=_asset())
        if not sender.add(url):
            raise ChannelRefused("Apprise no longer understands this channel's address")
        with guarded(private_network=bool(channel.config.get(PRIVATE_NETWORK))) as guard:
            result = await sender.async_notify(
                title=message.title,
                body=self._body(message),
                notify_type=_notify_type(message.importance),
                timeout=self._timeout,
            )
        if not result and guard.refused:
            raise ChannelRefused(
                f"Steward did not connect to {guard.refused[0]} (the service's own, or one it "
                "redirected to), and you did not confirm the service is on your own network "
                "when adding the channel"
            )
        if result:
            return DeliveryReceipt(accepted=True, detail=f"taken by {target.service}")
        codes = [int(code) for entry in result.logs() for code in _STATUS.findall(entry.message)]
        refused = [c for c in codes if 400 <= c < 500 and c not in _PASSING]
        if refused:
            raise ChannelRefused(
                f"{target.service} refused the message (it answered {refused[-1]}); check the "
                "channel's address"
            )
        raise ChannelUnavailable(f"{target.service} did not take the message this time")

    def _body(self, message: OutboundMessage) -> str:
        link = dashboard_link(self._dashboard_url, message.link)
        return f"{message.body}\n\n{link}" if link else message.body


def _notify_type(importance: str) -> NotifyType:
    from apprise import NotifyType

    types = {"actionable": NotifyType.WARNING, "urgent": NotifyType.FAILURE}
    return types.get(importance, NotifyType.INFO)


def _asset() -> AppriseAsset:
    from apprise import AppriseAsset

    # secure_logging masks passwords in Apprise's own log lines; nothing of a channel is
    # written to disk by Apprise (its persistent store kept in memory)
    return AppriseAsset(secure_logging=True, storage_mode="memory")
