"""Where the person's browser may go and what it may send, against real Chromium: other hosts
refused however the page tries (address, link, redirect, script), forms sent only by
``submit`` and only once, research mode sending nothing, a page's requests kept off local
addresses."""

from __future__ import annotations

import socket

import pytest

from environment.browser.conftest import RESEARCH, RULES, Shop
from environment.browser.test_session import ref
from steward.environment.browser.network import reachable
from steward.environment.browser.session import (
    BrowserHost,
    NavigationRefused,
    SubmitBlocked,
)
from steward.harness.tools import ToolError


async def test_other_hosts_are_refused_however_the_page_goes(host: BrowserHost, shop: Shop) -> None:
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RULES)
        with pytest.raises(NavigationRefused, match="localhost"):
            await session.open(shop.other + "/direct")
        view = await session.open(shop.url + "/")
        with pytest.raises(NavigationRefused, match="localhost, which your browser"):
            await session.click(ref(view, r'link "Elsewhere"'))
        assert session.host == "127.0.0.1"
        with pytest.raises(NavigationRefused, match="localhost"):
            await session.click(ref(view, r'link "Bounce"'))
        with pytest.raises(NavigationRefused, match="localhost"):
            await session.click(ref(view, r'button "Jump"'))
        with pytest.raises(NavigationRefused, match="localhost"):
            await session.open(shop.url + "/bounce")
        # the refused page is still the one shown
        assert (await session.view()).title == "Shop"
        # a redirect within the allowed host is followed
        hopped = await session.click(ref(view, r'link "Hop"'))
        assert hopped.title == "Done"
        assert hopped.url == shop.url + "/done"
    # nor did the page's image from there load (a local name the connection does not name)
    assert shop.reached("localhost") == []
    assert len(shop.seen("GET", "/bounce")) == 2
    assert shop.seen("GET", "/pixel.png")  # the same image from the allowed host did


async def test_a_new_window_is_followed_within_the_rules(host: BrowserHost, shop: Shop) -> None:
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RULES)
        view = await session.open(shop.url + "/")
        with pytest.raises(NavigationRefused, match="localhost"):
            await session.click(ref(view, r'link "Other window"'))
        assert (await session.view()).title == "Shop"  # the refused window was closed
        opened = await session.click(ref(view, r'link "New window"'))
        assert opened.title == "Done"
        await session._page.close()  # the pop-up closes: back to the page that opened it
        back = await session.view()
        assert back.title == "Shop"
        popped = await session.click(ref(back, r'button "Pop"'))
        assert popped.url == shop.url + "/popped"
    assert shop.reached("localhost") == []


async def test_a_host_that_does_not_answer_is_said_in_words(host: BrowserHost, shop: Shop) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]  # nothing listens there once the socket is closed
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RULES)
        await session.open(shop.url + "/")
        with pytest.raises(ToolError, match=r"127\.0\.0\.1 did not answer"):
            await session.open(f"http://127.0.0.1:{closed}/")
        assert (await session.view()).title == "Shop"


async def test_a_form_is_sent_only_by_submit_and_once(host: BrowserHost, shop: Shop) -> None:
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RULES)
        view = await session.open(shop.url + "/form")
        button = ref(view, r'button "Place order"')
        with pytest.raises(SubmitBlocked, match="browser_submit"):
            await session.click(button)
        assert shop.seen("POST", "/order") == []
        assert (await session.view()).title == "Checkout"
        done = await session.submit(button)
        assert done.title == "Done"
        assert "Order placed" in done.snapshot
        assert done.url == shop.url + "/done"
    [sent] = shop.seen("POST", "/order")
    assert "cart=C-1042" in sent
    assert "who=Ann" in sent


async def test_a_page_may_post_to_its_own_host_only(host: BrowserHost, shop: Shop) -> None:
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RULES)
        view = await session.open(shop.url + "/xhr")
        await session.click(ref(view, r'button "Add to cart"'))
        assert "added" in (await session.wait_for("added", 30)).snapshot
        await session.click(ref(view, r'button "Tell others"'))
        await session.wait_for("stopped", 30)
    assert shop.seen("POST", "/api") == ["add"]
    assert shop.reached("localhost") == []


async def test_research_mode_sends_nothing(host: BrowserHost, shop: Shop) -> None:
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RESEARCH)
        view = await session.open(shop.url + "/xhr")
        await session.click(ref(view, r'button "Add to cart"'))
        await session.wait_for("failed", 30)
        form = await session.open(shop.url + "/form")
        with pytest.raises(ToolError, match="research mode"):
            await session.type(ref(form, r'textbox "Name"'), "Bob")
        with pytest.raises(ToolError, match="research mode"):
            await session.select(ref(form, r'combobox "Shipping"'), ["exp"])
        with pytest.raises(ToolError, match="research mode"):
            await session.submit(ref(form, r'button "Place order"'))
        with pytest.raises(ToolError, match="research mode"):
            await session.click(ref(form, r'button "Place order"'))
        # the same task, its rules widened on a later call, may act
        again = await host.session("ann", "t1", RULES)
        assert again is session
        await session.type(ref(form, r'textbox "Name"'), "Bob")
    assert shop.seen("POST", "/api") == []
    assert shop.seen("POST", "/order") == []


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("example.com", True),
        ("93.184.216.34", True),
        ("localhost", False),
        ("shop.localhost", False),
        ("127.0.0.1", False),
        ("10.0.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),
        ("::1", False),
        ("fe80::1", False),
        ("::ffff:127.0.0.1", False),
        ("", False),
    ],
)
def test_a_page_reaches_only_public_addresses_beyond_its_hosts(host: str, ok: bool) -> None:
    assert reachable(host) is ok
