"""The ``feed`` connector: one RSS or Atom feed per connection, read-only, no credential."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel

from steward.connectors.base import ConnectorEnv, TriggerSource
from steward.connectors.feed.access import KIND, READ, FeedSettings, day, settings_of, whole_feed
from steward.connectors.feed.source import FeedSource
from steward.connectors.feed.tools import feed_tools
from steward.domain.authority import Connection
from steward.harness.tools import Tool


class FeedConnector:
    """A news feed (RSS or Atom): new entries as events, recent ones on request."""

    kind: ClassVar[str] = KIND
    title: ClassVar[str] = "News feed (RSS or Atom)"
    scopes: ClassVar[tuple[str, ...]] = (READ,)
    read_scopes: ClassVar[tuple[str, ...]] = (READ,)
    settings: ClassVar[type[BaseModel]] = FeedSettings
    credential: ClassVar[bool] = False

    def hosts(self, settings: BaseModel) -> tuple[str, ...]:
        assert isinstance(settings, FeedSettings)
        return (settings.host,)

    async def check(self, connection: Connection, env: ConnectorEnv) -> str:
        """Fetches and reads the feed: "Reading 'Example blog': 20 entries, newest 3 Dec"."""
        feed = await whole_feed(env, connection)
        count = len(feed.entries)
        said = f"Reading '{feed.title}': {count} entr{'y' if count == 1 else 'ies'}"
        newest = feed.newest()
        if newest is not None and newest.published is not None:
            zone = settings_of(connection).zone
            said += f", newest {day(newest.published, zone, env.clock.now())}"
        return said

    def tools(self, env: ConnectorEnv) -> list[Tool]:
        return feed_tools(env)

    def sources(self, env: ConnectorEnv) -> list[TriggerSource]:
        return [FeedSource(env)]


CONNECTOR = FeedConnector()
