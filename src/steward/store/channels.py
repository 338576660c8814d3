"""Channels: the ways each person is reached (see :mod:`steward.domain.channel`).

A person's channel names are unique (``uq_channels_person_name``): a name taken is a
:class:`~steward.errors.Conflict` said in words, checked in the same transaction as the write.
Removing a channel removes its deliveries (they cascade); the reports they carried stay.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, delete, insert, select, update

from steward.domain.channel import Channel, ChannelKind
from steward.errors import Conflict, NotFound
from steward.store import rows
from steward.store.backend import Backend
from steward.store.persons import load_person
from steward.store.schema import channels


class ChannelRepository:
    """Channels: add, list, rename, enable or disable, remove; when the person last used one."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def add(self, channel: Channel) -> Channel:
        """Store a new channel of an existing person; its name must be free for that person."""
        values = {
            "id": channel.id,
            "person_id": channel.person_id,
            "kind": channel.kind.value,
            "name": channel.name,
            "config": rows.dump(channel.config),
            "enabled": channel.enabled,
            "created_at": rows.ts(channel.created_at),
            "last_used_at": rows.ts_opt(channel.last_used_at),
        }

        def op(conn: Connection) -> Channel:
            load_person(conn, channel.person_id)
            _name_free(conn, channel.person_id, channel.name)
            conn.execute(insert(channels).values(values))
            return load_channel(conn, channel.id)

        return await self.backend.write(op)

    async def get(self, channel_id: str) -> Channel:
        return await self.backend.read(lambda conn: load_channel(conn, channel_id))

    async def list_for(self, person_id: str) -> list[Channel]:
        """One person's channels, oldest first."""
        query = (
            select(channels)
            .where(channels.c.person_id == person_id)
            .order_by(channels.c.created_at, channels.c.id)
        )
        return await self.backend.read(lambda conn: [_channel(r) for r in conn.execute(query)])

    async def set_enabled(self, channel_id: str, *, enabled: bool) -> Channel:
        """Turn a channel on or off; off, nothing is sent through it."""
        return await self._change(channel_id, {"enabled": enabled})

    async def rename(self, channel_id: str, name: str) -> Channel:
        """Give a channel another name, free among its person's channels."""

        def op(conn: Connection) -> Channel:
            channel = load_channel(conn, channel_id)
            if name != channel.name:
                _name_free(conn, channel.person_id, name)
            conn.execute(update(channels).where(channels.c.id == channel_id).values(name=name))
            return load_channel(conn, channel_id)

        return await self.backend.write(op)

    async def update_config(self, channel_id: str, config: dict[str, Any]) -> Channel:
        """Replace a channel's settings (nothing secret: secrets are vault references)."""
        return await self._change(channel_id, {"config": rows.dump(config)})

    async def touch_last_used(self, channel_id: str, now: datetime) -> Channel:
        """The person wrote or answered through this channel at ``now`` (never moves back)."""

        def op(conn: Connection) -> Channel:
            channel = load_channel(conn, channel_id)
            if channel.last_used_at is None or channel.last_used_at < now:
                conn.execute(
                    update(channels)
                    .where(channels.c.id == channel_id)
                    .values(last_used_at=rows.ts(now))
                )
            return load_channel(conn, channel_id)

        return await self.backend.write(op)

    async def remove(self, channel_id: str) -> Channel:
        """Remove a channel and what was waiting to go through it."""

        def op(conn: Connection) -> Channel:
            channel = load_channel(conn, channel_id)
            conn.execute(delete(channels).where(channels.c.id == channel_id))
            return channel

        return await self.backend.write(op)

    async def _change(self, channel_id: str, values: dict[str, Any]) -> Channel:
        def op(conn: Connection) -> Channel:
            load_channel(conn, channel_id)
            conn.execute(update(channels).where(channels.c.id == channel_id).values(values))
            return load_channel(conn, channel_id)

        return await self.backend.write(op)


def _name_free(conn: Connection, person_id: str, name: str) -> None:
    taken = conn.execute(
        select(channels.c.id).where(channels.c.person_id == person_id, channels.c.name == name)
    ).scalar()
    if taken is not None:
        raise Conflict(f"there is already a channel named {name!r}; choose another name")


def load_channel(conn: Connection, channel_id: str) -> Channel:
    row = conn.execute(select(channels).where(channels.c.id == channel_id)).first()
    if row is None:
        raise NotFound("channel", channel_id)
    return _channel(row)


def enabled_channels(conn: Connection, person_id: str) -> list[Channel]:
    """A person's enabled channels, oldest first (in a transaction of the caller)."""
    query = (
        select(channels)
        .where(channels.c.person_id == person_id, channels.c.enabled.is_(True))
        .order_by(channels.c.created_at, channels.c.id)
    )
    return [_channel(r) for r in conn.execute(query)]


def _channel(row: Row[Any]) -> Channel:
    m = row._mapping
    return Channel(
        id=m["id"],
        person_id=m["person_id"],
        kind=ChannelKind(m["kind"]),
        name=m["name"],
        config=json.loads(m["config"]),
        enabled=bool(m["enabled"]),
        created_at=rows.dt(m["created_at"]),
        last_used_at=rows.dt_opt(m["last_used_at"]),
    )
