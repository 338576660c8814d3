"""Where a person's browser keeps its state, and who may use it now.

Each person has one directory under the browser root (0700): ``profile/`` is Chromium's
user-data directory (cookies, local storage, the logins the person's tasks established),
``tasks/`` what each task last saw (:class:`LastView`), and ``lock`` the lock that lets one
task — in any process on this machine — use the profile at a time (Chromium itself refuses a
second process on one profile). This is environment state: never in memory nor in a task's
steps. Screenshots go to the person's workspace (``browser/<task>/``), where the person and
the agent can see them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from steward.errors import UsageError
from steward.filemodes import PRIVATE_FILE, private_dir
from steward.harness.workspace import path_part


class BrowserBusy(UsageError):
    """Another task (here or in another process) is using the person's browser."""


@dataclass(kw_only=True, frozen=True)
class LastView:
    """What a task's browser last showed."""

    task_id: str
    """The task that looked."""
    url: str
    """The page's address."""
    title: str
    """The page's title."""
    picture: str | None
    """Workspace-relative path of the last screenshot, or None if none was taken."""
    picture_sha256: str | None
    """That screenshot's sha256 when taken (shown only while the file still matches)."""
    at: datetime
    """When (the clock's time)."""


class Profiles:
    """The browser directories of every person, under one root (``<data>/browser``)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def person_dir(self, person_id: str) -> Path:
        return private_dir(self.root / path_part(person_id))

    def profile_dir(self, person_id: str) -> Path:
        """Chromium's user-data directory for the person (made on demand, 0700)."""
        return private_dir(self.person_dir(person_id) / "profile")

    def screenshot_folder(self, task_id: str) -> str:
        """Workspace-relative folder of a task's screenshots."""
        return f"browser/{path_part(task_id)}"

    @contextlib.contextmanager
    def hold(self, person_id: str, task_id: str) -> Iterator[None]:
        """Hold the person's browser for ``task_id`` (blocking nobody: raises
        :class:`BrowserBusy` at once when another holder has it). The lock is the kernel's
        (``flock``): a process that dies releases it."""
        path = self.person_dir(person_id) / "lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
                raise BrowserBusy(
                    "the browser is in use by another task"
                    + (f" ({holder})" if holder and holder != task_id else "")
                    + "; try again when it is done"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, task_id.encode(), 0)
            try:
                yield
            finally:
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def in_use(self, person_id: str) -> bool:
        try:
            with self.hold(person_id, "check"):
                return False
        except BrowserBusy:
            return True

    def clear(self, person_id: str) -> None:
        """Forget every login, cookie and stored page data of the person's browser (log out
        everywhere); refused with :class:`BrowserBusy` while a task uses it."""
        with self.hold(person_id, "clearing the profile"):
            shutil.rmtree(self.person_dir(person_id) / "profile", ignore_errors=True)
            self.profile_dir(person_id)

    def record_view(self, person_id: str, view: LastView) -> None:
        folder = private_dir(self.person_dir(person_id) / "tasks")
        path = folder / f"{path_part(view.task_id)}.json"
        data = {**asdict(view), "at": view.at.isoformat()}
        tmp = path.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
        with os.fdopen(fd, "w") as out:
            json.dump(data, out)
        tmp.replace(path)

    def last_view(self, person_id: str, task_id: str) -> LastView | None:
        path = self.person_dir(person_id) / "tasks" / f"{path_part(task_id)}.json"
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        return LastView(**{**data, "at": datetime.fromisoformat(data["at"])})

    def views(self, person_id: str) -> list[LastView]:
        """Every task's last view, newest first."""
        folder = self.person_dir(person_id) / "tasks"
        found = (
            [
                LastView(**{**data, "at": datetime.fromisoformat(data["at"])})
                for data in (json.loads(p.read_text()) for p in sorted(folder.glob("*.json")))
            ]
            if folder.exists()
            else []
        )
        return sorted(found, key=lambda v: v.at, reverse=True)
