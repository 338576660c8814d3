"""The person's browser session against real Chromium: the persistent profile, one task at a
time, no process left after an activation (ended or cancelled), the page as the agent reads
it, screenshots, downloads, a form's fields, and the view after a restart."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import re
import stat
import sys

import psutil
import pytest
from playwright.async_api import FloatRect

from environment.browser.conftest import PASSWORD, RULES, Shop
from steward.environment.browser import session as session_module
from steward.environment.browser.profile import BrowserBusy, Profiles
from steward.environment.browser.session import (
    RESTARTED,
    BrowserHost,
    PageView,
    StaleRef,
)
from steward.environment.browser.transfer import safe_name
from steward.harness.tools import ToolError
from steward.harness.workspace import Workspace
from support.web import chromium


def ref(view: PageView, pattern: str) -> str:
    """The reference of the first snapshot line matching ``pattern``."""
    for line in view.snapshot.splitlines():
        if re.search(pattern, line):
            found = re.search(r"\[ref=((?:f\d+)?e\d+)\]", line)
            assert found, line
            return found.group(1)
    raise AssertionError(f"nothing like {pattern!r} on the page:\n{view.snapshot}")


def chromium_children() -> list[psutil.Process]:
    return [
        p
        for p in psutil.Process().children(recursive=True)
        if "chrom" in (p.name() + " ".join(_cmdline(p))).lower()
    ]


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


async def no_chromium_left() -> None:
    # the processes exit as the browser closes; give a busy machine a moment to reap them
    for _ in range(100):
        if not [p for p in chromium_children() if p.is_running() and _alive(p)]:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"chromium still running: {chromium_children()}")


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


async def test_the_page_is_read_with_refs_the_page_cannot_fake(
    host: BrowserHost, shop: Shop
) -> None:
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RULES)
        view = await session.open(shop.url + "/")
        assert view.title == "Shop"
        assert view.host == "127.0.0.1"
        assert session.host == "127.0.0.1"
        assert "Kettle shop" in view.snapshot
        # the page's own text "[ref=e2]" is shown, but not as a reference
        assert "Write [ref=e2]" not in view.snapshot
        assert "Write [ref" in view.snapshot
        checkout = ref(view, r'link "Checkout"')
        after = await session.click(checkout)
        assert after.title == "Checkout"
        with pytest.raises(StaleRef, match="browser_read"):
            await session.click("e999")
        with pytest.raises(StaleRef):
            await session.click("not a ref")
        last = host.profiles.last_view("ann", "t1")
        assert last is not None
        assert last.url == shop.url + "/form"
        assert last.title == "Checkout"


async def test_scrolling_and_waiting(host: BrowserHost, shop: Shop) -> None:
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RULES)
        await session.open(shop.url + "/long")
        await session.scroll("down")
        down = await session._page.evaluate("scrollY")
        assert down > 0
        await session.scroll("up")
        assert await session._page.evaluate("scrollY") < down
        view = await session.wait_for("Kettle 299", 10)
        assert "Kettle 299" in view.snapshot
        with pytest.raises(ToolError, match="'Teapot' did not appear on the page within 1 seconds"):
            await session.wait_for("Teapot", 1)


async def test_cookies_survive_closing_the_browser_and_another_process(
    host: BrowserHost, shop: Shop, profiles: Profiles
) -> None:
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RULES)
        await session.open(shop.url + "/login")
    await no_chromium_left()
    async with host.activation("ann", "t2"):
        session = await host.session("ann", "t2", RULES)
        await session.open(shop.url + "/")
        assert await session._page.evaluate("document.cookie") == "sid=s3cret-session"
    # another process (a restarted Steward) opens the same profile
    profile = str(profiles.profile_dir("ann"))
    script = (
        "import asyncio\n"
        "from playwright.async_api import async_playwright\n"
        "async def main():\n"
        "    async with async_playwright() as p:\n"
        f"        c = await p.chromium.launch_persistent_context({profile!r},"
        " executable_path='/usr/bin/chromium', headless=True)\n"
        f"        await c.pages[0].goto({shop.url + '/'!r})\n"
        "        print(await c.pages[0].evaluate('document.cookie'))\n"
        "        await c.close()\n"
        "asyncio.run(main())\n"
    )
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(child.communicate(), 120)
    assert child.returncode == 0
    assert out.decode().strip() == "sid=s3cret-session"


async def test_one_task_at_a_time_and_nothing_left_after_the_activation(
    host: BrowserHost, shop: Shop
) -> None:
    async with host.activation("ann", "t1"):
        first = await host.session("ann", "t1", RULES)
        assert await host.session("ann", "t1", RULES) is first
        await first.open(shop.url + "/")
        assert chromium_children()
        with pytest.raises(BrowserBusy):
            await host.session("ann", "t2", RULES)
        assert host.profiles.in_use("ann")
        # another person's browser is theirs
        other = await host.session("bob", "t3", RULES)
        await other.open(shop.url + "/")
        await host._close(("bob", "t3"))
    await no_chromium_left()
    assert not host.profiles.in_use("ann")


async def test_a_browser_that_died_is_started_again(host: BrowserHost, shop: Shop) -> None:
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RULES)
        await session.open(shop.url + "/form")
        for process in chromium_children():
            process.kill()
        for _ in range(100):
            if session.gone:
                break
            await asyncio.sleep(0.1)
        assert session.gone
        again = await host.session("ann", "t1", RULES)
        assert again is not session
        view = await again.view()
        assert view.title == "Checkout"
        assert view.note == RESTARTED
    await no_chromium_left()


async def test_a_cancelled_activation_closes_the_browser(host: BrowserHost, shop: Shop) -> None:
    opened = asyncio.Event()

    async def activation() -> None:
        async with host.activation("ann", "t1"):
            session = await host.session("ann", "t1", RULES)
            await session.open(shop.url + "/")
            opened.set()
            await asyncio.sleep(3600)

    running = asyncio.create_task(activation())
    await asyncio.wait_for(opened.wait(), 120)
    assert chromium_children()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    await no_chromium_left()
    assert not host.profiles.in_use("ann")


async def test_password_never_in_the_snapshot_nor_the_screenshot(
    host: BrowserHost, shop: Shop, workspace: Workspace
) -> None:
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RULES)
        view = await session.open(shop.url + "/form")
        pin = ref(view, r'textbox "Card PIN"')
        assert await session.field_kind(pin) == "password"
        view = await session.type(pin, PASSWORD)
        assert PASSWORD not in view.snapshot
        assert "••••••" in view.snapshot
        assert PASSWORD not in (await session.view()).snapshot
        shot = await session.screenshot()
        assert shot.path == "browser/t1/0001.png"
        path = workspace.person_dir("ann") / shot.path
        data = path.read_bytes()
        assert hashlib.sha256(data).hexdigest() == shot.sha256
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        box = await session._page.locator("input[type=password]").bounding_box()
        assert box is not None
        assert await colours_in(data, box) == {"255,0,255,255"}  # the mask's magenta only
        unmasked = await session._page.screenshot(type="png")
        assert len(await colours_in(unmasked, box)) > 1  # unmasked, the dots of the password
        second = await session.screenshot()
        assert second.path == "browser/t1/0002.png"
        last = host.profiles.last_view("ann", "t1")
        assert last is not None
        assert last.picture == second.path


_COLOURS = """async ([png, box]) => {
  const img = new Image();
  img.src = 'data:image/png;base64,' + png;
  await img.decode();
  const canvas = document.createElement('canvas');
  canvas.width = img.width; canvas.height = img.height;
  const g = canvas.getContext('2d');
  g.drawImage(img, 0, 0);
  const inset = 3;
  const d = g.getImageData(box.x + inset, box.y + inset,
                           box.width - 2 * inset, box.height - 2 * inset).data;
  const seen = new Set();
  for (let i = 0; i < d.length; i += 4) seen.add(`${d[i]},${d[i+1]},${d[i+2]},${d[i+3]}`);
  return [...seen];
}"""


async def colours_in(png: bytes, box: FloatRect) -> set[str]:
    """The colours of a screenshot inside ``box`` (a few pixels in from its edge), as another
    Chromium decodes the PNG."""
    async with chromium() as browser:
        page = await browser.new_page()
        found: list[str] = await page.evaluate(
            _COLOURS, [base64.b64encode(png).decode(), dict(box)]
        )
    return set(found)


async def test_form_fields_as_the_person_will_see_them(host: BrowserHost, shop: Shop) -> None:
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RULES)
        view = await session.open(shop.url + "/form")
        await session.type(ref(view, r'textbox "Card PIN"'), PASSWORD)
        await session.select(ref(view, r'combobox "Shipping"'), ["exp"])
        fields = await session.form_fields(ref(view, r'button "Place order"'))
        seen = {(f.label, f.kind, f.value) for f in fields}
        assert seen == {
            ("Name", "text", "Ann"),
            ("Card PIN", "password", "••••••"),
            ("cart", "hidden", "C-1042"),
            ("Shipping", "select", "Express"),
            ("Gift wrap", "checkbox", ""),
            ("Note for the courier", "text", ""),
        }
        by_label = {f.label: f for f in fields}
        assert by_label["cart"].ref == ""
        assert by_label["Name"].ref == ref(view, r'textbox "Name"')


async def test_downloads_land_in_the_workspace(
    host: BrowserHost, shop: Shop, workspace: Workspace
) -> None:
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RULES)
        view = await session.open(shop.url + "/")
        saved = await session.download(ref(view, r'link "Report"'))
        again = await session.download(ref(view, r'link "Report"'))
    # the site asked for "../../report.csv": the name keeps no folder
    assert saved.name.endswith("report.csv")
    assert "/" not in saved.name
    assert saved.path == f"downloads/{saved.name}"
    assert again.path == f"downloads/{saved.name.removesuffix('.csv')} (2).csv"
    path = workspace.person_dir("ann") / saved.path
    assert path.read_text() == "item,price\nkettle,39.90\n"
    assert saved.size == path.stat().st_size
    assert hashlib.sha256(path.read_bytes()).hexdigest() == saved.sha256
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not (workspace.root / "report.csv").exists()


async def test_after_a_restart_the_last_page_is_reopened(
    host: BrowserHost, shop: Shop, profiles: Profiles
) -> None:
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RULES)
        await session.open(shop.url + "/form")
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RULES)
        view = await session.view()
        assert view.url == shop.url + "/form"
        assert view.note == RESTARTED
        assert (await session.view()).note is None
    narrower = RULES.__class__(hosts=frozenset({"shop.example"}))
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", narrower)
        view = await session.view()
        assert view.url == "about:blank"
        assert view.note
        assert "no longer allows" in view.note


async def test_a_download_over_the_cap_is_not_kept(
    host: BrowserHost, shop: Shop, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_module, "DOWNLOAD_BYTES", 10)
    async with host.activation("ann", "t1"):
        session = await host.session("ann", "t1", RULES)
        view = await session.open(shop.url + "/")
        with pytest.raises(ToolError, match="larger than"):
            await session.download(ref(view, r'link "Report"'))
    assert not (workspace.person_dir("ann") / "downloads").exists()


@pytest.mark.parametrize(
    ("suggested", "safe"),
    [
        ("../../report.csv", "report.csv"),
        ("..", "download"),
        (".bashrc", "bashrc"),
        ("a\\b:c?.pdf", "b_c_.pdf"),
        ("x" * 300 + ".pdf", "x" * 116 + ".pdf"),
    ],
)
def test_download_names_stay_in_the_folder(suggested: str, safe: str) -> None:
    assert safe_name(suggested) == safe


def test_no_test_leaves_a_browser_behind() -> None:
    assert not [p for p in chromium_children() if _alive(p)], os.getpid()
