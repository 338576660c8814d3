"""Where a file of the person's workspace came from: shared by the workspace tools, the browser
(its downloads and screenshots) and the dashboard."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(kw_only=True, frozen=True)
class FileOrigin:
    """Who last wrote a workspace file, and from what."""

    path: str
    """The file, from the workspace: ``notes/plan.txt``."""
    task_id: str | None
    """The task that wrote it (None: not a task's, e.g. the person's own upload)."""
    tool: str
    """What wrote it: a tool's name (``workspace_write``, ``workspace_shell``,
    ``browser_download``)."""
    origin: str
    """What its contents came from, in words: ``the assistant``, ``the person``, ``others'
    text: web page https://…``, ``a download from localhost``, ``the shell: make report``."""
    sha256: str
    """Its contents' hash when written (a file whose hash differs was changed since)."""
    at: datetime
    """When it was written (the clock's time)."""

    def words(self, *, changed: bool | None = None) -> str:
        """How the model and the person read it: ``the shell: make report (workspace_shell,
        2026-12-04 09:14 UTC)``, then ``; changed since`` when the file no longer has the
        contents recorded (``changed`` None: not checked)."""
        when = self.at.strftime("%Y-%m-%d %H:%M %Z").strip()
        said = f"{self.origin} ({self.tool}, {when})"
        return said + ("; changed since" if changed else "")
