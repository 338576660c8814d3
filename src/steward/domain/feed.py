"""The feed: one line per thing that happened for a person (a task created, a step, a wait, an
approval asked or decided, a notification), in the order it was committed. Every interface's
live view (the API's event stream, the dashboard) reads it, so a task created from the CLI,
approved in a browser and read on a phone shows one timeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(kw_only=True, frozen=True)
class FeedEntry:
    """Something that happened, for the person to see."""

    seq: int
    """Position in the feed: increases with every entry and is never reused; a reader resumes
    after the last one it saw."""
    person_id: str
    """Whose."""
    at: datetime
    """When it was committed."""
    kind: str
    """``task.created``, ``task.<status>``, ``step``, ``approval.requested``,
    ``approval.decided``, ``notification``..."""
    summary: str
    """One line for people."""
    goal_id: str | None = None
    """The goal it belongs to, if any."""
    task_id: str | None = None
    """The task it belongs to, if any."""
    ref: str | None = None
    """The object it is about (an approval, a notification, a step number)."""
    data: dict[str, Any] = field(default_factory=dict)
    """Details (never a secret: the feed is shown as it is)."""
