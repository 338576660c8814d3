"""The person Steward serves: every other object belongs to exactly one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time


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
    quiet_start: time | None = None
    """Local time quiet hours begin (with ``quiet_end``; None: no quiet hours). Only urgent
    messages reach the person between them."""
    quiet_end: time | None = None
    """Local time quiet hours end; earlier than ``quiet_start`` when they wrap midnight."""
    digest_at: time = time(18, 0)
    """Local time the daily digest of information reports goes."""
