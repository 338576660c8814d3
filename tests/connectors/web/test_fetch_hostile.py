"""The fetcher against sites that mean harm: a redirect or a stored ETag that would make it send
one of the person's secrets, a body without end, a trickle that never ends, a
public page that redirects into the person's network, waits asked for centuries, and error
messages that would carry the site's words to the model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from connectors.web.test_fetch import SCOPE, World, make_world
from steward.connectors.web import politeness
from steward.connectors.web.fetch import Fetcher, FetchFailed, FetchRefused
from steward.domain import Connection
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.sentinel.egress import EgressBroker
from steward.sentinel.vault import Vault, VaultKeys, generate_key
from steward.store import Store
from steward.testing.model_server import serve_in_thread
from support.startup import scaled
from support.webserver import Site, serve_site

TOKEN = "TOPSECRETTOKEN"
MB = 1_000_000


@pytest.fixture
def site() -> Iterator[Site]:
    with serve_site() as served:
        yield served


async def secret_world(store: Store, clock: SimulatedClock, site: Site) -> World:
    """The person lets Steward read 127.0.0.1 and localhost, and keeps a secret bound to
    127.0.0.1 (a bot token for a local service)."""
    vault = Vault(VaultKeys(keys=(generate_key(),), source="test"))
    world = await make_world(store, clock, site, "127.0.0.1", "localhost", vault=vault)
    await store.secrets.put_secret(
        person_id=world.person,
        name="tg",
        ciphertext=vault.encrypt(TOKEN),
        hosts=["127.0.0.1"],
        now=clock.now(),
    )
    return world


def leaked(site: Site) -> list[str]:
    return [
        str(hit) for hit in site.hits() if TOKEN in hit.path or TOKEN in str(hit.headers.values())
    ]


async def test_a_redirect_cannot_make_the_fetcher_send_a_secret(
    store: Store, clock: SimulatedClock, site: Site
) -> None:
    clock.register()
    try:
        world = await secret_world(store, clock, site)
        site.redirect("/away", f"{site.url}/bot{{{{secret:tg}}}}/send")
        with pytest.raises(FetchRefused, match="redirects to an address Steward may not read"):
            await world.fetcher.get(
                person_id=world.person,
                url=f"http://localhost:{site.port}/away",
                actor="task:t",
                scope=SCOPE,
            )
    finally:
        clock.unregister()
    assert leaked(site) == []
    assert [h.path for h in site.hits() if h.path.startswith("/bot")] == []


async def test_an_etag_carrying_a_placeholder_is_not_sent_back(
    store: Store, clock: SimulatedClock, site: Site
) -> None:
    clock.register()
    try:
        world = await secret_world(store, clock, site)
        site.page("/feed", "items", etag=False, headers={"ETag": '"{{secret:tg}}"'})
        first = await world.get("/feed")
        assert first.etag == '"{{secret:tg}}"'
        again = await world.get("/feed", etag=first.etag, last_modified="{{secret:tg}}")
    finally:
        clock.unregister()
    assert again.text == "items"  # read whole: the validators were not sent
    assert "if-none-match" not in site.hits("/feed")[1].headers
    assert "if-modified-since" not in site.hits("/feed")[1].headers
    assert leaked(site) == []


# --- bodies without end -----------------------------------------------------------------------


@dataclass
class Hostile:
    """A site whose answers never end."""

    url: str = ""
    sent: int = 0
    """Bytes the endless page has produced."""

    async def endless(self, request: Request) -> Response:
        async def chunks() -> AsyncIterator[bytes]:
            # "endless" up to far past any limit; it stops when the reader hangs up, so the
            # server's shutdown does not wait on a stream nobody reads
            while self.sent < 200 * MB and not await request.is_disconnected():
                self.sent += 65536
                yield b"x" * 65536

        return StreamingResponse(chunks(), media_type="text/html")

    async def trickle(self, request: Request) -> Response:
        async def chunks() -> AsyncIterator[bytes]:
            while not await request.is_disconnected():
                yield b"x"
                await asyncio.sleep(0.05)

        return StreamingResponse(chunks(), media_type="text/html")


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    served = Hostile()
    app = Starlette(
        routes=[
            Route("/endless", served.endless),
            Route("/trickle", served.trickle),
        ]
    )
    with serve_in_thread(app) as url:
        served.url = url
        yield served


async def hostile_fetcher(
    store: Store, clock: SimulatedClock, site: Site, **broker: Any
) -> tuple[Fetcher, str]:
    world = await make_world(store, clock, site, "127.0.0.1")
    vault = Vault(VaultKeys(keys=(generate_key(),), source="test"))
    fetcher = Fetcher(EgressBroker(store, vault, now=clock.now, **broker), clock)
    return fetcher, world.person


async def test_an_endless_page_is_read_up_to_the_limit_and_no_further(
    store: Store, clock: SimulatedClock, site: Site, hostile: Hostile
) -> None:
    fetcher, person = await hostile_fetcher(store, clock, site)
    clock.register()
    try:
        read = fetcher.get(
            person_id=person, url=f"{hostile.url}/endless", actor="t", scope=SCOPE, max_bytes=MB
        )
        with pytest.raises(FetchRefused, match=r"is more than the 1\.0 MB read at most"):
            await asyncio.wait_for(read, scaled(60))
    finally:
        clock.unregister()
    assert hostile.sent < 100 * MB  # it stopped reading; the socket's buffers hold the rest


async def test_a_page_that_trickles_forever_fails_at_the_deadline(
    store: Store, clock: SimulatedClock, site: Site, hostile: Hostile
) -> None:
    fetcher, person = await hostile_fetcher(store, clock, site, deadline_seconds=1.0)
    clock.register()
    try:
        read = fetcher.get(person_id=person, url=f"{hostile.url}/trickle", actor="t", scope=SCOPE)
        with pytest.raises(FetchFailed, match=r"^127\.0\.0\.1 stopped answering"):
            await asyncio.wait_for(read, scaled(60))
    finally:
        clock.unregister()


# --- a public page cannot lead into the person's network -----------------------------------------

PUBLIC_ADDRESS = "93.184.216.34"


@dataclass
class Internet:
    """Stands for the internet: ``public.example`` resolves to a public address, and the
    connection to that address is made to the local site (a real socket, as a NAT would)."""

    port: int
    asked: list[str] = field(default_factory=list)

    async def resolve(self, host: str, port: int) -> Sequence[str]:
        self.asked.append(host)
        return [PUBLIC_ADDRESS] if host == "public.example" else ["127.0.0.1"]

    def client(self, **options: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=_Routed(self.port), **options)


class _Routed(httpx.AsyncBaseTransport):
    def __init__(self, port: int) -> None:
        self._port = port
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.host == PUBLIC_ADDRESS:
            request.url = request.url.copy_with(host="127.0.0.1", port=self._port)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def test_a_public_page_cannot_redirect_into_the_persons_network(
    store: Store, clock: SimulatedClock, site: Site
) -> None:
    """The person's web connection names 127.0.0.1 (their NAS, say): a public page that
    redirects there is not followed, though a request straight there would be."""
    internet = Internet(site.port)
    person = await store.persons.create_person(name="p", now=clock.now())
    await store.authority.add_connection(
        Connection(
            id=new_id("con"),
            person_id=person.id,
            kind="web",
            name="home",
            scopes=(SCOPE,),
            hosts=("127.0.0.1",),
            created_at=clock.now(),
        )
    )
    vault = Vault(VaultKeys(keys=(generate_key(),), source="test"))
    broker = EgressBroker(
        store, vault, now=clock.now, resolve=internet.resolve, client_factory=internet.client
    )
    fetcher = Fetcher(broker, clock)
    site.redirect("/go", f"{site.url}/nas/admin")
    site.page("/nas/admin", "the NAS")
    site.page("/news", "public news")
    clock.register()
    try:
        public = f"http://public.example:{site.port}"
        assert (
            await fetcher.get(person_id=person.id, url=f"{public}/news", actor="t", scope=SCOPE)
        ).text == "public news"
        with pytest.raises(FetchRefused, match="redirects to an address Steward may not read"):
            await fetcher.get(person_id=person.id, url=f"{public}/go", actor="t", scope=SCOPE)
        assert site.count("/nas/admin") == 0
        direct = await fetcher.get(
            person_id=person.id, url=f"{site.url}/nas/admin", actor="t", scope=SCOPE
        )
    finally:
        clock.unregister()
    assert direct.text == "the NAS"
    assert "public.example" in internet.asked


async def test_web_read_style_fetch_stops_at_a_redirect_to_another_host(world: World) -> None:
    world.site.redirect("/same", "/here")
    world.site.page("/here", "same host")
    world.site.redirect("/away", f"http://localhost:{world.site.port}/there?d=private")
    page = await world.get("/same", other_hosts=False)
    assert page.text == "same host"
    assert page.moved_to is None
    moved = await world.get("/away", other_hosts=False)
    assert moved.moved_to == f"http://localhost:{world.site.port}/there?d=private"
    assert moved.status == 302
    assert moved.text == ""
    assert world.site.count("/there?d=private") == 0


@pytest.fixture
async def world(store: Store, clock: SimulatedClock, site: Site) -> AsyncIterator[World]:
    clock.register()
    try:
        yield await make_world(store, clock, site, "127.0.0.1")
    finally:
        clock.unregister()


# --- waits a site asks for -------------------------------------------------------------------


@pytest.mark.parametrize("delay", ["99999999999999", "1e9", "7200"])
async def test_a_crawl_delay_past_an_hour_is_refused_plainly(world: World, delay: str) -> None:
    world.site.robots(f"User-agent: *\nCrawl-delay: {delay}\n")
    world.site.page("/a", "a")
    began = world.clock.now()
    with pytest.raises(FetchRefused, match="asks robots to wait more than 60 minutes between"):
        await world.get("/a")
    assert world.clock.now() - began < timedelta(hours=1)
    assert world.site.count("/a") == 0


@pytest.mark.parametrize("wait", ["99999999999999999", "86400"])
async def test_a_retry_after_past_an_hour_holds_the_host_off_for_an_hour(
    world: World, wait: str
) -> None:
    world.site.fail("/busy", 503, retry_after=wait)
    with pytest.raises(FetchFailed, match="more than 60 minutes, so it is not asked again") as busy:
        await world.get("/busy")
    assert busy.value.retry_after == 3600
    world.clock.advance(timedelta(hours=1, seconds=1))
    world.site.page("/busy", "back")
    assert (await world.get("/busy")).text == "back"


async def test_a_cancelled_caller_gives_its_turn_back(clock: SimulatedClock) -> None:
    pacer = politeness.HostPacer(clock, 10.0)
    began = clock.now()
    await pacer.turn("a.example")  # now; the next turn is in 10 s
    waiting = asyncio.create_task(pacer.turn("a.example"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert pacer._hosts["a.example"].next_at == began + timedelta(seconds=10)


# --- what the site says stays out of error messages ----------------------------------------------


async def test_errors_carry_no_words_the_site_chose(world: World) -> None:
    """A reason phrase, a redirect's target and a robots.txt's answer are the site's text;
    errors reach the model unmarked, so they name only the host asked for and the status."""
    world.site.redirect("/moved", "/gone?instructions=read-evil.example")
    with pytest.raises(FetchFailed) as failed:
        await world.get("/moved")
    assert str(failed.value) == "127.0.0.1 answered 404"
    world.site.redirect("/odd", "ftp://evil.example/steal")
    with pytest.raises(FetchRefused) as odd:
        await world.get("/odd")
    assert "evil" not in str(odd.value)
    world.site.redirect("/big", "/big-one")
    world.site.page("/big-one", "x" * 5000)
    with pytest.raises(FetchRefused) as big:
        await world.get("/big", max_bytes=1000)
    assert "big-one" not in str(big.value)
