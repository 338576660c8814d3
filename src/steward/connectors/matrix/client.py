"""Talking to the bot's homeserver with matrix-nio (its async client, end-to-end encryption
off: the rooms Steward is in are not encrypted).

Every call maps the homeserver's refusals to the channel errors: a token the server does not
know, a room the bot may not write in or cannot find → :class:`~steward.errors.ChannelRefused`
(trying again will not help); a server that cannot be reached, times out, is rate limiting or
failing → :class:`~steward.errors.ChannelUnavailable`. nio's own endless retrying is turned off:
the callers (the dispatcher, the listener) decide when to try again.

matrix-nio and aiohttp are imported by the functions that talk to the homeserver: every command
imports this module through the facade, and those two cost ~200 ms to import.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from steward.connectors.base import ConnectorEnv
from steward.domain.channel import Channel
from steward.errors import ChannelRefused, ChannelUnavailable

if TYPE_CHECKING:
    import nio

REFUSALS = frozenset(
    {"M_FORBIDDEN", "M_UNKNOWN_TOKEN", "M_MISSING_TOKEN", "M_NOT_FOUND", "M_BAD_JSON"}
)
"""Matrix error codes that trying again will not change."""
REQUEST_SECONDS = 30.0
"""Longest wait for one request (a long poll adds its own timeout to it)."""


@dataclass(kw_only=True, frozen=True)
class BotAccount:
    """The bot's account on its homeserver, with its access token opened for one use."""

    homeserver: str
    """The homeserver's URL (``https://matrix.example.org``)."""
    user_id: str
    """The bot's user id (``@steward:example.org``)."""
    token: str
    """Its access token."""

    def __repr__(self) -> str:  # never print the token by accident
        return f"BotAccount(homeserver={self.homeserver!r}, user_id={self.user_id!r})"


def homeserver_host(url: str) -> tuple[str, bool]:
    """The host of a homeserver URL and whether it is reached over TLS."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ChannelRefused(f"{url!r} is not a homeserver URL (https://matrix.example.org)")
    return parts.hostname, parts.scheme == "https"


async def bot_account(env: ConnectorEnv, channel: Channel) -> BotAccount:
    """The bot account of a Matrix channel, its token opened from the vault through the
    egress broker (bound to the homeserver's host, TLS unless it is this machine; audited)."""
    homeserver = str(channel.config.get("homeserver", ""))
    user = str(channel.config.get("user", ""))
    secret = str(channel.config.get("secret", ""))
    host, secure = homeserver_host(homeserver)
    if not user or not secret:
        raise ChannelRefused(f"the Matrix channel {channel.name} has no bot account")
    login = await env.broker.login(
        person_id=channel.person_id,
        name=secret,
        host=host,
        secure=secure,
        actor=f"channel:{channel.id}",
    )
    return BotAccount(homeserver=homeserver, user_id=user, token=login.value)


@contextlib.asynccontextmanager
async def connected(account: BotAccount) -> AsyncIterator[nio.AsyncClient]:
    """A nio client signed in as the bot (no store, no encryption, no retries of its own)."""
    import nio

    config = nio.AsyncClientConfig(
        max_limit_exceeded=0,
        max_timeouts=0,
        request_timeout=REQUEST_SECONDS,
        store_sync_tokens=False,
        encryption_enabled=False,
    )
    client = nio.AsyncClient(account.homeserver, account.user_id, store_path=None, config=config)
    client.user_id = account.user_id
    client.access_token = account.token
    try:
        yield client
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def reaching(what: str) -> AsyncIterator[None]:
    """Turns a homeserver that cannot be reached into :class:`ChannelUnavailable`."""
    import aiohttp

    try:
        yield
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ChannelUnavailable(f"the homeserver could not be reached to {what}") from exc


def checked(response: Any, what: str) -> Any:
    """``response`` unless it is an error, which becomes the channel error it means."""
    import nio

    if isinstance(response, nio.ErrorResponse):
        code = response.status_code
        words = f"the homeserver refused to {what}: {response.message}"
        if code in REFUSALS:
            raise ChannelRefused(words)
        raise ChannelUnavailable(words)
    return response


async def send_text(
    client: nio.AsyncClient, room_id: str, content: dict[str, Any], *, txn: str | None = None
) -> str:
    """Send an ``m.room.message`` to a room; its event id. ``txn`` (a transaction id) makes a
    retried send one message: the homeserver takes a transaction id once per device."""
    async with reaching("send a message"):
        response = await client.room_send(
            room_id,
            "m.room.message",
            content,
            tx_id=txn or secrets.token_hex(16),
            ignore_unverified_devices=True,
        )
    sent = checked(response, "take a message")
    return str(sent.event_id)


async def room_members(client: nio.AsyncClient, room_id: str) -> frozenset[str]:
    """The room's members who joined or are invited (anyone who may read what is said)."""
    async with reaching("read a room's members"):
        response = await client.room_get_state(room_id)
    state = checked(response, "show a room's members")
    members = set()
    for event in state.events:
        if not isinstance(event, dict) or event.get("type") != "m.room.member":
            continue
        content = event.get("content")
        membership = content.get("membership") if isinstance(content, dict) else None
        if membership in ("join", "invite") and isinstance(event.get("state_key"), str):
            members.add(str(event["state_key"]))
    return frozenset(members)


async def room_event(
    client: nio.AsyncClient, room_id: str, event_id: str
) -> tuple[str, dict[str, Any]] | None:
    """Who sent an event of a room and its content; None when it is not there to read."""
    import nio

    async with reaching("read a message"):
        response = await client.room_get_event(room_id, event_id)
    if isinstance(response, nio.ErrorResponse):
        return None
    source = response.event.source
    content = source.get("content")
    return str(source.get("sender", "")), content if isinstance(content, dict) else {}
