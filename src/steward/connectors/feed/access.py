"""A feed connection's settings, and reading its feed through the polite fetcher."""

from __future__ import annotations

import asyncio
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator

from steward.connectors.base import ConnectionFailed, ConnectorEnv
from steward.connectors.feed.parse import Feed, FeedUnreadable, read_feed
from steward.connectors.web.fetch import FetchFailed, FetchRefused, Page, shared_fetcher
from steward.domain.authority import Connection
from steward.sentinel.urls import UrlRefused, parse_url

KIND = "feed"
READ = "feed.read"
MIN_MINUTES = 5
"""The shortest time between two polls of one feed: more often is not polite."""


class FeedSettings(BaseModel):
    """A ``feed`` connection's settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(description="the feed's address (RSS or Atom), http or https")
    every_minutes: int = Field(
        default=30, ge=MIN_MINUTES, le=7 * 24 * 60, description="how often it is looked at"
    )
    time_zone: str = Field(
        default="UTC", description="IANA time zone the person reads times in (Europe/Paris)"
    )

    @field_validator("url")
    @classmethod
    def _web_address(cls, url: str) -> str:
        try:
            return parse_url(url).text
        except UrlRefused as exc:
            raise ValueError(str(exc)) from None

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f'unknown time zone "{name}" (use an IANA name)') from None
        return name

    @property
    def host(self) -> str:
        """The feed's host (the connection names it, so a feed on a local host is read)."""
        return parse_url(self.url).host

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)


def settings_of(connection: Connection) -> FeedSettings:
    return FeedSettings.model_validate(connection.settings)


async def fetch_feed(
    env: ConnectorEnv,
    connection: Connection,
    *,
    etag: str | None = None,
    last_modified: str | None = None,
) -> tuple[Page, Feed | None]:
    """The connection's feed, conditionally when validators are given: the page, and the feed
    read from it (None when the server said it has not changed). :class:`ConnectionFailed` in
    plain words when it cannot be fetched or read."""
    page = await _fetch(env, connection, etag=etag, last_modified=last_modified)
    if page.not_modified:
        return page, None
    return page, await _read(page, settings_of(connection))


async def whole_feed(env: ConnectorEnv, connection: Connection) -> Feed:
    """The connection's feed, fetched whole (no validators); a server that answers "not
    modified" anyway fails plainly."""
    page = await _fetch(env, connection)
    settings = settings_of(connection)
    if page.not_modified:
        raise FeedUnreadable(f"{settings.host} answered 'not modified' when asked for the feed")
    return await _read(page, settings)


async def _fetch(
    env: ConnectorEnv,
    connection: Connection,
    *,
    etag: str | None = None,
    last_modified: str | None = None,
) -> Page:
    settings = settings_of(connection)
    try:
        return await shared_fetcher(env).get(
            person_id=connection.person_id,
            url=settings.url,
            actor=f"connection:{connection.id}",
            scope=READ,
            etag=etag,
            last_modified=last_modified,
        )
    except (FetchFailed, FetchRefused) as exc:
        raise ConnectionFailed(str(exc)) from None


async def _read(page: Page, settings: FeedSettings) -> Feed:
    """A large feed takes seconds to parse: not on the event loop. Messages name the address
    the person gave, not where a redirect led."""
    return await asyncio.to_thread(read_feed, page.text, settings.url, fallback_title=settings.host)


def day(when: datetime, zone: ZoneInfo, now: datetime) -> str:
    """``3 Dec`` (with the year when it is not this year's), in the person's zone."""
    local = when.astimezone(zone)
    shown = f"{local.day} {local:%b}"
    return shown if local.year == now.astimezone(zone).year else f"{shown} {local.year}"
