"""Triggers: what wakes work up by itself. A firing creates work; it never adds authority."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from steward.domain.task import TaskSpec


class TriggerKind(StrEnum):
    AT = "at"
    """Once, at :attr:`Trigger.spec` (an ISO-8601 time)."""
    INTERVAL = "interval"
    """Every :attr:`Trigger.spec` seconds."""
    CRON = "cron"
    """On a cron expression, evaluated in :attr:`Trigger.timezone`."""
    EVENT = "event"
    """For every inbox event whose type is :attr:`Trigger.spec` and payload matches."""


class MissedPolicy(StrEnum):
    """What to do with the firings that fell inside downtime."""

    SKIP = "skip"
    """Record them as missed; fire only from now on."""
    RUN_ONCE = "run_once"
    """Fire once for the whole gap (the latest missed time); record the rest as missed."""
    RUN_ALL = "run_all"
    """Fire each missed time, up to :attr:`Trigger.missed_cap`; record the rest as missed."""


@dataclass(kw_only=True, frozen=True)
class Trigger:
    id: str
    """Stable id, ``trg_…``."""
    person_id: str
    """Owner."""
    goal_id: str | None
    """Goal the created tasks serve."""
    name: str
    """Human label."""
    kind: TriggerKind
    """Timer or event."""
    spec: str
    """ISO time, seconds, cron expression or event type, by kind."""
    timezone: str = "UTC"
    """Zone for cron expressions."""
    match: dict[str, Any] = field(default_factory=dict)
    """For event triggers: payload fields that must be equal."""
    task: TaskSpec
    """Template of the task each firing creates."""
    enabled: bool = True
    """Disabled triggers never fire and keep no schedule."""
    missed_policy: MissedPolicy = MissedPolicy.RUN_ONCE
    """Applied after downtime."""
    missed_cap: int = 10
    """For ``run_all``: most catch-up firings."""
    grace_seconds: float = 60.0
    """A firing later than this after its time counts as missed (then the policy applies)."""
    next_fire_at: datetime | None
    """Next scheduled time, or None when it will not fire again (or is an event trigger)."""
    last_fire_at: datetime | None = None
    """Time of the last firing (scheduled time, not wall time)."""
    created_at: datetime
    """When it was created."""


class FiringStatus(StrEnum):
    FIRED = "fired"
    MISSED = "missed"


@dataclass(kw_only=True, frozen=True)
class Firing:
    """One scheduled moment of a trigger, fired or recorded as missed. Its id is deterministic."""

    id: str
    """``fir_<trigger>_<ms>``: a second insert of the same firing is a no-op."""
    trigger_id: str
    """The trigger."""
    scheduled_for: datetime
    """The time it was due."""
    recorded_at: datetime
    """When the scheduler handled it."""
    status: FiringStatus
    """Fired, or missed under the policy."""
    task_id: str | None
    """The task it created, when fired."""
