"""The files page on a phone (375x812, real Chromium, SQLite): reached from the navigation,
which stays one row, it lists the workspace's files, and a tap downloads one as a file — an
HTML file too, never opened as a page."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from steward.domain.clock import SimulatedClock
from steward.harness.workspace import Workspace
from steward.service import Service
from steward.store import Store
from steward.testing.http_server import serving
from support.tenancy import make_tenant
from support.web import Site, chromium, dashboard

PHONE = {"width": 375, "height": 812}


@pytest.fixture
async def web(clock: SimulatedClock, tmp_path: Path) -> AsyncIterator[Site]:
    store = await Store.open(f"sqlite:///{tmp_path}/steward.db")
    a = await make_tenant(store, clock, "ann", tmp_path)
    b = await make_tenant(store, clock, "bob", tmp_path)
    owner = Service(store, clock, data_dir=tmp_path)
    try:
        async with serving(dashboard(owner)) as url:
            yield Site(url=url, owner=owner, store=store, clock=clock, a=a, b=b)
    finally:
        await store.close()


@pytest.fixture
async def browser(web: Site) -> AsyncIterator[Browser]:
    async with chromium() as launched:
        yield launched


async def test_a_phone_reaches_the_files_and_downloads_one(
    browser: Browser, web: Site, shots: Path, tmp_path: Path
) -> None:
    offer = Workspace(tmp_path / "workspace").person_dir(web.a.person.id) / "offer.html"
    offer.write_bytes(b"<h1>Win a prize</h1>")  # after the task's file: the newest
    context = await browser.new_context(base_url=web.url, viewport=PHONE, accept_downloads=True)
    page = await context.new_page()
    await page.goto("/login")
    await page.fill("#token", web.a.read)
    await page.click("button.primary")
    await expect(page).to_have_url(web.url + "/")
    header = await page.locator("header.top").bounding_box()
    assert header is not None
    assert header["height"] < 60, header  # the navigation is still one row
    await page.locator("header.top nav").get_by_role("link", name="Files").click()
    await expect(page.locator("h1")).to_have_text("Files")
    await expect(page.locator("main li.card").first).to_contain_text("offer.html")
    await expect(page.locator("main li.card").nth(1)).to_contain_text(
        "what web_fetch returned 10 bytes"
    )
    await expect(page.locator("main")).not_to_contain_text("tsk_")  # no ids
    await page.screenshot(path=str(shots / "phone-files.png"), full_page=True)
    async with page.expect_download() as downloading:
        await page.get_by_role("link", name="offer.html").click()
    download = await downloading.value
    assert download.suggested_filename == "offer.html"
    saved = tmp_path / "saved.html"
    await download.save_as(saved)
    assert saved.read_bytes() == b"<h1>Win a prize</h1>"
    await expect(page.locator("h1")).to_have_text("Files")  # still the list: nothing opened
    await context.close()
