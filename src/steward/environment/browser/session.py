"""The person's browser for one task: Chromium on the person's persistent profile, driven
through Playwright, open only while a harness activation runs.

:class:`BrowserHost` (one per process) opens a :class:`BrowserSession` lazily, the first time
a task's activation uses the browser, holding the person's profile lock
(:meth:`Profiles.hold`); :meth:`BrowserHost.activation` wraps the activation and closes
whatever it opened when it ends, is suspended or is cancelled (a worker that lost its lease
must not keep a page open), so no Chromium process outlives the activation. Logins survive in
the profile, not in a process.

Every request goes through :class:`~steward.environment.browser.network.Guard`; every action
is bounded in time and ends with a fresh view (an aria snapshot with ``[ref=eN]`` references,
password values masked) and the task's :class:`LastView` recorded.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager
from typing import Any, Literal, TypeVar

from playwright.async_api import BrowserContext, Locator, Page, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from steward.domain.clock import Clock
from steward.environment.browser.forms import field_kind, form_fields
from steward.environment.browser.network import NAVIGATION_SECONDS, Guard, Rules, host_of
from steward.environment.browser.profile import LastView, Profiles
from steward.environment.browser.snapshot import REF, clean, password_values
from steward.environment.browser.transfer import (
    DOWNLOAD_BYTES,
    next_picture,
    save_download,
    write_private,
)
from steward.environment.browser.views import (
    FormField,
    NavigationRefused,
    PageView,
    Saved,
    Shot,
    StaleRef,
    SubmitBlocked,
)
from steward.harness.tools import ToolError
from steward.harness.workspace import Workspace
from steward.sentinel.urls import UrlRefused, parse_url

__all__ = [
    "BrowserHost",
    "BrowserSession",
    "FormField",
    "NavigationRefused",
    "PageView",
    "Rules",
    "Saved",
    "Shot",
    "StaleRef",
    "SubmitBlocked",
]

ACTION_SECONDS = 15.0
"""How long a click, a keystroke or a look may take."""
RESTARTED = "the browser was restarted since your last look: this is the page as it is now"
_SETTLE_SECONDS = 0.1
"""A click's script may start its navigation a moment after the click returns."""
_MAX_REDIRECTS = 10
T = TypeVar("T")


class BrowserHost:
    """The browsers of this process: at most one open session per (person, task)."""

    def __init__(
        self,
        profiles: Profiles,
        workspace: Workspace,
        *,
        clock: Clock,
        executable: str = "/usr/bin/chromium",
    ) -> None:
        self.profiles = profiles
        self.workspace = workspace
        self.clock = clock
        self.executable = executable
        self._sessions: dict[tuple[str, str], BrowserSession] = {}
        self._playwright: Playwright | None = None
        self._lock = asyncio.Lock()

    def activation(self, person_id: str, task_id: str) -> AbstractAsyncContextManager[None]:
        """Wrap one harness activation: a session opened inside is closed when it exits."""
        return self._activation(person_id, task_id)

    @asynccontextmanager
    async def _activation(self, person_id: str, task_id: str) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await _uninterrupted(self._close((person_id, task_id)))

    async def session(self, person_id: str, task_id: str, rules: Rules) -> BrowserSession:
        """The task's session, launched on the person's profile the first time (raises
        ``BrowserBusy`` if another task holds it); later calls get it with ``rules`` updated."""
        async with self._lock:
            key = (person_id, task_id)
            found = self._sessions.get(key)
            if found is not None and not found.gone:
                found.rules = rules
                return found
            if found is not None:
                # Chromium died under the session (crashed, killed): start it again
                del self._sessions[key]
                await found._close()
            hold = ExitStack()
            hold.enter_context(self.profiles.hold(person_id, task_id))
            try:
                context = await self._launch(person_id)
            except BaseException:
                hold.close()
                await self._stop_if_idle()
                raise
            try:
                page = context.pages[0] if context.pages else await context.new_page()
                session = BrowserSession(
                    owner=self,
                    person_id=person_id,
                    task_id=task_id,
                    rules=rules,
                    context=context,
                    page=page,
                )
                session._hold = hold
                await session._start()
            except BaseException:
                await _quietly(context.close())
                hold.close()
                await self._stop_if_idle()
                raise
            self._sessions[key] = session
            return session

    async def close_all(self) -> None:
        for key in list(self._sessions):
            await _uninterrupted(self._close(key))
        async with self._lock:
            await self._stop_if_idle()

    async def _launch(self, person_id: str) -> BrowserContext:
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        try:
            return await self._playwright.chromium.launch_persistent_context(
                str(self.profiles.profile_dir(person_id)),
                executable_path=self.executable,
                headless=True,
                accept_downloads=True,
                service_workers="block",
                viewport={"width": 1280, "height": 900},
                # Chromium's own sandbox for the pages it renders; it cannot run as root
                # (a CI machine), where the process is left as Playwright starts it
                chromium_sandbox=os.geteuid() != 0,
            )
        except PlaywrightError as exc:
            raise ToolError(f"the browser could not start: {_first_line(exc)}") from None

    async def _close(self, key: tuple[str, str]) -> None:
        async with self._lock:
            session = self._sessions.pop(key, None)
            if session is not None:
                await session._close()
            await self._stop_if_idle()

    async def _stop_if_idle(self) -> None:
        if not self._sessions and self._playwright is not None:
            playwright, self._playwright = self._playwright, None
            await playwright.stop()


