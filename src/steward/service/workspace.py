"""The facade's workspace part: the person's workspace files as the dashboard and the API show
them — listed newest first, and one file's bytes for download.

Files are reached exactly as the agent's file tools reach them
(:mod:`steward.environment.files`): a path is checked as text first (no ``..``, no absolute
path elsewhere, no NUL), then opened one component at a time from the person's own workspace
without following any symbolic link; a file with other names (a hard link, maybe from outside)
is not served either. What the listing shows is what can be downloaded: links, partial and
temporary files are left out. Another person's file is not found, like one that does not exist.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from steward.connectors.folder.wording import modified, size
from steward.domain.tokens import READ
from steward.errors import ConfigError, NotFound, UsageError
from steward.service.base import ServiceBase

MAX_LISTED = 500
"""The most files one listing shows (the newest; the rest are counted)."""
MAX_SEEN = 20_000
"""The most files one listing looks at."""
MAX_FOLDERS = 2_000
"""The most folders one listing goes into."""
MAX_DOWNLOAD_BYTES = 100_000_000
"""The largest file served whole."""
MAX_HASHED_BYTES = 16 << 20
"""The most bytes one listing hashes to tell whether files changed since their origin was
recorded."""


@dataclass(kw_only=True, frozen=True)
class WorkspaceFile:
    """A file in the person's workspace, as listed."""

    path: str
    """Where it is, from the workspace: ``notes/plan.txt``."""
    size: int
    """Bytes."""
    modified: datetime
    """When it was last written: the file's own time (UTC; shown in the person's zone)."""
    task: str | None
    """For a stored tool output: the title of the task that made it."""
    tool: str | None
    """For a stored tool output: what produced it (the tool's name)."""
    origin: str | None = None
    """Where its contents came from, when that was recorded (:mod:`steward.environment.
    provenance`): ``the shell: make report (workspace_shell, 2026-12-04 09:14 UTC)``, with
    ``; changed since`` when the file no longer has the contents recorded."""

    @property
    def label(self) -> str:
        """How the person reads it: its path, or, for a stored tool output (whose path names
        the task and the step by id), what it holds."""
        return f"what {self.tool} returned" if self.tool else self.path

    @property
    def size_in_words(self) -> str:
        """``37 bytes``, ``12.4 KB``."""
        return size(self.size)


@dataclass(kw_only=True, frozen=True)
class WorkspaceListing:
    """The person's workspace files, newest first."""

    files: list[WorkspaceFile]
    """At most :data:`MAX_LISTED`."""
    not_shown: int
    """Older files left out of :attr:`files`."""


@dataclass(kw_only=True, frozen=True)
class FileDownload:
    """One workspace file's contents."""

    name: str
    """Its name (the last part of its path)."""
    data: bytes
    """Its bytes, as stored."""


