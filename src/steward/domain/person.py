"""The person Steward serves: every other object belongs to exactly one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(kw_only=True, frozen=True)
class Person:
    id: str
    """Stable id, ``per_…``."""
    name: str
    """Display name."""
    max_concurrency: int = 4
    """How many of this person's tasks may run at once across all workers."""
    timezone: str = "UTC"
    """IANA zone used as the default for the person's cron triggers."""
    created_at: datetime
    """When the person was created."""
