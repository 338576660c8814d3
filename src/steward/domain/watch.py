"""What a connector's trigger source finds and where it has read up to.

A trigger source (a new-mail watch, a calendar's change feed) turns changes in the person's
accounts into inbox events without a model: it reads from its :class:`WatchState` cursor,
reports :class:`Found` events with stable dedupe keys, and the store records the events and the
new cursor in one transaction, so a restart neither misses nor repeats a change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(kw_only=True, frozen=True)
class Found:
    """One change a trigger source saw, as the event it becomes."""

    type: str
    """Event type (``mail.received``, ``calendar.changed``)."""
    dedupe_key: str
    """Stable for the same change (a Message-ID, a UID and its ETag): seen twice, stored once."""
    payload: dict[str, Any] = field(default_factory=dict)
    """Plain fields event triggers filter on (``from``, ``subject``...). Written by others:
    untrusted wherever it goes."""


@dataclass(kw_only=True, frozen=True)
class WatchState:
    """Where one trigger source of one connection stands."""

    connection_id: str
    """The connection watched."""
    source: str
    """The trigger source's name (``mail.received``)."""
    cursor: dict[str, Any]
    """The source's own position (``{"uidvalidity": 7, "last_uid": 42}``)."""
    updated_at: datetime
    """When the cursor last moved or a failure was recorded."""
    failures: int = 0
    """Failed polls in a row (the watcher backs off by it); 0 after a success."""
    last_error: str | None = None
    """The last failure in plain words, for the person's status page."""
