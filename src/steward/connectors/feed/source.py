"""The ``feed.entry`` trigger source: each new entry of a feed becomes one event, no model.

A poll is a conditional GET (the validators are kept in the cursor), so an unchanged feed costs
the site a 304. The first poll takes stock: the entries already there are remembered, none is
reported. Later polls report the entries whose keys were not seen (oldest first, at most
:data:`PER_POLL`), and the event's dedupe key is the entry's key, so a restart repeats nothing.
The cursor remembers the keys of the current entries and the most recent others, at most
:data:`REMEMBERED` beyond the feed's own.

Between polls it sleeps on the clock for the connection's ``every_minutes`` (at least the
watcher's interval). A feed that cannot be fetched or read raises
:class:`~steward.connectors.base.ConnectionFailed`: the watcher backs off.

Payload: ``account`` (the connection's name), ``feed`` (its title), ``title``, ``link``,
``published`` (ISO, in the person's zone), ``summary`` (plain text, cut), ``untrusted: true``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from steward.connectors.base import ConnectorEnv, Poll
from steward.connectors.feed.access import fetch_feed, settings_of
from steward.connectors.feed.parse import Entry
from steward.domain.authority import Connection
from steward.domain.watch import Found

ENTRY = "feed.entry"
PER_POLL = 50
"""The most entries one poll reports (the newest; a feed that renamed every entry at once does
not flood the person)."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
REMEMBERED = 500
"""Keys of entries no longer in the feed that are still remembered (a feed that drops an entry
and shows it again later does not announce it twice)."""


def entry_key(connection: Connection, entry: Entry) -> str:
    """The event's dedupe key: the same for the same entry of the same connection."""
    return f"feed:{connection.id}:{hashlib.sha256(entry.key.encode()).hexdigest()[:32]}"


@dataclass
class FeedSource:
    """New entries of the connection's feed."""

    env: ConnectorEnv
    name: str = ENTRY

    async def poll(self, connection: Connection, cursor: dict[str, Any] | None) -> Poll:
        before = cursor or {}
        page, feed = await fetch_feed(
            self.env, connection, etag=before.get("etag"), last_modified=before.get("modified")
        )
        if feed is None:  # 304: nothing new
            validators = {"etag": page.etag, "modified": page.last_modified}
            return Poll(found=[], cursor={**before, **validators})
        keys = [entry_key(connection, e) for e in feed.entries]
        seen: list[str] = list(before.get("seen", []))
        known = set(seen)
        fresh = [
            (key, entry)
            for key, entry in zip(keys, feed.entries, strict=True)
            if cursor is not None and key not in known
        ]
        fresh = _oldest_first(fresh)[-PER_POLL:]
        current = set(keys)
        kept = [k for k in seen if k not in current][:REMEMBERED]
        settings = settings_of(connection)
        found = [
            Found(
                type=ENTRY,
                dedupe_key=key,
                payload={
                    "account": connection.name,
                    "feed": feed.title,
                    "title": entry.title,
                    "link": entry.link,
                    "published": (
                        entry.published.astimezone(settings.zone).isoformat()
                        if entry.published
                        else None
                    ),
                    "summary": entry.summary,
                    "untrusted": True,
                },
            )
            for key, entry in fresh
        ]
        return Poll(
            found=found,
            cursor={
                "etag": page.etag,
                "modified": page.last_modified,
                "title": feed.title,
                "seen": [*dict.fromkeys(keys), *kept],
            },
        )

    async def wait(self, connection: Connection, seconds: float) -> None:
        every = max(seconds, settings_of(connection).every_minutes * 60.0)
        await self.env.clock.sleep_until(self.env.clock.now() + timedelta(seconds=every))


def _oldest_first(entries: list[tuple[str, Entry]]) -> list[tuple[str, Entry]]:
    """By date where entries have one; undated ones keep the feed's order, which is newest
    first in most feeds, so it is reversed."""
    ordered = list(reversed(entries))
    if all(e.published is not None for _, e in ordered):
        ordered.sort(key=lambda pair: pair[1].published or _EPOCH)
    return ordered
