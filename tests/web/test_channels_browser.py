"""The Channels page in real Chromium at phone width: it fits the screen, each channel says
where it reaches, the dashboard's manifest is linked, and the service worker registers with the
whole site as its scope (what push notifications and "Add to Home Screen" need); a screenshot
for the docs."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, expect

from support.web import Site
from web.test_browser import PHONE, browser, logged_in, web

__all__ = ["browser", "web"]  # fixtures


async def test_the_channels_page_on_a_phone(browser: Browser, web: Site, shots: Path) -> None:
    await web.owner.add_apprise_channel(
        "work Slack",
        "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ",
        person_id=web.a.person.id,
    )
    page = await logged_in(browser, web, phone=True)
    await page.goto("/channels")
    await expect(page.locator("h1")).to_have_text("Channels")
    await expect(page.locator("#channels")).to_contain_text("Slack (slack://…)")
    # the person's own mail and Matrix channels say where they reach
    mail = page.locator("#channels li", has_text="mail")
    await expect(mail.locator("p.muted")).to_contain_text("E-mail to me@x.io")
    chat = page.locator("#channels li", has_text="chat")
    await expect(chat.locator("p.muted")).to_contain_text(
        "Matrix: your direct room with the agent (@me:x.io)"
    )
    assert "TIiajkdnlazkcOXrIdevi7FQ" not in await page.content()
    manifest = await page.evaluate("document.querySelector('link[rel=manifest]').href")
    assert manifest == web.url + "/static/manifest.webmanifest"
    scope = await page.evaluate(
        """async () => {
            const registration = await navigator.serviceWorker.register("/sw.js", {scope: "/"});
            await navigator.serviceWorker.ready;
            return registration.scope;
        }"""
    )
    assert scope == web.url + "/"
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], "the channels page scrolls sideways"
    await page.screenshot(path=shots / "channels-phone.png", full_page=True)