class WorkspaceService(ServiceBase):
    async def workspace_files(self, *, person_id: str | None = None) -> WorkspaceListing:
        """The person's workspace files, newest first, each with where it came from when a
        task stored it."""
        from steward.environment import files

        pid = self._for(person_id, READ)
        home = self._workspace(pid)
        found = await asyncio.to_thread(_walk, home)
        found.sort(key=lambda f: (-f[2], f[0]))
        shown = found[:MAX_LISTED]
        made = {
            a.path: a for a in await self.store.inbox.list_artifacts(person_id=pid, limit=MAX_SEEN)
        }
        titles: dict[str, str] = {}
        origins = await self._origins(pid, home, [path for path, _, _ in shown])
        listed = []
        for path, count, mtime_ns in shown:
            artifact = made.get(path)
            title = None
            if artifact is not None and artifact.task_id is not None:
                if artifact.task_id not in titles:
                    titles[artifact.task_id] = await self._task_title(artifact.task_id)
                title = titles[artifact.task_id]
            listed.append(
                WorkspaceFile(
                    path=path,
                    size=count,
                    modified=modified(mtime_ns, files.UTC),
                    task=title,
                    tool=None if artifact is None else artifact.name,
                    origin=origins.get(path),
                )
            )
        return WorkspaceListing(files=listed, not_shown=len(found) - len(shown))

    async def workspace_file(self, path: str, *, person_id: str | None = None) -> FileDownload:
        """One file of the person's workspace, whole (at most 100 MB): ``path`` from the
        workspace (``notes/plan.txt``). A path that leaves the workspace is refused; a link, a
        folder or a file that is not there is not found."""
        pid = self._for(person_id, READ)
        home = self._workspace(pid)
        return await asyncio.to_thread(read_file, home, path)

    async def _origins(self, person_id: str, home: Path, paths: list[str]) -> dict[str, str]:
        """The recorded origin of each of ``paths`` that has one, checked against the file's
        contents (at most :data:`MAX_HASHED_BYTES` hashed per listing)."""
        from steward.environment import files
        from steward.environment.provenance import Provenance

        if self.data_dir is None or not paths:
            return {}
        records = await Provenance(self.data_dir / "environment").of_all(person_id, paths)
        if not records:
            return {}
        sums = await asyncio.to_thread(files.hashes, home, sorted(records), MAX_HASHED_BYTES)
        return {
            path: record.words(changed=None if path not in sums else sums[path] != record.sha256)
            for path, record in records.items()
        }

    def _workspace(self, person_id: str) -> Path:
        return home_of(self.data_dir, person_id)

    async def _task_title(self, task_id: str) -> str:
        try:
            task = await self.store.tasks.get_task(task_id)
        except NotFound:  # pruned since
            return "a task no longer kept"
        return task.title or "a task without a title"


def home_of(data_dir: Path | None, person_id: str) -> Path:
    """The person's workspace directory under the data directory."""
    from steward.harness.workspace import Workspace

    if data_dir is None:
        raise ConfigError("no data directory is configured, so there is no workspace")
    return Workspace(data_dir / "workspace").person_dir(person_id)


def _walk(home: Path) -> list[tuple[str, int, int]]:
    """Each plain file under ``home`` with one name: its path, size and time (ns)."""
    from steward.connectors.folder.paths import Tally, folder, walk
    from steward.environment import files
    from steward.harness.tools import ToolError

    if not home.is_dir():
        return []  # nothing written yet: not made by looking
    try:
        located = files.locate(home, "")
        found: list[tuple[str, int, int]] = []
        with folder(located, ()) as fd:
            for walked in walk(fd, tally=Tally(most=MAX_FOLDERS)):
                if walked.status.st_nlink == 1:
                    status = walked.status
                    found.append(("/".join(walked.parts), status.st_size, status.st_mtime_ns))
                if len(found) >= MAX_SEEN:
                    break
    except ToolError as exc:
        raise UsageError(f"your workspace cannot be listed: {exc}") from None
    return found


def read_file(home: Path, path: str) -> FileDownload:
    """The file at ``path`` in the workspace ``home``, reached without following a link
    (:class:`~steward.errors.NotFound`: not there, a link, a folder or a file with other
    names; :class:`~steward.errors.UsageError`: a path that leaves the workspace)."""
    from steward.connectors.folder.paths import folder, open_file
    from steward.environment import files
    from steward.harness.tools import ToolError

    try:
        located = files.locate(home, path) if home.is_dir() else None
    except ToolError as exc:
        raise UsageError(str(exc)) from None
    if located is None or not located.parts:
        raise NotFound("file", path)
    try:
        with folder(located, located.parts[:-1]) as parent:
            fd, status = open_file(parent, located.parts[-1], located.text)
    except ToolError:  # a link, a folder, a hard link or nothing: not served
        raise NotFound("file", path) from None
    with os.fdopen(fd, "rb") as opened:
        if status.st_size > MAX_DOWNLOAD_BYTES:
            raise UsageError(f"{path} is too large to download here (more than 100 MB)")
        data = opened.read(MAX_DOWNLOAD_BYTES + 1)
    if len(data) > MAX_DOWNLOAD_BYTES:
        raise UsageError(f"{path} is too large to download here (more than 100 MB)")
    return FileDownload(name=located.parts[-1], data=data)
