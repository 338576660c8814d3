"""A feed's text as Steward reads it: its title and entries, each with a stable key.

Parsing is `feedparser`_'s (RSS 0.9x, 1.0, 2.0 and Atom; it is lenient, so a feed with a small
mistake still reads). An entry's key is its id (``<guid>``, ``<id>``), else its link, else a
hash of its title and date: the same entry gives the same key on every poll.

.. _feedparser: https://feedparser.readthedocs.io
"""

from __future__ import annotations

import calendar
import hashlib
import io
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import feedparser
import lxml.html
from lxml.etree import ParserError

from steward.connectors.base import ConnectionFailed
from steward.domain.roles import plain_line

MAX_ENTRIES = 500
"""The most entries read from one feed (in document order)."""
SUMMARY_CHARS = 500
"""The most characters of an entry's summary kept."""
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
"""Dates before this are taken as missing."""
LATEST = datetime(3000, 1, 1, tzinfo=UTC)
"""Dates after this are taken as missing."""


class FeedUnreadable(ConnectionFailed):
    """What the address gave is not a feed that can be read; the message says why."""


@dataclass(kw_only=True, frozen=True)
class Entry:
    """One entry of a feed."""

    key: str
    """Stable for the same entry: its id, else its link, else a hash of title and date."""
    title: str
    """Its title on one line (``""`` when it has none)."""
    link: str | None
    """Where it is read in full."""
    published: datetime | None
    """When it was published (else updated), in UTC."""
    summary: str
    """Its summary as plain text, cut at :data:`SUMMARY_CHARS`."""


@dataclass(kw_only=True, frozen=True)
class Feed:
    """A feed as read once."""

    title: str
    """Its title (the address's host when it has none)."""
    entries: tuple[Entry, ...]
    """Its entries in document order (most feeds put the newest first)."""

    def newest(self) -> Entry | None:
        """The entry with the latest date, if any entry has one."""
        dated = [e for e in self.entries if e.published is not None]
        return max(dated, key=lambda e: e.published or datetime.min) if dated else None


def read_feed(text: str, url: str, *, fallback_title: str) -> Feed:
    """The feed in ``text`` (fetched from ``url``); :class:`FeedUnreadable` when it is not
    an RSS or Atom feed, or too broken to read any entry from."""
    # bytes in a stream, never the text: given a string that looks like a path or a URL,
    # feedparser opens or fetches it itself — past the broker. The text is already decoded
    # (by the page's declared charset): the header says so, over the XML declaration.
    parsed: Any = feedparser.parse(
        io.BytesIO(text.encode("utf-8")),
        response_headers={"content-type": "application/xml; charset=utf-8"},
        sanitize_html=True,
        resolve_relative_uris=True,
    )
    if not parsed.version:
        raise FeedUnreadable(f"{url} is not an RSS or Atom feed")
    # an entry with no id, link or title names nothing (a feed cut off inside an <item>)
    usable = [e for e in parsed.entries if any(e.get(k) for k in ("id", "link", "title"))]
    if parsed.bozo and not usable:
        # the parser's own message may quote the site's text: not repeated in an error
        raise FeedUnreadable(f"the feed at {url} is broken and has no entry to read")
    title = plain_line(str(parsed.feed.get("title") or "")) or fallback_title
    return Feed(title=title, entries=tuple(_entry(raw) for raw in usable[:MAX_ENTRIES]))


def _entry(raw: Any) -> Entry:
    title = plain_line(str(raw.get("title") or ""))
    link = str(raw.get("link") or "").strip() or None
    stamp = raw.get("published_parsed") or raw.get("updated_parsed")
    published = _utc(stamp) if stamp else None
    ident = str(raw.get("id") or "").strip()
    if not ident:
        ident = (
            link
            or "hash:"
            + hashlib.sha256(
                f"{title}\x00{published.isoformat() if published else ''}".encode()
            ).hexdigest()[:32]
        )
    return Entry(
        key=ident,
        title=title,
        link=link,
        published=published,
        summary=_plain(str(raw.get("summary") or ""))[:SUMMARY_CHARS],
    )


def _utc(stamp: time.struct_time) -> datetime | None:
    """feedparser's dates are UTC ``struct_time``s; one outside :data:`EARLIEST` ..
    :data:`LATEST` is taken as missing (year 1 cannot even be shown in a zone west of UTC)."""
    try:
        when = datetime.fromtimestamp(calendar.timegm(stamp), tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return when if EARLIEST <= when <= LATEST else None


def _plain(html: str) -> str:
    """A summary's HTML (already sanitised by feedparser) as one line of text."""
    if "<" not in html:
        return plain_line(html)
    try:
        return plain_line(lxml.html.fragment_fromstring(html, create_parent="div").text_content())
    except (ParserError, ValueError):
        return plain_line(html)
