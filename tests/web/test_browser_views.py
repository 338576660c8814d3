"""The person's browser on the dashboard: the Files page shows what it last showed each task (a
screenshot that opens whole, the page's title, its site and when, in words, no ids), the goal
page shows it beside the task's steps, a screenshot is served only as the picture it was —
never another person's, a changed one or one behind a link — and "Log out everywhere" asks
first, then forgets the profile's cookies, unless a task is using the browser."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from playwright.async_api import expect

from steward.domain.clock import SimulatedClock
from steward.environment.browser.profile import Profiles
from steward.harness.workspace import Workspace
from steward.service import Service
from steward.store import Store
from steward.testing.http_server import serving
from support.screenshots import png, profiles, record_look, sign_in
from support.tenancy import make_tenant
from support.web import Site, chromium, dashboard

PHONE = {"width": 375, "height": 812}

TAG = re.compile(r"<[^>]*>")


def _data(site: Site) -> Path:
    assert site.owner.data_dir is not None
    return site.owner.data_dir


def _looked(site: Site, *, picture: bytes | None = None) -> bytes:
    """A's task looked at the cart 5 minutes ago and took a screenshot; B's task too."""
    shot = png() if picture is None else picture
    at = site.clock.now() - timedelta(minutes=5)
    record_look(_data(site), site.a.person.id, site.a.task.id, at=at, picture=shot)
    record_look(
        _data(site),
        site.b.person.id,
        site.b.task.id,
        at=at,
        url="https://bank.example/",
        title="Bob's bank",
        picture=png(rgb=(0, 0, 0)),
    )
    return shot


def _shot_file(site: Site) -> Path:
    home = Workspace(_data(site) / "workspace").person_dir(site.a.person.id)
    return home / Profiles(_data(site) / "browser").screenshot_folder(site.a.task.id) / "1.png"


def _section(page: str) -> str:
    """The Files page's Browser section (the file listing above it lists the screenshot's
    file among the others)."""
    return page[page.index('<section id="browser"') :]


def _words(page: str) -> str:
    """What the person reads: the page without its tags."""
    return html.unescape(TAG.sub(" ", page))


async def test_the_files_page_shows_each_tasks_last_look(site: Site) -> None:
    _looked(site)
    me = await site.session(site.a.read)
    page = (await me.get("/files")).text
    picture = f"/browser/{site.a.task.id}/picture"
    assert f'<a href="{picture}"' in page  # a tap opens it whole
    assert f'<img src="{picture}"' in page
    words = " ".join(_words(_section(page)).split())
    assert "Browser" in words
    assert "noop “Your cart” on shop.example · 5 minutes ago" in words
    assert site.a.task.id not in words  # no ids
    assert "Bob's bank" not in page
    assert site.b.task.id not in page
    assert "Log out everywhere" not in page  # a read session may not
    control = await site.session(site.a.control)
    assert 'href="/browser/clear"' in (await control.get("/files")).text


async def test_no_look_yet_is_said_in_words(site: Site) -> None:
    me = await site.session(site.a.read)
    words = _words((await me.get("/files")).text)
    assert "My browser has not opened a page for you yet." in words


async def test_the_goal_page_shows_the_tasks_last_screenshot(site: Site) -> None:
    _looked(site)
    me = await site.session(site.a.read)
    page = (await me.get(f"/goals/{site.a.goal.id}")).text
    assert f'<img src="/browser/{site.a.task.id}/picture"' in page
    assert "“Your cart” on shop.example" in _words(page)
    # the conversation view of the task shows it too
    chat = (await me.get(f"/chat/{site.a.task.id}")).text
    assert f'<img src="/browser/{site.a.task.id}/picture"' in chat
    assert "What the browser last showed" in chat


async def test_the_screenshot_is_served_as_a_picture_only(site: Site) -> None:
    shot = _looked(site)
    me = await site.session(site.a.read)
    got = await me.get(f"/browser/{site.a.task.id}/picture")
    assert got.status_code == 200
    assert got.content == shot
    assert got.headers["content-type"] == "image/png"
    assert got.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in got.headers["content-security-policy"]
    # another person's: not found, as a page in words
    refused = await me.get(f"/browser/{site.b.task.id}/picture")
    assert refused.status_code == 404
    assert "text/html" in refused.headers["content-type"]
    assert refused.content != png(rgb=(0, 0, 0))


async def test_a_changed_screenshot_is_not_shown(site: Site) -> None:
    _looked(site)
    _shot_file(site).write_bytes(png(rgb=(255, 0, 0)))  # not what the browser saw
    me = await site.session(site.a.read)
    refused = await me.get(f"/browser/{site.a.task.id}/picture")
    assert refused.status_code == 404
    assert "the screenshot changed after it was taken" in refused.text
    page = (await me.get("/files")).text
    assert "<img" not in page
    assert "No picture: the screenshot changed after it was taken, so it is not shown." in (
        " ".join(_words(page).split())
    )


async def test_a_screenshot_behind_a_link_is_not_served(site: Site, tmp_path: Path) -> None:
    shot = _looked(site)
    elsewhere = tmp_path / "elsewhere.png"
    elsewhere.write_bytes(shot)  # the very bytes: only the link is wrong
    _shot_file(site).unlink()
    _shot_file(site).symlink_to(elsewhere)
    me = await site.session(site.a.read)
    refused = await me.get(f"/browser/{site.a.task.id}/picture")
    assert refused.status_code == 404
    assert "no longer in your workspace" in refused.text
    assert refused.content != shot
    _shot_file(site).unlink()
    _shot_file(site).hardlink_to(elsewhere)  # another name of a file outside
    assert (await me.get(f"/browser/{site.a.task.id}/picture")).status_code == 404


async def test_log_out_everywhere_asks_first_then_forgets_the_cookies(site: Site) -> None:
    _looked(site)
    cookies = sign_in(_data(site), site.a.person.id)
    bobs = sign_in(_data(site), site.b.person.id)
    me = await site.session(site.a.control)
    asked = await me.get("/browser/clear")
    assert asked.status_code == 200
    words = _words(asked.text)
    assert "logged out of every site" in words
    assert 'action="/browser/clear"' in asked.text
    assert cookies.exists()  # asking changed nothing
    answer = await me.post("/browser/clear")
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == "/files#browser"
    assert not cookies.exists()
    profile = profiles(_data(site)).profile_dir(site.a.person.id)
    assert list(profile.iterdir()) == []
    assert bobs.exists()  # another person's browser is not touched
    shown = await me.get("/files")
    assert "Logged out of every site" in _words(shown.text)
    assert "“Your cart” on shop.example" in _words(shown.text)  # what tasks saw stays
    [entry] = [
        e for e in await site.owner.audit_log(person_id=site.a.person.id) if e.kind == "browser"
    ]
    assert entry.data == {"reason": "cleared the browser profile: logged out of every site"}


async def test_log_out_while_a_task_uses_the_browser_is_refused(site: Site) -> None:
    cookies = sign_in(_data(site), site.a.person.id)
    me = await site.session(site.a.control)
    with profiles(_data(site)).hold(site.a.person.id, "tsk_busy"):  # a task holds it
        refused = await me.post("/browser/clear")
    assert refused.status_code == 409
    assert "a task is using the browser right now; try again when it has finished" in (
        _words(refused.text)
    )
    assert cookies.exists()
    audit = await site.owner.audit_log(person_id=site.a.person.id)
    assert not [e for e in audit if e.kind == "browser"]


async def test_a_read_session_cannot_log_out(site: Site) -> None:
    cookies = sign_in(_data(site), site.a.person.id)
    me = await site.session(site.a.read)
    asked = await me.get("/browser/clear")
    assert "log in with a token that may make changes" in _words(asked.text)
    refused = await me.post("/browser/clear")
    assert refused.status_code == 403
    assert cookies.exists()


@pytest.fixture
async def on_sqlite(clock: SimulatedClock, tmp_path: Path) -> AsyncIterator[Site]:
    """The dashboard on SQLite only: what a real browser shows does not depend on the
    backend."""
    store = await Store.open(f"sqlite:///{tmp_path}/steward.db")
    a = await make_tenant(store, clock, "ann", tmp_path)
    b = await make_tenant(store, clock, "bob", tmp_path)
    owner = Service(store, clock, data_dir=tmp_path)
    try:
        async with serving(dashboard(owner)) as url:
            yield Site(url=url, owner=owner, store=store, clock=clock, a=a, b=b)
    finally:
        await store.close()


async def test_on_a_phone_the_thumbnail_shows_and_logging_out_asks_first(
    on_sqlite: Site, shots: Path
) -> None:
    site = on_sqlite
    _looked(site, picture=png(width=360, height=240))
    cookies = sign_in(_data(site), site.a.person.id)
    async with chromium() as browser:
        context = await browser.new_context(base_url=site.url, viewport=PHONE)
        page = await context.new_page()
        await page.goto("/login")
        await page.fill("#token", site.a.control)
        await page.click("button.primary")
        await page.goto("/files")
        thumbnail = page.locator("#browser img")
        await expect(thumbnail).to_be_visible()
        # the picture loaded under the page's policy (same origin, image/png, nosniff)
        assert await thumbnail.evaluate("img => img.complete && img.naturalWidth") == 360
        box = await thumbnail.bounding_box()
        assert box is not None
        assert box["x"] + box["width"] <= PHONE["width"], box  # never wider than the phone
        await page.locator("#browser").screenshot(path=str(shots / "phone-browser.png"))
        await page.get_by_role("link", name="Log out everywhere").click()
        await expect(page.locator("h1")).to_have_text("Log out everywhere?")
        assert cookies.exists()  # asking changed nothing
        await page.get_by_role("button", name="Log out everywhere").click()
        await expect(page.locator(".flash")).to_contain_text("Logged out of every site")
        assert not cookies.exists()
        await context.close()