class BrowserSession:
    """One task's browser: its page, what it may reach, and the actions the agent takes."""

    def __init__(
        self,
        *,
        owner: BrowserHost,
        person_id: str,
        task_id: str,
        rules: Rules,
        context: BrowserContext,
        page: Page,
    ) -> None:
        self._owner = owner
        self.person_id = person_id
        self.task_id = task_id
        self._context = context
        self._guard = Guard(rules=rules)
        self._page = page
        self._shot: Shot | None = None
        self._fresh = True
        """No page opened yet in this session (a restart's first look reopens the last)."""
        self._hold: ExitStack = ExitStack()
        self.gone = False
        """Chromium closed under the session (it crashed or was killed)."""

    @property
    def rules(self) -> Rules:
        return self._guard.rules

    @rules.setter
    def rules(self, rules: Rules) -> None:
        self._guard.rules = rules

    @property
    def host(self) -> str:
        """The current page's host ('' on a blank page)."""
        return host_of(self._page.url)

    async def _start(self) -> None:
        self._context.set_default_timeout(ACTION_SECONDS * 1000)
        self._context.set_default_navigation_timeout(NAVIGATION_SECONDS * 1000)
        await self._context.route("**/*", self._guard.route)
        await self._context.route_web_socket(re.compile(".*"), self._guard.socket)
        self._context.on("page", self._adopt)
        self._context.on("close", self._went)
        self._context.on("requestfinished", self._guard.finished)
        self._context.on("requestfailed", self._guard.finished)
        self._watch(self._page)

    def _went(self, _: BrowserContext) -> None:
        self.gone = True

    def _adopt(self, page: Page) -> None:
        # a pop-up (target=_blank, window.open) is where the person would now be looking
        self._page = page
        self._guard.page_host = host_of(page.url)
        self._watch(page)

    def _watch(self, page: Page) -> None:
        def navigated(frame: Any) -> None:
            if frame == self._page.main_frame:
                self._guard.page_host = host_of(frame.url)

        def closed(gone: Page) -> None:
            # a pop-up that closed itself: back to the window that opened it
            if gone is self._page and self._context.pages:
                self._page = self._context.pages[-1]
                self._guard.page_host = host_of(self._page.url)

        page.on("framenavigated", navigated)
        page.on("close", closed)

    async def _close(self) -> None:
        try:
            await self._context.close()
        except PlaywrightError:
            pass  # the browser already went away
        finally:
            self._hold.close()

    # -- actions ------------------------------------------------------------------------

    async def open(self, url: str) -> PageView:
        try:
            target = parse_url(url)
        except UrlRefused as exc:
            raise ToolError(str(exc)) from None
        if target.host not in self.rules.hosts:
            raise NavigationRefused(_refused_words("host", target.host))
        return await self._act(lambda: self._goto(target.text))

    async def view(self) -> PageView:
        if self._fresh and not self.host:
            last = self._owner.profiles.last_view(self.person_id, self.task_id)
            if last is not None:
                if host_of(last.url) in self.rules.hosts:
                    return await self._act(lambda: self._goto(last.url), note=RESTARTED)
                return await self._look(
                    note="the browser was restarted since your last look; the page you had "
                    f"open was on {host_of(last.url) or last.url}, which your browser "
                    "connection no longer allows"
                )
        return await self._look()

    async def click(self, ref: str) -> PageView:
        target = await self._locate(ref)
        return await self._act(lambda: target.click())

    async def type(self, ref: str, text: str) -> PageView:
        self._writable("type into the page")
        target = await self._locate(ref)
        return await self._act(lambda: target.fill(text))

    async def type_login(self, ref: str, value: str, *, host: str, password: bool) -> None:
        """Type part of a saved login: only into a field of the page itself (not a frame,
        whatever its host) while the page is on ``host`` — a password only into a password
        input. The element is held while checked and typed into: a page that navigates away
        meanwhile takes the element with it, and nothing is typed."""
        self._writable("type into the page")
        handle = await (await self._locate(ref)).element_handle()
        try:
            frame = await handle.owner_frame()
            kind = str(await handle.evaluate("e => e instanceof HTMLInputElement ? e.type : ''"))
            on_page = (
                frame is not None and frame.parent_frame is None and host_of(self._page.url) == host
            )
            if not on_page or (password and kind != "password"):
                raise ToolError(
                    f"{ref} is not a {'password ' if password else ''}field of the {host} page "
                    "itself: a saved login is typed only there"
                )
            await self._act(lambda: handle.fill(value))
        finally:
            await _quietly(handle.dispose())

    async def select(self, ref: str, values: list[str]) -> PageView:
        self._writable("choose options on the page")
        target = await self._locate(ref)

        async def choose() -> None:
            await target.select_option(values)

        return await self._act(choose)

    async def scroll(self, direction: Literal["up", "down"], ref: str | None = None) -> PageView:
        sign = -1 if direction == "up" else 1
        if ref is None:
            return await self._act(
                lambda: self._page.evaluate("d => window.scrollBy(0, d * innerHeight * 0.8)", sign)
            )
        target = await self._locate(ref)

        async def within() -> None:
            await target.scroll_into_view_if_needed()
            await target.evaluate("(e, d) => e.scrollBy(0, d * e.clientHeight * 0.8)", sign)

        return await self._act(within)

    async def wait_for(self, text: str, timeout_seconds: float) -> PageView:
        seconds = min(max(timeout_seconds, 0.0), 120.0)

        async def appears() -> None:
            try:
                await self._page.get_by_text(text).first.wait_for(timeout=seconds * 1000)
            except PlaywrightTimeout:
                raise ToolError(
                    f"{text!r} did not appear on the page within {seconds:g} seconds"
                ) from None

        return await self._act(appears)

    async def screenshot(self) -> Shot:
        try:
            data = await self._page.screenshot(
                type="png", mask=[self._page.locator("input[type=password]")]
            )
        except PlaywrightError as exc:
            raise ToolError(
                f"the browser could not take a screenshot: {_first_line(exc)}"
            ) from None
        base = self._owner.workspace.person_dir(self.person_id)
        relative = next_picture(base, self._owner.profiles.screenshot_folder(self.task_id))
        digest = await asyncio.to_thread(write_private, base, relative, data)
        self._shot = Shot(path=relative, sha256=digest)
        await self._record()
        return self._shot

    async def download(self, ref: str) -> Saved:
        target = await self._locate(ref)
        self._guard.begin()
        try:
            async with self._page.expect_download(timeout=NAVIGATION_SECONDS * 1000) as info:
                await target.click()
            started = await info.value
        except PlaywrightError as exc:
            self._raise_refused()
            raise ToolError(f"no download started: {_first_line(exc)}") from None
        try:
            path = await started.path()
            if (await asyncio.to_thread(os.path.getsize, path)) > DOWNLOAD_BYTES:
                raise ToolError(
                    f"the download is larger than {DOWNLOAD_BYTES / 2**20:g} MB; it was not kept"
                )
            base = self._owner.workspace.person_dir(self.person_id)
            saved = await asyncio.to_thread(save_download, base, path, started.suggested_filename)
        except PlaywrightError as exc:
            raise ToolError(f"the download failed: {_first_line(exc)}") from None
        finally:
            await _quietly(started.delete())
        await self._record()
        return Saved(path=saved[0], size=saved[1], sha256=saved[2], name=saved[3])

    async def field_kind(self, ref: str) -> str:
        return await field_kind(await self._locate(ref))

    async def form_fields(self, ref: str) -> list[FormField]:
        return await form_fields(self._page, await self._locate(ref))

    async def submit(self, ref: str) -> PageView:
        self._writable("send forms")
        target = await self._locate(ref)
        if not self.host:
            raise ToolError("there is no page to send a form from; open one first")
        return await self._act(lambda: target.click(), submit_host=self.host)

    # -- machinery ----------------------------------------------------------------------

    def _writable(self, what: str) -> None:
        if self.rules.research:
            raise ToolError(f"research mode: this task may only read pages, not {what}")

    async def _locate(self, ref: str) -> Locator:
        stale = StaleRef(
            f"{ref!r} is not on the page as it is now; read the page again (browser_read)"
        )
        if not isinstance(ref, str) or not REF.match(ref):
            raise stale
        target = self._page.locator(f"aria-ref={ref}")
        try:
            count = await target.count()
        except PlaywrightError:
            count = 0
        if count != 1:
            raise stale
        return target

    async def _goto(self, url: str) -> None:
        await self._page.goto(url, wait_until="load")

    async def _act(
        self,
        work: Callable[[], Awaitable[Any]],
        *,
        submit_host: str | None = None,
        note: str | None = None,
    ) -> PageView:
        guard = self._guard
        guard.begin(submit_host=submit_host)
        try:
            try:
                await work()
            except PlaywrightError:
                # a navigation the guard stopped (or turned into a redirect it follows) makes
                # Playwright's own wait fail with ERR_ABORTED
                if not self._redirected():
                    raise
            await self._settle()
        except PlaywrightTimeout:
            self._raise_refused()
            raise ToolError(
                f"that did not finish in time ({ACTION_SECONDS:g} s for an action, "
                f"{NAVIGATION_SECONDS:g} s for a page to load): the element may be hidden or "
                "covered, or the page slow; read the page again (browser_read)"
            ) from None
        except PlaywrightError as exc:
            self._raise_refused()
            raise ToolError(f"the browser could not do that: {_first_line(exc)}") from None
        finally:
            guard.submitting = None
            await self._drop_empty_window()
        self._raise_refused()
        self._fresh = False
        return await self._look(note=note)

    async def _settle(self) -> None:
        """Wait for what the action started: redirects followed, the new page loaded."""
        guard = self._guard
        await asyncio.sleep(_SETTLE_SECONDS)
        for _ in range(_MAX_REDIRECTS):
            target = guard.follow
            if target is None or guard.refused:
                break
            guard.follow = None
            try:
                await self._goto(target)
            except PlaywrightError:
                if not self._redirected():
                    raise
        try:
            await asyncio.wait_for(guard.settled.wait(), NAVIGATION_SECONDS)
        except TimeoutError:
            raise ToolError(
                f"the page did not finish loading within {NAVIGATION_SECONDS:g} seconds"
            ) from None
        if guard.navigations:
            await self._page.wait_for_load_state("load")

    async def _drop_empty_window(self) -> None:
        """A pop-up whose navigation was refused stays blank: close it, back to its opener."""
        if self._guard.refused and self._page.url == "about:blank" and len(self._context.pages) > 1:
            await _quietly(self._page.close())

    def _redirected(self) -> bool:
        """Whether the guard stopped a navigation only to follow its redirect itself."""
        return self._guard.follow is not None and not self._guard.refused

    def _raise_refused(self) -> None:
        if not self._guard.refused:
            if self._guard.unanswered:
                raise ToolError(self._guard.unanswered)
            return
        why, host = self._guard.refused[0]
        words = _refused_words(why, host)
        if why == "host":
            raise NavigationRefused(words)
        if why == "submit":
            raise SubmitBlocked(words)
        raise ToolError(words)

    async def _look(self, note: str | None = None) -> PageView:
        try:
            raw = await self._page.aria_snapshot(mode="ai", timeout=ACTION_SECONDS * 1000)
            passwords = await password_values(self._page)
            title = await self._page.title()
        except PlaywrightError as exc:
            raise ToolError(f"the page could not be read: {_first_line(exc)}") from None
        await self._record(title)
        return PageView(
            url=self._page.url,
            host=self.host,
            title=title,
            snapshot=clean(raw, passwords),
            note=note,
        )

    async def _record(self, title: str | None = None) -> None:
        if not self.host:
            return  # a blank or error page must not replace the task's last real view
        if title is None:
            title = await _quietly(self._page.title()) or ""
        shot = self._shot
        self._owner.profiles.record_view(
            self.person_id,
            LastView(
                task_id=self.task_id,
                url=self._page.url,
                title=title,
                picture=shot.path if shot else None,
                picture_sha256=shot.sha256 if shot else None,
                at=self._owner.clock.now(),
            ),
        )


def _refused_words(why: str, host: str) -> str:
    if why == "host":
        return f"the page tried to go to {host}, which your browser connection does not allow"
    if why == "submit":
        return (
            f"that would send a form to {host}; only browser_submit sends forms (the person "
            "is asked first): use browser_submit with this button"
        )
    if why == "research":
        return "research mode: this task may only read pages; the page tried to send something"
    return f"the site asked to send the form again to {host}; that was not done"


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


async def _quietly(work: Awaitable[T]) -> T | None:
    try:
        return await work
    except PlaywrightError:
        return None


async def _uninterrupted(work: Awaitable[None]) -> None:
    """Run ``work`` to its end even if the caller is cancelled meanwhile (closing a browser
    half-way would leave its processes running); the cancellation is passed on after."""
    task = asyncio.ensure_future(work)
    interrupted = False
    while True:
        try:
            await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():
                raise
            interrupted = True
    if interrupted:
        raise asyncio.CancelledError
