"""The facade's browser part: what the person's browser last showed each task, that page's
screenshot, and logging the browser out of every site.

The browser's state lives under ``<data>/browser`` (:class:`~steward.environment.browser.
profile.Profiles`): its profile (cookies, logins) and each task's last view. A last view names
its screenshot in the person's workspace with the sha256 it had when taken; the screenshot is
read exactly as the workspace's own downloads are (:mod:`steward.service.workspace`: one
component at a time, never through a link, never a file with other names) and shown only while
it still has that sha256 — a picture changed since (by a task, or anyone with the workspace) is
not passed off as what the browser saw.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from steward.domain.report import local_words
from steward.domain.tokens import CONTROL, READ
from steward.errors import ConfigError, Conflict, NotFound, UsageError
from steward.service.workspace import WorkspaceService

# the workspace's own safe read: the same checks for a screenshot as for any download
from steward.service.workspace import read_file as read_workspace_file

if TYPE_CHECKING:
    from steward.environment.browser.profile import LastView, Profiles

BUSY = "a task is using the browser right now; try again when it has finished"
"""Why the browser cannot be cleared while a task holds it."""
CLEARED = "cleared the browser profile: logged out of every site"
"""What clearing did, as the audit log records it."""


class NoScreenshot(UsageError):
    """A task's screenshot cannot be shown: none was taken, or it changed or is gone since."""

    status_code = 404


@dataclass(kw_only=True, frozen=True)
class BrowserView:
    """What the person's browser last showed one task."""

    task_id: str
    """The task that looked (for links; the person reads :attr:`task`)."""
    task: str
    """The task's title."""
    url: str
    """The page's address."""
    host: str
    """The page's site: ``shop.example``."""
    title: str
    """The page's title."""
    at: datetime
    """When, in the person's time zone."""
    when: str
    """When, in words: "Friday 4 December at 23:10"."""
    picture: str | None
    """The screenshot's path in the workspace, while it is still the one taken."""
    picture_note: str | None
    """Why no screenshot is shown although one was taken: it changed, or it is gone."""


class BrowserService(WorkspaceService):
    """Built on the workspace part: screenshots are workspace files, found and read as those
    are."""

    async def browser_views(self, *, person_id: str | None = None) -> list[BrowserView]:
        """What the person's browser last showed each task, newest first, each with its
        screenshot while that is still the one taken."""
        pid = self._for(person_id, READ)
        if self.data_dir is None:
            return []  # no data directory: no browser ever ran here
        person = await self.store.persons.get_person(pid)
        zone = _zone(person.timezone)
        profiles, home = self._browser(pid)
        views = await asyncio.to_thread(profiles.views, pid)
        titles: dict[str, str] = {}
        shown = []
        for view in views:
            if view.task_id not in titles:
                titles[view.task_id] = await self._task_title(view.task_id)
            _, why = await asyncio.to_thread(_screenshot, profiles, home, view)
            local = view.at.astimezone(zone)
            shown.append(
                BrowserView(
                    task_id=view.task_id,
                    task=titles[view.task_id],
                    url=view.url,
                    host=urlsplit(view.url).hostname or "",
                    title=view.title,
                    at=local,
                    when=local_words(local, zone),
                    picture=view.picture if view.picture and why is None else None,
                    picture_note=None if view.picture is None else why,
                )
            )
        return shown

    async def browser_picture(self, task_id: str, *, person_id: str | None = None) -> bytes:
        """The PNG of the task's last screenshot, while it is still the one taken (otherwise
        :class:`NoScreenshot`, saying why)."""
        task = await self._task(task_id, READ)
        if person_id and person_id != task.person_id:
            raise NotFound("task", task_id)
        profiles, home = self._browser(task.person_id)
        view = await asyncio.to_thread(profiles.last_view, task.person_id, task.id)
        if view is None or view.picture is None:
            raise NoScreenshot("the browser took no screenshot for this task")
        data, why = await asyncio.to_thread(_screenshot, profiles, home, view)
        if data is None:
            raise NoScreenshot(why or "the screenshot cannot be shown")
        return data

    async def clear_browser(self, *, person_id: str | None = None) -> str:
        """Log the person's browser out of every site: its cookies, logins and stored page
        data are forgotten (what tasks last saw, and their screenshots, stay). Refused, with
        nothing changed, while a task uses the browser."""
        from steward.environment.browser.profile import BrowserBusy

        pid = self._for(person_id, CONTROL)
        profiles, _ = self._browser(pid)
        try:
            await asyncio.to_thread(profiles.clear, pid)
        except BrowserBusy:
            raise Conflict(BUSY) from None
        await self.store.audit.append_audit(
            person_id=pid,
            kind="browser",
            actor=self._decider("person"),
            data={"reason": CLEARED},
            now=self.clock.now(),
        )
        return "Logged out of every site: the browser forgot its cookies and logins."

    def _browser(self, person_id: str) -> tuple[Profiles, Path]:
        """The browser directories, and the person's workspace (where screenshots are)."""
        from steward.environment.browser.profile import Profiles

        if self.data_dir is None:
            raise ConfigError("no data directory is configured, so there is no browser")
        return Profiles(self.data_dir / "browser"), self._workspace(person_id)


def _screenshot(profiles: Profiles, home: Path, view: LastView) -> tuple[bytes | None, str | None]:
    """The view's screenshot (from the person's workspace ``home``), or why it cannot be
    shown."""
    if view.picture is None or view.picture_sha256 is None:
        return None, "the browser took no screenshot for this task"
    if not view.picture.startswith(profiles.screenshot_folder(view.task_id) + "/"):
        return None, "the screenshot is not among the task's screenshots"
    try:
        data = read_workspace_file(home, view.picture).data
    except UsageError:  # gone, a link, a folder, another file's name: not served
        return None, "the screenshot is no longer in your workspace"
    if hashlib.sha256(data).hexdigest() != view.picture_sha256:
        return None, "the screenshot changed after it was taken, so it is not shown"
    return data, None


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError):  # a zone this machine does not know
        return ZoneInfo("UTC")
