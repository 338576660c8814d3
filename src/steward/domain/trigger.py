"""Triggers: what wakes work up by itself. A firing creates work; it never adds authority."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from enum import StrEnum
from fnmatch import fnmatchcase
from typing import Any
from zoneinfo import ZoneInfo

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
    HEARTBEAT = "heartbeat"
    """Every :attr:`Trigger.spec` seconds, a check in the store (no model) of the goal's due
    follow-ups and unhandled events; a task only when it finds something."""


class MissedPolicy(StrEnum):
    """What to do with the firings that fell inside downtime."""

    SKIP = "skip"
    """Record them as missed; fire only from now on."""
    RUN_ONCE = "run_once"
    """Fire once for the whole gap (the latest missed time); record the rest as missed."""
    RUN_ALL = "run_all"
    """Fire each missed time, up to :attr:`Trigger.missed_cap`; record the rest as missed."""


DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(kw_only=True, frozen=True)
class ActiveHours:
    """When a heartbeat may beat: a daily window on some weekdays, in the trigger's zone."""

    start: str
    """First minute of the window, local ``HH:MM``."""
    end: str
    """End of the window (exclusive), local ``HH:MM``; after ``start``."""
    days: tuple[int, ...] = tuple(range(7))
    """Weekdays it applies to, Monday = 0, ascending."""

    @classmethod
    def parse(cls, hours: str, days: str | None = None) -> ActiveHours:
        """From ``"08:00-20:00"`` and ``"mon-fri"`` or ``"mon,wed,sat"``; ValueError says why."""
        start_text, sep, end_text = hours.partition("-")
        if not sep:
            raise ValueError(f"active hours look like 08:00-20:00, got {hours!r}")
        start, end = _clock_time(start_text), _clock_time(end_text)
        if end <= start:
            raise ValueError(f"active hours must end after they start, got {hours!r}")
        weekdays = _weekdays(days) if days else tuple(range(7))
        return cls(start=f"{start:%H:%M}", end=f"{end:%H:%M}", days=weekdays)

    def contains(self, local: datetime) -> bool:
        """Whether the local time ``local`` falls inside the window."""
        return local.weekday() in self.days and self.start <= f"{local:%H:%M}" < self.end

    def next_start(self, after: datetime, zone: ZoneInfo) -> datetime:
        """The first window start strictly after ``after`` (UTC). Local wall-clock time, so a
        DST change moves it in UTC and never in the person's day."""
        day = after.astimezone(zone).date()
        start = time.fromisoformat(self.start)
        for offset in range(8):
            date = day + timedelta(days=offset)
            begin = datetime.combine(date, start, tzinfo=zone).astimezone(UTC)
            if date.weekday() in self.days and begin > after:
                return begin
        raise ValueError("active hours name no weekday")  # parse() refuses that

    def describe(self) -> str:
        """Plain words: ``08:00-20:00 Mon-Fri``."""
        days = list(self.days)
        if days == list(range(7)):
            when = "every day"
        elif days == list(range(days[0], days[-1] + 1)) and len(days) > 2:
            when = f"{DAY_NAMES[days[0]].title()}-{DAY_NAMES[days[-1]].title()}"
        else:
            when = ", ".join(DAY_NAMES[d].title() for d in days)
        return f"{self.start}-{self.end} {when}"

    def to_json(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "days": list(self.days)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ActiveHours:
        return cls(
            start=str(data["start"]),
            end=str(data["end"]),
            days=tuple(sorted(int(d) for d in data["days"])),
        )


def _clock_time(text: str) -> time:
    try:
        hour, minute = (int(part) for part in text.strip().split(":"))
        return time(hour, minute)
    except ValueError as exc:
        raise ValueError(f"{text.strip()!r} is not a time of day like 08:00") from exc


def _weekdays(text: str) -> tuple[int, ...]:
    days: set[int] = set()
    for part in text.lower().replace(" ", "").split(","):
        first, sep, last = part.partition("-")
        if first not in DAY_NAMES or (sep and last not in DAY_NAMES):
            raise ValueError(f"days look like mon-fri or mon,wed,sat, got {text!r}")
        a, b = DAY_NAMES.index(first), DAY_NAMES.index(last if sep else first)
        days |= set(range(a, b + 1)) if a <= b else set(range(a, 7)) | set(range(b + 1))
    return tuple(sorted(days))


@dataclass(kw_only=True, frozen=True)
class TriggerBudget:
    """What one trigger may spend per day (the day in its zone); None means no limit."""

    runs: int | None = None
    """Most tasks it may start."""
    tokens: int | None = None
    """Most model tokens those tasks may use."""
    cost_usd: float | None = None
    """Most model cost (US dollars) those tasks may run up."""

    def check(self) -> None:
        """ValueError in plain words if a limit is negative, or zero (a trigger that may
        never run is one to switch off)."""
        for name, limit in (("runs", self.runs), ("tokens", self.tokens), ("cost", self.cost_usd)):
            if limit is not None and limit < 0:
                raise ValueError(f"a budget's {name} cannot be negative, got {limit}")
            if limit == 0:
                raise ValueError(
                    f"a budget of 0 {name} would never let it run; switch the trigger off instead"
                )

    def spent_by(self, spend: TriggerSpend) -> str | None:
        """What ran out, in words (``its 20 runs``), or None while there is budget left."""
        if self.runs is not None and spend.runs >= self.runs:
            return f"its {self.runs} runs"
        if self.tokens is not None and spend.tokens >= self.tokens:
            return f"its {self.tokens:,} tokens"
        if self.cost_usd is not None and spend.cost_usd >= self.cost_usd:
            return f"its ${self.cost_usd:.2f}"
        return None

    def describe(self) -> str:
        parts = []
        if self.runs is not None:
            parts.append(f"{self.runs} runs")
        if self.tokens is not None:
            parts.append(f"{self.tokens:,} tokens")
        if self.cost_usd is not None:
            parts.append(f"${self.cost_usd:.2f}")
        return " / ".join(parts) + " a day" if parts else "no limit"

    def to_json(self) -> dict[str, Any]:
        return {"runs": self.runs, "tokens": self.tokens, "cost_usd": self.cost_usd}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TriggerBudget:
        cost = data.get("cost_usd")
        return cls(
            runs=data.get("runs"),
            tokens=data.get("tokens"),
            cost_usd=float(cost) if cost is not None else None,
        )


@dataclass(kw_only=True, frozen=True)
class TriggerSpend:
    """What the tasks a trigger started today have used."""

    runs: int = 0
    """Tasks started."""
    tokens: int = 0
    """Model tokens."""
    cost_usd: float = 0.0
    """Model cost, US dollars."""


def local_day(timezone: str, now: datetime) -> tuple[datetime, datetime]:
    """The start and end (next local midnight) of the day ``now`` falls in, in UTC."""
    zone = ZoneInfo(timezone)
    today = now.astimezone(zone).date()
    start = datetime.combine(today, time(), tzinfo=zone)
    end = datetime.combine(today + timedelta(days=1), time(), tzinfo=zone)
    return start.astimezone(UTC), end.astimezone(UTC)


def watches_event(patterns: tuple[str, ...], event_type: str) -> bool:
    """Whether a heartbeat watching ``patterns`` (``web.changed``, ``file.*``) sees this type."""
    return any(fnmatchcase(event_type, pattern) for pattern in patterns)


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
    watch: tuple[str, ...] = ()
    """Heartbeats: event types (``file.*`` patterns) whose unhandled events are for the goal."""
    active_hours: ActiveHours | None = None
    """Heartbeats: when they may beat (None: always)."""
    budget: TriggerBudget | None = None
    """Daily limits; when one is spent the trigger pauses until the next local midnight."""
    paused_until: datetime | None = None
    """Set while its budget for today is spent: when it resumes."""
    idle_beats: int = 0
    """Heartbeats: checks that found nothing (counted, not recorded one by one)."""
    last_beat_at: datetime | None = None
    """Heartbeats: when it last checked; the next check looks at what came after."""


class FiringStatus(StrEnum):
    FIRED = "fired"
    MISSED = "missed"
    PAUSED = "paused"
    """It was due, but its daily budget was spent: nothing ran, the trigger paused."""


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
