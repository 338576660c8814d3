"""Follow-ups: a time the agent set to look at something again ("the quote, on Friday 10:00").

A follow-up belongs to a goal. It costs nothing while it waits: the goal's heartbeat sees it
once it is due, and the one heartbeat that starts a task for it marks it done.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(kw_only=True, frozen=True)
class FollowUp:
    id: str
    """Stable id, derived from the step that set it (a replayed step sets it once)."""
    person_id: str
    """Owner."""
    goal_id: str
    """The goal it serves."""
    task_id: str | None
    """The task that set it."""
    due_at: datetime
    """When it falls due."""
    note: str
    """What to look at, in the agent's words."""
    created_at: datetime
    """When it was set."""
    done_at: datetime | None = None
    """When a heartbeat acted on it (None while pending)."""
    done_task_id: str | None = None
    """The task that heartbeat started."""
