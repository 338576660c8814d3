"""Channels: the ways Steward reaches the person away from the dashboard (a notification
service through Apprise, Web Push to the dashboard installed on a phone, e-mail, a chat room),
and the message it hands one. A report, an approval or a question becomes one
:class:`OutboundMessage` per channel; the :class:`ChannelSender` of the channel's kind sends it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, Protocol


class ChannelKind(StrEnum):
    APPRISE = "apprise"
    """Any service Apprise reaches (ntfy, Telegram, Slack, Discord, e-mail, JSON webhooks…),
    by one Apprise URL kept in the vault."""
    WEBPUSH = "webpush"
    """The dashboard installed as an app on a phone or desktop (one push subscription)."""
    EMAIL = "email"
    """The person's own mailbox, reached through a connected mail account; replies come back."""
    MATRIX = "matrix"
    """A Matrix room the person is in."""


Importance = Literal["info", "actionable", "urgent"]
"""How much a message needs the person: ``info`` (for the digest), ``actionable`` (they
should do something), ``urgent`` (now, even in quiet hours)."""


@dataclass(kw_only=True, frozen=True)
class Channel:
    """One way to reach one person."""

    id: str
    """Stable id, ``chn_…``."""
    person_id: str
    """Whom it reaches."""
    kind: ChannelKind
    """How it reaches them."""
    name: str
    """The person's label ("phone", "work Slack")."""
    config: dict[str, Any] = field(default_factory=dict)
    """Settings that are not secret (a mail connection id, a room id, a push endpoint's
    host); anything secret is a vault reference."""
    enabled: bool = True
    """Off: nothing is sent through it."""
    created_at: datetime
    """When it was added."""
    last_used_at: datetime | None = None
    """When the person last wrote or answered through it (not when Steward last sent): the
    channel approvals and questions go to first."""


MessageKind = Literal["report", "digest", "approval", "question", "notice"]


@dataclass(kw_only=True, frozen=True)
class OutboundMessage:
    """What one channel is asked to show the person: plain words, in their time zone."""

    key: str
    """Idempotency key of this delivery (stable across retries and crashes); a channel that
    can deduplicate is given it."""
    person_id: str
    """Recipient."""
    kind: MessageKind
    """What it is."""
    title: str
    """One line, readable on a lock screen."""
    body: str
    """A few lines at most; details stay one tap away (``link``)."""
    importance: Importance = "info"
    """How much it needs the person."""
    link: str | None = None
    """Path of the dashboard page with the details (``/inbox/apr_…``), if any; a sender
    shows it as :func:`dashboard_link`."""
    ref: str | None = None
    """The report, approval or question it is about."""
    goal_id: str | None = None
    """The goal concerned, if any."""


def dashboard_link(dashboard_url: str | None, path: str | None) -> str | None:
    """The link a person opens from a message read anywhere (a phone's mail app, a chat):
    ``path`` on the dashboard's address (``https://steward.home.example/inbox/apr_…``); the
    bare path when the address is not known; None without a path."""
    if not path:
        return None
    if not dashboard_url:
        return path
    return f"{dashboard_url.rstrip('/')}/{path.lstrip('/')}"


@dataclass(kw_only=True, frozen=True)
class DeliveryReceipt:
    """What a channel said when it took a message."""

    accepted: bool
    """The service took it (a refusal that retrying will not change is an exception)."""
    detail: str = ""
    """The service's id for it or why it was not taken, in words, never a secret."""


class ChannelSender(Protocol):
    """Sends messages through channels of one kind. ``send`` raises
    :class:`~steward.errors.ChannelUnavailable` when trying again later may help and
    :class:`~steward.errors.ChannelRefused` when it will not (a bad address, a revoked
    subscription)."""

    kind: ChannelKind

    async def send(self, channel: Channel, message: OutboundMessage) -> DeliveryReceipt: ...
