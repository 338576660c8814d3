"""The facade's trigger part: adding triggers (heartbeats with their active hours and watched
event types, daily budgets), listing them in plain words, enabling, budgets, follow-ups."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from steward.domain import MissedPolicy, TaskSpec, Trigger, TriggerKind
from steward.domain.followup import FollowUp
from steward.domain.ids import new_id
from steward.domain.limits import MAX_NAME, check_json, check_text, seconds_span
from steward.domain.tokens import CONTROL, READ
from steward.domain.trigger import ActiveHours, TriggerBudget, TriggerSpend
from steward.errors import UsageError
from steward.service.base import ServiceBase
from steward.service.work import checked_task

_TIMED = (TriggerKind.INTERVAL, TriggerKind.HEARTBEAT)


@dataclass(kw_only=True, frozen=True)
class TriggerReport:
    """A trigger as the person reads it: its schedule, budget and today's use in words, times
    in its time zone."""

    trigger: Trigger
    """The trigger itself."""
    schedule: str
    """``heartbeat every 10 min, 08:00-20:00 Mon-Fri``, ``cron 0 9 * * *``..."""
    next: str
    """When it next fires (local), or why it will not."""
    budget: str
    """Its daily limits, or ``no limit``."""
    today: str
    """What its tasks used today."""
    state: str
    """``on``, ``off``, or ``paused until …`` while today's budget is spent."""
    checks: str
    """Heartbeats: how many checks found nothing, and the last check; empty for others."""

    @property
    def id(self) -> str:
        return self.trigger.id

    @property
    def name(self) -> str:
        return self.trigger.name


class TriggerService(ServiceBase):
    async def add_trigger(
        self,
        *,
        person_id: str,
        kind: TriggerKind,
        spec: str,
        task: TaskSpec,
        name: str = "",
        goal_id: str | None = None,
        timezone: str | None = None,
        match: dict[str, Any] | None = None,
        missed_policy: MissedPolicy = MissedPolicy.RUN_ONCE,
        missed_cap: int = 10,
        grace_seconds: float = 60.0,
        watch: Sequence[str] = (),
        active_hours: str | None = None,
        days: str | None = None,
        budget: TriggerBudget | None = None,
    ) -> Trigger:
        """Add a trigger. Intervals and heartbeats take ``10m``, ``1h``, ``90s`` or seconds. A
        heartbeat needs a goal; ``watch`` (event types, ``file.*`` patterns) and active hours
        are for heartbeats only; a budget suits any kind."""
        from steward.runtime.schedule import first_fire, parse_every, validate_spec

        person = await self.store.persons.get_person(self._for(person_id, CONTROL))
        zone = timezone or person.timezone
        if kind in _TIMED:
            spec = parse_every(spec)
        validate_spec(kind, spec, zone)
        task = checked_task(task, self.task_kinds, goal_id=goal_id)
        check_json([name, spec, match, list(watch)], "a trigger")
        seconds_span(grace_seconds, "grace_seconds")
        if missed_cap < 0:
            raise UsageError("missed_cap cannot be negative")
        hours = _heartbeat_settings(kind, goal_id, watch, active_hours, days)
        now = self.clock.now()
        trigger = Trigger(
            id=new_id("trg"),
            person_id=person.id,
            goal_id=goal_id,
            name=name or _default_name(kind, spec),
            kind=kind,
            spec=spec,
            timezone=zone,
            match=match or {},
            task=task,
            missed_policy=missed_policy,
            missed_cap=missed_cap,
            grace_seconds=grace_seconds,
            next_fire_at=first_fire(kind, spec, zone, now, hours),
            created_at=now,
            watch=tuple(watch),
            active_hours=hours,
            budget=_checked_budget(budget),
        )
        created = await self.store.schedule.create_trigger(trigger)
        self._nudge(scheduler=True)
        return created

    async def list_triggers(self, *, person_id: str, goal_id: str | None = None) -> list[Trigger]:
        return await self.store.schedule.list_triggers(
            person_id=self._for(person_id, READ), goal_id=goal_id
        )

    async def trigger_reports(
        self, *, person_id: str, goal_id: str | None = None
    ) -> list[TriggerReport]:
        """The person's triggers in plain words, with what each used today."""
        now = self.clock.now()
        return [
            _report(t, await self.store.heartbeats.spend_today(t, now=now), now)
            for t in await self.list_triggers(person_id=person_id, goal_id=goal_id)
        ]

    async def set_trigger_enabled(self, trigger_id: str, enabled: bool) -> Trigger:
        trigger = await self._trigger(trigger_id, CONTROL)
        next_fire = self._first_fire(trigger) if enabled else None
        updated = await self.store.schedule.set_trigger_enabled(
            trigger_id, enabled=enabled, next_fire_at=next_fire, now=self.clock.now()
        )
        self._nudge(scheduler=True)
        return updated

    async def set_trigger_budget(self, trigger_id: str, budget: TriggerBudget | None) -> Trigger:
        """Replace a trigger's daily budget (None: no limit). A trigger paused because today's
        budget was spent goes back on its schedule; its next firing checks the new budget."""
        trigger = await self._trigger(trigger_id, CONTROL)
        checked = _checked_budget(budget)
        next_fire = trigger.next_fire_at
        if trigger.paused_until is not None and trigger.enabled:
            next_fire = self._first_fire(trigger)
        updated = await self.store.schedule.set_trigger_budget(
            trigger_id, budget=checked, next_fire_at=next_fire
        )
        self._nudge(scheduler=True)
        return updated

    async def follow_ups(self, goal_id: str, *, pending: bool = False) -> list[FollowUp]:
        """A goal's follow-ups, soonest first."""
        await self._goal(goal_id, READ)
        return await self.store.heartbeats.list_follow_ups(goal_id, pending=pending)

    def _first_fire(self, trigger: Trigger) -> datetime | None:
        from steward.runtime.schedule import first_fire

        return first_fire(
            trigger.kind, trigger.spec, trigger.timezone, self.clock.now(), trigger.active_hours
        )


