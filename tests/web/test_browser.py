"""The dashboard in a real browser (headless Chromium through Playwright, SQLite): logging
in, an approval appearing live and approved, revoking a grant, editing a memory and restoring
its earlier version, and screenshots of every page at desktop and phone width.

Without /usr/bin/chromium these skip with a message, except under ``CI=true``, where they fail.
Screenshots go to a temporary directory, or to ``$STEWARD_SCREENSHOTS`` (the committed ones in
docs/screenshots/ are made with ``STEWARD_SCREENSHOTS=docs/screenshots``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

from steward.domain import ApprovalStatus
from steward.domain.clock import SimulatedClock
from steward.service import Service
from steward.store import Store
from steward.testing.http_server import serving
from support.startup import scaled
from support.tenancy import make_tenant
from support.web import Site, ask_approval, chromium, dashboard

PHONE = {"width": 375, "height": 812}
DESKTOP = {"width": 1280, "height": 800}


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
    """Chromium, closed before the site stops: a page's open event stream would otherwise
    keep the server waiting for it."""
    async with chromium() as launched:
        yield launched


async def logged_in(browser: Browser, site: Site, *, phone: bool = False) -> Page:
    context = await browser.new_context(base_url=site.url, viewport=PHONE if phone else DESKTOP)
    page = await context.new_page()
    await page.goto("/inbox")
    await expect(page).to_have_url(site.url + "/login")
    await page.fill("#token", site.a.control)
    await page.click("button.primary")
    await expect(page).to_have_url(site.url + "/")
    return page


async def test_login_with_a_bad_token_then_a_good_one(browser: Browser, web: Site) -> None:
    context = await browser.new_context(base_url=web.url)
    page = await context.new_page()
    await page.goto("/login")
    await page.fill("#token", "wrong")
    await page.click("button.primary")
    await expect(page.locator(".error")).to_contain_text("not valid")
    await page.fill("#token", web.a.control)
    await page.click("button.primary")
    await expect(page.locator("h1")).to_have_text("While you were away")
    await page.click("text=Log out")
    await expect(page).to_have_url(web.url + "/login")


async def test_a_new_approval_appears_live_and_is_approved(browser: Browser, web: Site) -> None:
    page = await logged_in(browser, web)
    await page.goto("/inbox")
    await expect(page.locator("body.live")).to_have_count(1)  # listening to the stream
    await expect(page.locator("article.approval")).to_have_count(1)
    asked = await ask_approval(web.store, web.clock, web.a, to="carol@example.com")
    card = page.locator(f"article[id='{asked.id}']")
    await expect(card).to_contain_text("carol@example.com", timeout=scaled(10_000))
    await expect(page.locator("article.approval")).to_have_count(2)
    await card.locator("button[value='once']").click()
    await expect(page.locator(".flash")).to_have_text("Approved this once.")
    await expect(page.locator(f"article[id='{asked.id}']")).to_have_count(0)
    decided = await web.owner.get_approval(asked.id)
    assert decided.status is ApprovalStatus.APPROVED
    assert decided.decided_by == f"token:{web.a.token.id}"


async def test_revoking_a_grant(browser: Browser, web: Site) -> None:
    page = await logged_in(browser, web)
    await page.goto("/security")
    grant = page.locator(f"li[id='{web.a.grant.id}']")
    await expect(grant).to_have_count(1)
    await grant.locator("button", has_text="Revoke").click()
    await expect(page.locator(".flash")).to_contain_text("Grant revoked")
    await expect(page.locator(f"li[id='{web.a.grant.id}']")).to_have_count(0)
    assert web.a.grant.id not in {g.id for g in await web.owner.list_grants(person_id="ann")}


async def test_editing_a_memory_and_restoring_the_previous_version(
    browser: Browser, web: Site
) -> None:
    page = await logged_in(browser, web)
    await page.goto("/memory")
    await page.click("text=ann lives in Lisbon")
    await page.fill("#content", "ann lives in Porto")
    await page.click("text=Save as a new version")
    await expect(page.locator(".flash")).to_have_text("Saved as version 2.")
    await expect(page.locator("blockquote.memory")).to_have_text("ann lives in Porto")
    await page.locator("li[value='1'] button", has_text="Restore this version").click()
    await expect(page.locator(".flash")).to_contain_text("Version 1 restored")
    await expect(page.locator("blockquote.memory")).to_have_text("ann lives in Lisbon")
    detail = await web.owner.memory_detail(web.a.memory.id)
    assert [v.memory.content for v in detail.history][-1] == "ann lives in Lisbon"
    assert detail.memory.version == 3


async def test_screenshots_of_every_page(browser: Browser, web: Site, shots: Path) -> None:
    await ask_approval(web.store, web.clock, web.a, to="carol@example.com")
    pages = {
        "login": "/login",
        "away": "/?since=0",
        "inbox": "/inbox",
        "goals": "/goals",
        "goal": f"/goals/{web.a.goal.id}",
        "chat": f"/chat/{web.a.task.id}",
        "triggers": "/triggers",
        "memory": "/memory",
        "memory-detail": f"/memory/{web.a.memory.id}",
        "skills": "/skills",
        "skill": f"/skills/{web.a.skill.id}",
        "security": "/security",
    }
    for phone in (False, True):
        page = await logged_in(browser, web, phone=phone)
        for name, path in pages.items():
            if name == "login":
                await page.context.clear_cookies()
            await page.goto(path)
            await expect(page.locator("h1")).to_be_visible()
            assert await page.title() != ""
            width = await page.evaluate("document.documentElement.scrollWidth")
            assert width <= (PHONE if phone else DESKTOP)["width"], f"{name} scrolls sideways"
            await page.screenshot(path=shots / f"{name}-{'phone' if phone else 'desktop'}.png")
            if name == "login":
                await page.fill("#token", web.a.control)
                await page.click("button.primary")
                await expect(page).to_have_url(web.url + "/")
