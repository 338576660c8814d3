"""Inbox events: things that happened outside, stored once however often delivered."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(kw_only=True, frozen=True)
class Event:
    id: str
    """Stable id, ``evt_…``."""
    person_id: str
    """Whose inbox."""
    type: str
    """What happened, e.g. ``email.received`` or ``webhook.github.pull_request``."""
    source: str
    """Who delivered it (connector, webhook, CLI, another agent)."""
    dedupe_key: str
    """Unique per person: the same delivery twice is stored once."""
    payload: dict[str, Any] = field(default_factory=dict)
    """Event body (untrusted data)."""
    received_at: datetime
    """When Steward stored it."""
    routed_at: datetime | None = None
    """When the scheduler matched it to waiting tasks and event triggers."""
