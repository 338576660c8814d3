"""Feeds that mean harm: a body that is a path or an address (the parser must not open or fetch
it itself, past the broker), an entry with a date no zone can show, and a server that answers
"not modified" to a request for the whole feed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from connectors.feed.test_feed import RSS, Setup, events, item, rss
from steward.connectors import registry
from steward.connectors.base import ConnectionFailed
from steward.connectors.feed.parse import FeedUnreadable, read_feed
from steward.domain.clock import SimulatedClock
from steward.service import Service
from steward.store import Store
from support.webserver import Site, serve_site


@pytest.fixture
def site() -> Iterator[Site]:
    with serve_site() as served:
        yield served


@pytest.fixture
async def setup(
    store: Store, clock: SimulatedClock, tmp_path: Path, site: Site
) -> AsyncIterator[Setup]:
    svc = Service(store, clock, data_dir=tmp_path)
    person = await svc.ensure_person()
    clock.register()
    try:
        yield Setup(svc=svc, person=person.id, clock=clock, tmp_path=tmp_path, site=site)
    finally:
        clock.unregister()


async def test_a_body_naming_a_file_or_an_address_is_not_opened_or_fetched(
    setup: Setup, tmp_path: Path
) -> None:
    local = tmp_path / "private.xml"
    local.write_text(rss(item(1)))
    setup.site.page("/real.xml", rss(item(2)), content_type=RSS)
    for body in (str(local), local.as_uri(), f"{setup.site.url}/real.xml"):
        with pytest.raises(FeedUnreadable, match="is not an RSS or Atom feed"):
            read_feed(body, "https://blog.example/feed", fallback_title="blog")
        setup.site.page("/rss.xml", body, content_type=RSS)
        with pytest.raises(ConnectionFailed, match="is not an RSS or Atom feed"):
            await setup.connect("/rss.xml")
    assert setup.site.count("/real.xml") == 0


async def test_an_entry_with_a_date_out_of_range_is_read_without_one(
    setup: Setup, store: Store
) -> None:
    site = setup.site
    site.page("/rss.xml", rss(item(1)), content_type=RSS)
    con = await setup.connect("/rss.xml")
    watcher = setup.watcher(store)
    [source] = registry.sources("feed", watcher.env)
    await watcher.poll_once(con, source)
    odd = item(2).replace(
        "<pubDate>01 Dec 2026 09:02:00 GMT</pubDate>",
        "<pubDate>Mon, 01 Jan 0001 00:00:00 GMT</pubDate>",
    )
    site.page("/rss.xml", rss(item(1), odd), content_type=RSS)
    assert await watcher.poll_once(con, source) == 0  # no error: the poll went through
    [new] = await events(store, setup.person)
    assert new["title"] == "Post 2"
    assert new["published"] is None


async def test_a_304_to_a_request_for_the_whole_feed_fails_plainly(setup: Setup) -> None:
    setup.site.page("/rss.xml", "", content_type=RSS, status=304, etag=False)
    with pytest.raises(ConnectionFailed, match="answered 'not modified' when asked for the feed"):
        await setup.connect("/rss.xml")
