"""Pure schedule arithmetic: when a trigger fires next and what to do about missed times."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from steward.domain import FiringStatus, MissedPolicy, Trigger, TriggerKind
from steward.domain.trigger import ActiveHours
from steward.errors import ConfigError

MAX_RECORDED_MISSES = 1000
"""Past this many missed times in one gap, the rest are skipped without a record each."""


def validate_spec(kind: TriggerKind, spec: str, timezone: str) -> None:
    """Raise :class:`ConfigError` with a useful message if the spec cannot be scheduled."""
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(f"unknown time zone {timezone!r}") from exc
    if kind is TriggerKind.CRON:
        try:
            CronSim(spec, datetime.now(zone))
        except CronSimError as exc:
            raise ConfigError(f"bad cron expression {spec!r}: {exc}") from exc
    elif kind in (TriggerKind.INTERVAL, TriggerKind.HEARTBEAT):
        try:
            seconds = float(spec)
        except ValueError as exc:
            raise ConfigError(f"interval must be a number of seconds, got {spec!r}") from exc
        if not seconds > 0:
            raise ConfigError(f"interval must be positive, got {spec!r}")
    elif kind is TriggerKind.AT:
        parse_at(spec)
    elif not spec:
        raise ConfigError("an event trigger needs the event type it fires on")


def parse_at(spec: str) -> datetime:
    try:
        when = datetime.fromisoformat(spec)
    except ValueError as exc:
        raise ConfigError(f"'at' needs an ISO-8601 time, got {spec!r}") from exc
    if when.tzinfo is None:
        raise ConfigError(f"'at' time {spec!r} needs a UTC offset, e.g. {spec}+00:00")
    return when.astimezone(UTC)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_EVERY_SECONDS = 366 * 86400
"""The longest 'every': beyond it the times overflow, and a yearly cron says it better."""


def parse_every(text: str) -> str:
    """``10m``, ``1h``, ``90s``, ``1d`` or plain seconds, as the seconds an interval or
    heartbeat spec holds; ConfigError in plain words otherwise."""
    text = text.strip().lower()
    scale = _UNITS.get(text[-1:], 0)
    number = text[:-1] if scale else text
    try:
        seconds = float(number) * (scale or 1)
    except ValueError as exc:
        raise ConfigError(f"'every' looks like 10m, 1h or 90s, got {text!r}") from exc
    if not seconds > 0:
        raise ConfigError(f"'every' must be a positive time, got {text!r}")
    if not seconds <= MAX_EVERY_SECONDS:  # also refuses inf and nan
        raise ConfigError(f"'every' can be at most 366 days, got {text!r}")
    return str(int(seconds)) if seconds.is_integer() else repr(seconds)


def next_after(
    kind: TriggerKind,
    spec: str,
    timezone: str,
    after: datetime,
    hours: ActiveHours | None = None,
) -> datetime | None:
    """The first scheduled time strictly after ``after`` (None: never again). A heartbeat
    with active hours skips the time outside them: its next beat is then the next window's
    start, in local time."""
    if kind is TriggerKind.CRON:
        local = after.astimezone(ZoneInfo(timezone))
        return next(iter(CronSim(spec, local))).astimezone(UTC)
    if kind is TriggerKind.INTERVAL:
        return after + timedelta(seconds=float(spec))
    if kind is TriggerKind.HEARTBEAT:
        when = after + timedelta(seconds=float(spec))
        zone = ZoneInfo(timezone)
        if hours is not None and not hours.contains(when.astimezone(zone)):
            return hours.next_start(after, zone)
        return when
    if kind is TriggerKind.AT:
        when = parse_at(spec)
        return when if when > after else None
    return None


def first_fire(
    kind: TriggerKind, spec: str, timezone: str, now: datetime, hours: ActiveHours | None = None
) -> datetime | None:
    """When a new (or re-enabled) trigger first fires."""
    if kind is TriggerKind.AT:
        return parse_at(spec)  # even if past: it fires (late) once, under its missed policy
    return next_after(kind, spec, timezone, now, hours)


def resume_time(trigger: Trigger, now: datetime) -> datetime | None:
    """Where a trigger whose budget pause ended goes back on its schedule: its first time
    from the resume moment on (cron and heartbeat hours keep their clock; an interval starts
    afresh then). A pause that ended long ago resumes from ``now``: the time in between is
    not owed as catch-up runs."""
    if trigger.paused_until is None or trigger.kind is TriggerKind.EVENT:
        return trigger.next_fire_at
    resume = max(trigger.paused_until, now)
    if trigger.kind in (TriggerKind.INTERVAL, TriggerKind.AT):
        return resume
    zone = ZoneInfo(trigger.timezone)
    hours = trigger.active_hours
    if trigger.kind is TriggerKind.HEARTBEAT and (
        hours is None or hours.contains(resume.astimezone(zone))
    ):
        return resume
    return next_after(
        trigger.kind, trigger.spec, trigger.timezone, resume - timedelta(microseconds=1), hours
    )


@dataclass(kw_only=True, frozen=True)
class FiringPlan:
    firings: list[tuple[datetime, FiringStatus]]
    """Scheduled times handled now, each fired or recorded as missed."""
    next_fire_at: datetime | None
    """The trigger's next scheduled time after this plan."""


def plan_firings(trigger: Trigger, now: datetime) -> FiringPlan:
    """Work out which due times of ``trigger`` fire and which are missed, at time ``now``.

    A time counts as on time while ``now - time <= grace_seconds``; older ones were missed
    (downtime) and the trigger's missed policy decides: skip them all, fire the latest once, or
    fire the latest ``missed_cap`` of them. Every missed time gets a visible record.
    """
    due: list[datetime] = []
    hours = trigger.active_hours
    when = trigger.next_fire_at
    overflow = False
    while when is not None and when <= now:
        if len(due) >= MAX_RECORDED_MISSES:
            overflow = True
            break
        due.append(when)
        when = next_after(trigger.kind, trigger.spec, trigger.timezone, when, hours)
    if overflow:
        when = next_after(trigger.kind, trigger.spec, trigger.timezone, now, hours)
    grace = timedelta(seconds=trigger.grace_seconds)
    on_time = [t for t in due if now - t <= grace]
    missed = [t for t in due if now - t > grace]
    fire_missed: set[datetime] = set()
    if missed and trigger.missed_policy is MissedPolicy.RUN_ONCE and not on_time:
        fire_missed = {missed[-1]}
    elif missed and trigger.missed_policy is MissedPolicy.RUN_ALL:
        fire_missed = set(missed[-trigger.missed_cap :]) if trigger.missed_cap > 0 else set()
    plan = [(t, FiringStatus.FIRED if t in fire_missed else FiringStatus.MISSED) for t in missed]
    plan += [(t, FiringStatus.FIRED) for t in on_time]
    return FiringPlan(firings=plan, next_fire_at=when)
