"""The Matrix channel inbound: a long-poll sync of the bot's rooms, per Matrix channel, that
hands the person's messages over and has the agent's answers posted.

One process follows each channel, under a lease in the database. Only messages from the
person's own user id are handed over (:class:`MatrixPeople`), with the
room's members as read then (the room's audience follows from them); what others write in a
group room is never taken as the person's words. The bot joins a room when the person invites
it, and no one else's invitation. The sync position is saved in the channel before the messages
it brought are handed over: a restart never replays old messages (a crash in between loses those
messages rather than taking them twice — the person sees no answer and writes again). The first
sync of a channel only takes stock: what was said before the channel existed is not answered.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any, Protocol

import nio
import structlog

from steward.connectors.base import ConnectorEnv
from steward.connectors.matrix.client import (
    REQUEST_SECONDS,
    BotAccount,
    bot_account,
    checked,
    connected,
    reaching,
    room_members,
)
from steward.connectors.matrix.room import RoomMessage, own_words, reply_target
from steward.domain.channel import Channel, ChannelKind
from steward.errors import ChannelRefused, ChannelUnavailable, NotFound
from steward.runtime.worker import default_worker_name

log = structlog.get_logger(__name__)


class MatrixPeople(Protocol):
    """Where the person's messages go (the facade's Matrix part)."""

    async def take_matrix_message(self, message: RoomMessage) -> str: ...

    async def matrix_answers(self, *, channel_id: str) -> int: ...


@dataclass(kw_only=True)
class MatrixListener:
    """Follows every enabled Matrix channel's rooms (one long poll each)."""

    env: ConnectorEnv
    """The store (channels) and the broker opening the bot's token."""
    people: MatrixPeople
    """Takes the person's messages and posts the agent's answers."""
    poll_seconds: float = 25.0
    """How long one sync waits on the homeserver for something new."""
    answer_seconds: float = 1.0
    """How often the agent's new answers are looked for."""
    refresh_seconds: float = 30.0
    """How often channels added or removed are looked for."""
    retry_seconds: float = 15.0
    """Wait after a homeserver that could not be reached or refused."""
    holder: str = field(default_factory=default_worker_name)
    """This process's name in the channels' leases: one process follows each channel."""
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    _holding: set[str] = field(default_factory=set)

    @property
    def lease_seconds(self) -> float:
        """A channel's lease outlives one long poll and a retry, with margin."""
        return 2 * (self.poll_seconds + REQUEST_SECONDS + self.retry_seconds)

    def _lock(self, channel_id: str) -> asyncio.Lock:
        """One writer of a channel's settings at a time (the sync position, the rooms)."""
        return self._locks.setdefault(channel_id, asyncio.Lock())

    async def channels(self) -> list[Channel]:
        """Every enabled Matrix channel."""
        found: list[Channel] = []
        for person in await self.env.store.persons.list_persons():
            for channel in await self.env.store.channels.list_for(person.id):
                if channel.kind is ChannelKind.MATRIX and channel.enabled:
                    found.append(channel)
        return found

    async def run(self, stop: asyncio.Event) -> None:
        """Follow every Matrix channel until ``stop`` is set."""
        following: dict[str, asyncio.Task[None]] = {}
        try:
            while not stop.is_set():
                try:
                    current = {c.id for c in await self.channels()}
                except Exception as exc:  # the database, most likely: look again later
                    log.warning("cannot list Matrix channels", error=str(exc))
                    current = set(following)
                for channel_id in current - set(following):
                    following[channel_id] = asyncio.create_task(self.follow(channel_id, stop))
                for channel_id in set(following) - current:
                    following.pop(channel_id).cancel()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.refresh_seconds)
        finally:
            for task in following.values():
                task.cancel()
            await asyncio.gather(*following.values(), return_exceptions=True)

    async def follow(self, channel_id: str, stop: asyncio.Event) -> None:
        """Sync one channel and post its answers until ``stop`` is set."""
        answering = asyncio.create_task(self._answer(channel_id, stop))
        # the bot's token is opened once (each opening is audited), and again after a failure
        account: BotAccount | None = None
        lease = f"matrix:{channel_id}"
        try:
            while not stop.is_set():
                try:
                    held = await self.env.store.schedule.acquire_lease(
                        lease, holder=self.holder, ttl_seconds=self.lease_seconds
                    )
                    if held is None:  # another process follows it; look again later
                        self._holding.discard(channel_id)
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(stop.wait(), self.refresh_seconds)
                        continue
                    self._holding.add(channel_id)
                    if account is None:
                        account = await bot_account(
                            self.env, await self.env.store.channels.get(channel_id)
                        )
                    await self.sync_once(
                        channel_id, wait_seconds=self.poll_seconds, account=account
                    )
                    continue
                except NotFound:
                    return  # the channel was removed
                except (ChannelUnavailable, ChannelRefused) as exc:
                    account = None
                    log.warning("Matrix channel not synced", channel=channel_id, error=str(exc))
                except Exception as exc:  # the database, most likely
                    log.warning("Matrix sync failed", channel=channel_id, error=str(exc))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.retry_seconds)
        finally:
            self._holding.discard(channel_id)
            answering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await answering
            with contextlib.suppress(Exception):
                await self.env.store.schedule.release_lease(lease, holder=self.holder)

    async def _answer(self, channel_id: str, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                if channel_id in self._holding:  # the process following the channel answers
                    async with self._lock(channel_id):
                        await self.people.matrix_answers(channel_id=channel_id)
            except Exception as exc:  # the database or the homeserver: next time
                log.warning("Matrix answers not posted", channel=channel_id, error=str(exc))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.answer_seconds)

    async def sync_once(
        self, channel_id: str, *, wait_seconds: float = 0.0, account: BotAccount | None = None
    ) -> int:
        """One sync of a channel (waiting up to ``wait_seconds`` on the homeserver for something
        new): the person's invitations accepted, their messages handed over; how many.
        ``account``: the bot's account opened already (else it is opened from the vault)."""
        channel = await self.env.store.channels.get(channel_id)
        if channel.kind is not ChannelKind.MATRIX or not channel.enabled:
            return 0
        since = channel.config.get("since")
        bot = str(channel.config.get("user", ""))
        person = str(channel.config.get("person", ""))
        async with connected(account or await bot_account(self.env, channel)) as client:
            async with reaching("sync"):
                response = await client.sync(
                    timeout=int(wait_seconds * 1000) if since else 0,
                    since=str(since) if since else None,
                    full_state=False if since else None,
                )
            synced = checked(response, "sync")
            assert isinstance(synced, nio.SyncResponse)
            async with self._lock(channel_id):
                current = await self.env.store.channels.get(channel_id)
                await self.env.store.channels.update_config(
                    channel_id, {**current.config, "since": synced.next_batch}
                )
            for room_id, invite in synced.rooms.invite.items():
                if _invited_by(invite.invite_state, bot=bot) == person:
                    async with reaching("join a room"):
                        checked(await client.join(room_id), "join the room")
            if not since:
                return 0  # taking stock: earlier messages are not answered
            taken = 0
            for room_id, info in synced.rooms.join.items():
                members: frozenset[str] | None = None
                for event in info.timeline.events:
                    words = _words(event.source, bot=bot)
                    if words is None:
                        continue
                    sender, text, reply_to, event_id = words
                    if sender != person:
                        log.info("not the person's message: not taken", room=room_id)
                        continue
                    members = members or await room_members(client, room_id)
                    message = RoomMessage(
                        channel_id=channel_id,
                        room_id=room_id,
                        event_id=event_id,
                        sender=sender,
                        text=text,
                        reply_to=reply_to,
                        members=members,
                    )
                    async with self._lock(channel_id):
                        said = await self.people.take_matrix_message(message)
                    log.info("Matrix message taken", channel=channel_id, outcome=said)
                    taken += 1
            return taken


def _invited_by(state: list[Any], *, bot: str) -> str | None:
    """Who invited the bot, from the state shown with an invitation: the sender of the bot's
    own ``invite`` membership (the room's other state — its name, say — may have been set by
    anyone in it, the person included)."""
    for event in state:
        if (
            isinstance(event, nio.InviteMemberEvent)
            and event.state_key == bot
            and event.membership == "invite"
        ):
            return str(event.sender)
    return None


def _words(source: dict[str, Any], *, bot: str) -> tuple[str, str, str | None, str] | None:
    """(sender, own words, the event answered, event id) of a text message someone other than
    the bot wrote; None for anything else."""
    if source.get("type") != "m.room.message":
        return None
    sender = source.get("sender")
    content = source.get("content")
    event_id = source.get("event_id")
    if not isinstance(sender, str) or sender == bot or not isinstance(event_id, str):
        return None
    if not isinstance(content, dict) or content.get("msgtype") != "m.text":
        return None
    body = content.get("body")
    if not isinstance(body, str):
        return None
    return sender, own_words(body), reply_target(content), event_id