def _heartbeat_settings(
    kind: TriggerKind,
    goal_id: str | None,
    watch: Sequence[str],
    active_hours: str | None,
    days: str | None,
) -> ActiveHours | None:
    """Check what only heartbeats take; their active hours, parsed."""
    if kind is not TriggerKind.HEARTBEAT:
        if watch or active_hours or days:
            raise UsageError("watched event types and active hours are for heartbeats only")
        return None
    if goal_id is None:
        raise UsageError("a heartbeat checks on a goal: give the goal it serves")
    for pattern in watch:
        check_text(pattern, "a watched event type", most=MAX_NAME)
    if days and not active_hours:
        raise UsageError("days go with active hours, e.g. 08:00-20:00 on mon-fri")
    if active_hours is None:
        return None
    try:
        return ActiveHours.parse(active_hours, days)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _checked_budget(budget: TriggerBudget | None) -> TriggerBudget | None:
    if budget is None or budget == TriggerBudget():
        return None
    try:
        budget.check()
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    return budget


def _count(n: int, thing: str) -> str:
    return f"{n:,} {thing}" if n == 1 else f"{n:,} {thing}s"


def _report(trigger: Trigger, spend: TriggerSpend, now: datetime) -> TriggerReport:
    zone = ZoneInfo(trigger.timezone)

    def local(when: datetime) -> str:
        return when.astimezone(zone).strftime("%a %d %b %H:%M")

    schedule = f"{trigger.kind.value} {trigger.spec}"
    if trigger.kind in _TIMED:
        schedule = f"{trigger.kind.value} every {_span(float(trigger.spec))}"
    if trigger.active_hours is not None:
        schedule += f", {trigger.active_hours.describe()}"
    if trigger.watch:
        schedule += f", watching {', '.join(trigger.watch)}"
    paused = trigger.paused_until is not None and trigger.paused_until > now
    if not trigger.enabled:
        state = "off"
    elif paused and trigger.paused_until is not None:
        state = f"paused until {local(trigger.paused_until)}: today's budget is spent"
    else:
        state = "on"
    if trigger.kind is TriggerKind.EVENT:
        upcoming = f"on each {trigger.spec} event"
    elif trigger.next_fire_at is None or not trigger.enabled:
        upcoming = "not scheduled"
    else:
        upcoming = local(trigger.next_fire_at)
    today = f"{_count(spend.runs, 'run')}, {_count(spend.tokens, 'token')}, ${spend.cost_usd:.2f}"
    checks = ""
    if trigger.kind is TriggerKind.HEARTBEAT:
        last = f" (last check {local(trigger.last_beat_at)})" if trigger.last_beat_at else ""
        checks = f"{_count(trigger.idle_beats, 'check')} found nothing{last}"
    return TriggerReport(
        trigger=trigger,
        schedule=schedule,
        next=upcoming,
        budget=trigger.budget.describe() if trigger.budget else "no limit",
        today=today,
        state=state,
        checks=checks,
    )


def _default_name(kind: TriggerKind, spec: str) -> str:
    """A name in words for a trigger the person did not name ("Every 10 min", not "600")."""
    if kind in _TIMED:
        return f"Every {_span(float(spec))}"
    return f"{kind.value} {spec}"


def _span(seconds: float) -> str:
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if unit == 'day' and count > 1 else ''}"
    return f"{seconds:g} s"
