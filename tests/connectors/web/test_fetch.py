"""The polite fetcher against a real local site: conditional GET, redirects re-checked by the
broker, robots.txt (fetched once, respected, unreadable = nothing allowed), Retry-After,
pacing per host on the clock, sizes, charsets, and plain refusals."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from steward.connectors.web import politeness
from steward.connectors.web.fetch import DEFAULT_USER_AGENT, Fetcher, FetchFailed, FetchRefused
from steward.domain import Connection
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.sentinel.egress import EgressBroker
from steward.sentinel.vault import Vault, VaultKeys, generate_key
from steward.store import Store
from support.webserver import Site, serve_site

SCOPE = "web.read"


@dataclass
class World:
    site: Site
    fetcher: Fetcher
    person: str
    clock: SimulatedClock
    audits: list[dict[str, Any]]

    async def get(self, path: str, **kwargs: Any) -> Any:
        return await self.fetcher.get(
            person_id=self.person, url=self.site.url + path, actor="task:t", scope=SCOPE, **kwargs
        )


@pytest.fixture
def site() -> Iterator[Site]:
    with serve_site() as served:
        yield served


async def make_world(
    store: Store,
    clock: SimulatedClock,
    site: Site,
    *hosts: str,
    vault: Vault | None = None,
    **options: Any,
) -> World:
    person = await store.persons.create_person(name="p", now=clock.now())
    audits: list[dict[str, Any]] = []

    async def audit(**entry: Any) -> None:
        audits.append(entry)

    vault = vault or Vault(VaultKeys(keys=(generate_key(),), source="test"))
    broker = EgressBroker(store, vault, audit=audit, now=clock.now)
    if hosts:
        await store.authority.add_connection(
            Connection(
                id=new_id("con"),
                person_id=person.id,
                kind="web",
                name="home",
                scopes=(SCOPE,),
                hosts=hosts,
                created_at=clock.now(),
            )
        )
    site.stamp = clock.now
    return World(
        site=site,
        fetcher=Fetcher(broker, clock, **options),
        person=person.id,
        clock=clock,
        audits=audits,
    )


@pytest.fixture
async def world(store: Store, clock: SimulatedClock, site: Site) -> AsyncIterator[World]:
    clock.register()  # the test is the one participant: the clock jumps when the fetcher waits
    try:
        yield await make_world(store, clock, site, "127.0.0.1")
    finally:
        clock.unregister()


async def test_a_page_is_fetched_with_our_user_agent_and_validators_come_back(world: World) -> None:
    world.site.page("/p", "<h1>Hello</h1>", last_modified=datetime(2026, 11, 1, tzinfo=UTC))
    page = await world.get("/p")
    assert page.status == 200
    assert not page.not_modified
    assert page.text == "<h1>Hello</h1>"
    assert page.content_type == "text/html; charset=utf-8"
    assert page.url == world.site.url + "/p"
    assert page.etag
    assert page.etag.startswith('"')
    assert page.last_modified == "Sun, 01 Nov 2026 00:00:00 GMT"
    (hit,) = world.site.hits("/p")
    assert hit.headers["user-agent"] == DEFAULT_USER_AGENT
    assert DEFAULT_USER_AGENT.startswith("Steward/")
    assert "+http" in DEFAULT_USER_AGENT


async def test_conditional_get_is_answered_304_until_the_page_changes(world: World) -> None:
    world.site.page("/p", "one")
    first = await world.get("/p")
    again = await world.get("/p", etag=first.etag, last_modified=first.last_modified)
    assert again.not_modified
    assert again.status == 304
    assert again.text == ""
    assert again.etag == first.etag
    world.site.page("/p", "two")
    changed = await world.get("/p", etag=first.etag)
    assert not changed.not_modified
    assert changed.text == "two"
    assert changed.etag != first.etag
    assert world.site.not_modified("/p") == 1
    assert world.site.hits("/p")[1].headers["if-none-match"] == first.etag


async def test_if_modified_since_alone_gets_a_304(world: World) -> None:
    when = datetime(2026, 11, 1, 8, 30, tzinfo=UTC)
    world.site.page("/p", "one", etag=False, last_modified=when)
    first = await world.get("/p")
    assert first.etag is None
    assert first.last_modified is not None
    again = await world.get("/p", last_modified=first.last_modified)
    assert again.not_modified
    assert again.last_modified == first.last_modified
    assert world.site.not_modified("/p") == 1


async def test_redirects_are_followed_and_the_final_url_given(world: World) -> None:
    world.site.redirect("/old", "/middle", status=301)
    world.site.redirect("/middle", world.site.url + "/new")
    world.site.page("/new", "here")
    page = await world.get("/old")
    assert page.text == "here"
    assert page.url == world.site.url + "/new"
    assert [h.path for h in world.site.hits() if h.path != "/robots.txt"] == [
        "/old",
        "/middle",
        "/new",
    ]


async def test_each_redirect_hop_is_checked_again_by_the_broker(world: World) -> None:
    """The connection names 127.0.0.1, not localhost: a redirect there is refused (in words
    that name the host asked for, not the one the site chose)."""
    world.site.redirect("/away", f"http://localhost:{world.site.port}/secret")
    world.site.page("/secret", "internal")
    with pytest.raises(FetchRefused) as refused:
        await world.get("/away")
    assert str(refused.value) == (
        "127.0.0.1 redirects to an address Steward may not read from there; nothing was sent to it"
    )
    assert world.site.count("/secret") == 0
    assert [a["kind"] for a in world.audits] == ["egress_refused"]


async def test_a_redirect_loop_stops_after_five_hops(world: World) -> None:
    world.site.redirect("/a", "/b")
    world.site.redirect("/b", "/a")
    with pytest.raises(FetchFailed, match="redirects more than 5 times"):
        await world.get("/a")
    assert world.site.count("/a") + world.site.count("/b") == 6


async def test_a_private_host_no_connection_names_is_refused_and_nothing_sent(
    store: Store, clock: SimulatedClock, site: Site
) -> None:
    world = await make_world(store, clock, site)  # no connection at all
    site.page("/p", "x")
    with pytest.raises(FetchRefused, match=r"no connection of yours that allows web\.read"):
        await world.get("/p")
    assert site.count() == 0


async def test_robots_txt_is_respected_and_fetched_once_per_day(world: World) -> None:
    world.site.robots("User-agent: *\nDisallow: /private\n\nUser-agent: OtherBot\nDisallow: /\n")
    world.site.page("/public", "ok")
    world.site.page("/private/x", "no")
    assert (await world.get("/public")).text == "ok"
    with pytest.raises(FetchRefused, match=r"robots\.txt asks robots like Steward not to read"):
        await world.get("/private/x")
    assert (await world.get("/public")).text == "ok"
    assert world.site.count("/private/x") == 0
    assert world.site.count("/robots.txt") == 1
    world.clock.advance(timedelta(hours=25))
    world.site.robots("User-agent: steward\nDisallow: /public\n")
    with pytest.raises(FetchRefused):
        await world.get("/public")
    assert world.site.count("/robots.txt") == 2
    assert world.site.count("/public") == 2


async def test_robots_can_be_ignored_when_asked(
    store: Store, clock: SimulatedClock, site: Site
) -> None:
    clock.register()
    try:
        world = await make_world(store, clock, site, "127.0.0.1", respect_robots=False)
        site.robots("User-agent: *\nDisallow: /\n")
        site.page("/p", "read anyway")
        assert (await world.get("/p")).text == "read anyway"
        assert site.count("/robots.txt") == 0
    finally:
        clock.unregister()


async def test_no_robots_txt_allows_everything(world: World) -> None:
    world.site.page("/p", "ok")  # /robots.txt answers 404
    assert (await world.get("/p")).text == "ok"
    assert world.site.hits("/robots.txt")[0].status == 404


async def test_an_unreadable_robots_txt_allows_nothing_until_tried_again(world: World) -> None:
    world.site.robots("oops", status=500)
    world.site.page("/p", "ok")
    with pytest.raises(FetchRefused, match=r"robots.txt could not be read \(.*500"):
        await world.get("/p")
    with pytest.raises(FetchRefused):
        await world.get("/p")
    assert world.site.count("/p") == 0
    assert world.site.count("/robots.txt") == 1
    world.site.robots("")
    world.clock.advance(timedelta(minutes=31))
    assert (await world.get("/p")).text == "ok"


async def test_retry_after_leaves_the_host_alone_until_then(world: World) -> None:
    world.site.fail("/busy", 429, retry_after="120")
    with pytest.raises(FetchFailed, match="asks us to wait 2 minutes") as failed:
        await world.get("/busy")
    assert failed.value.retry_after == 120
    assert failed.value.status == 429
    asked = world.site.count()
    with pytest.raises(FetchFailed, match="not asking again") as early:
        await world.get("/busy")
    assert early.value.retry_after is not None
    assert 0 < early.value.retry_after <= 120
    assert world.site.count() == asked  # nothing sent meanwhile
    world.clock.advance(timedelta(seconds=121))
    world.site.page("/busy", "free again")
    assert (await world.get("/busy")).text == "free again"


async def test_a_503_with_an_http_date_retry_after(world: World) -> None:
    later = world.clock.now() + timedelta(minutes=10)
    world.site.fail("/down", 503, retry_after=later.strftime("%a, %d %b %Y %H:%M:%S GMT"))
    with pytest.raises(FetchFailed) as failed:
        await world.get("/down")
    assert failed.value.retry_after is not None
    assert 590 <= failed.value.retry_after <= 600


async def test_errors_fail_plainly_with_their_status(world: World) -> None:
    world.site.fail("/broken", 500)
    with pytest.raises(FetchFailed) as failed:
        await world.get("/broken")
    assert str(failed.value) == "127.0.0.1 answered 500"  # no reason phrase: the site's words
    assert failed.value.status == 500
    assert failed.value.retry_after is None
    with pytest.raises(FetchFailed, match="answered 404") as missing:
        await world.get("/nowhere")
    assert missing.value.status == 404


@pytest.mark.parametrize("robots", [True, False])
async def test_an_unreachable_host_fails_plainly_and_is_asked_again_next_time(
    store: Store, clock: SimulatedClock, site: Site, robots: bool
) -> None:
    clock.register()
    try:
        world = await make_world(store, clock, site, "127.0.0.1", respect_robots=robots)
        with serve_site() as gone:
            port = gone.port
        for _ in range(2):
            with pytest.raises(FetchFailed, match=r"could not reach 127\.0\.0\.1"):
                await world.fetcher.get(
                    person_id=world.person,
                    url=f"http://127.0.0.1:{port}/",
                    actor="task:t",
                    scope=SCOPE,
                )
    finally:
        clock.unregister()


async def test_requests_to_one_host_are_spaced_on_the_clock(world: World) -> None:
    for n in range(4):
        world.site.page(f"/{n}", str(n))

    async def caller(n: int) -> str:
        # each caller is a participant of the clock, as a watch loop is: time moves only
        # when every one of them waits, never while a request is on its way
        world.clock.register()
        try:
            return (await world.get(f"/{n}")).text
        finally:
            world.clock.unregister()

    world.clock.unregister()  # the test itself only waits for the callers
    try:
        texts = await asyncio.gather(*(caller(n) for n in range(4)))
    finally:
        world.clock.register()
    assert sorted(texts) == ["0", "1", "2", "3"]
    stamps = [h.at for h in world.site.hits() if h.at is not None]
    assert len(stamps) == 5  # robots.txt, then the four pages
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(stamps)]
    assert all(gap >= 1.0 for gap in gaps), gaps


async def test_a_crawl_delay_longer_than_ours_is_honoured(world: World) -> None:
    world.site.robots("User-agent: *\nCrawl-delay: 5\n")
    world.site.page("/a", "a")
    world.site.page("/b", "b")
    await world.get("/a")
    await world.get("/b")
    a, b = (h.at for h in world.site.hits() if h.path in ("/a", "/b"))
    assert a is not None
    assert b is not None
    assert (b - a).total_seconds() >= 5


async def test_a_page_too_big_is_refused_plainly(world: World) -> None:
    world.site.page("/big", "x" * 5000)
    with pytest.raises(FetchRefused, match="is more than the 1 kB read at most"):
        await world.get("/big", max_bytes=1000)


async def test_the_declared_charset_decodes_the_page(world: World) -> None:
    world.site.page(
        "/latin",
        "Prix : 12,50 €uro — café",
        content_type="text/html; charset=cp1252",
        encoding="cp1252",
    )
    assert (await world.get("/latin")).text == "Prix : 12,50 €uro — café"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://127.0.0.1/file", "not an http or https URL"),
        ("file:///etc/passwd", "not an http or https URL"),
        ("http://127.0.0.1/{{secret:token}}", "cannot carry a {{secret:…}} placeholder"),
        ("http://user@127.0.0.1/", "user information"),
    ],
)
async def test_what_is_not_a_plain_web_address_is_refused(
    world: World, url: str, message: str
) -> None:
    with pytest.raises(FetchRefused, match=message.replace("{", r"\{").replace("}", r"\}")):
        await world.fetcher.get(person_id=world.person, url=url, actor="task:t", scope=SCOPE)
    assert world.site.count() == 0


async def test_a_busy_robots_txt_is_asked_again_when_the_host_said(world: World) -> None:
    world.site.page("/robots.txt", "busy", status=503, headers={"Retry-After": "60"}, etag=False)
    world.site.page("/p", "ok")
    with pytest.raises(FetchFailed, match="asks us to wait 60 seconds") as busy:
        await world.get("/p")
    assert busy.value.retry_after == 60
    world.clock.advance(timedelta(seconds=61))
    world.site.robots("User-agent: *\nAllow: /\n")
    assert (await world.get("/p")).text == "ok"  # nothing cached from the busy answer
    assert world.site.count("/robots.txt") == 2


async def test_a_robots_txt_answering_429_without_a_date_allows_nothing(world: World) -> None:
    world.site.robots("slow down", status=429)
    world.site.page("/p", "ok")
    with pytest.raises(FetchRefused, match="could not be read"):
        await world.get("/p")
    assert world.site.count("/p") == 0


async def test_the_pacer_forgets_idle_hosts_but_not_one_that_asked_to_wait(
    clock: SimulatedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(politeness, "KEPT_HOSTS", 2)
    pacer = politeness.HostPacer(clock, 1.0)
    await pacer.turn("a.example")
    pacer.hold_off("b.example", 600)
    clock.advance(timedelta(seconds=5))
    await pacer.turn("c.example")  # a.example is idle: forgotten
    assert pacer.blocked_for("b.example") == 595
    assert set(pacer._hosts) == {"b.example", "c.example"}
