"""Standing work set up from a conversation: goals, their schedules, their changes and their
end, as the agent's goal tools ask for them (``steward.harness.goalsetup``).

Each call runs as an effect under the journal's key; the ids of what it creates are derived from
that key, so a replayed or retried call finds what the first one made instead of making it
twice. A goal made from a task belongs to the task's person, and the tasks its triggers start
speak to no wider audience than the conversation it was made in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from steward.domain import Goal, GoalStatus, TaskSpec, Trigger, TriggerKind
from steward.domain.agent_input import AgentTaskInput
from steward.domain.clock import Clock
from steward.domain.trigger import ActiveHours
from steward.errors import ConfigError, NotFound, UsageError
from steward.failpoints import failpoint
from steward.runtime.schedule import first_fire, parse_every, validate_spec
from steward.store import Store

REPORT_POLICIES = ("all", "actionable", "none")
"""What a goal's report policy may be."""


@dataclass(kw_only=True, frozen=True)
class Schedule:
    """When a goal's work runs: one trigger."""

    kind: TriggerKind
    """``at``, ``interval``, ``cron`` or ``heartbeat``."""
    spec: str
    """As the trigger stores it: an ISO time, seconds, or a cron expression."""
    active_hours: ActiveHours | None = None
    """For a heartbeat: when it may run."""

    @classmethod
    def parse(cls, text: str, *, timezone: str) -> Schedule:
        """From ``cron 0 8 * * 1-5``, ``at 2026-12-11T09:00:00+01:00``, ``every 1h`` or
        ``heartbeat 30m [08:00-20:00 [mon-fri]]``; :class:`UsageError` says what is wrong."""
        word, _, rest = text.strip().partition(" ")
        rest = rest.strip()
        kinds = {
            "at": TriggerKind.AT,
            "every": TriggerKind.INTERVAL,
            "cron": TriggerKind.CRON,
            "heartbeat": TriggerKind.HEARTBEAT,
        }
        kind = kinds.get(word.lower())
        if kind is None or not rest:
            raise UsageError(
                f"schedule {text!r} is not one of: 'cron <5 fields>', 'at <ISO time with "
                "offset>', 'every <10m|1h|1d>', 'heartbeat <30m> [08:00-20:00 [mon-fri]]'"
            )
        hours: ActiveHours | None = None
        spec = rest
        try:
            if kind is TriggerKind.HEARTBEAT:
                every, *window = rest.split()
                spec = parse_every(every)
                if window:
                    hours = ActiveHours.parse(window[0], window[1] if len(window) > 1 else None)
            elif kind is TriggerKind.INTERVAL:
                spec = parse_every(rest)
            validate_spec(kind, spec, timezone)
        except (ConfigError, ValueError) as exc:
            raise UsageError(str(exc)) from exc
        return cls(kind=kind, spec=spec, active_hours=hours)


def derived_id(prefix: str, key: str, index: int | None = None) -> str:
    """The id of what an effect with this key creates (the ``index``-th of its kind)."""
    seed = key if index is None else f"{key}#{index}"
    return f"{prefix}_{hashlib.sha256(seed.encode()).hexdigest()[:32]}"


class StandingWork:
    """Creates and changes a person's goals and their triggers for the agent's goal tools."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    async def timezone(self, person_id: str) -> str:
        """The person's time zone (schedules and deadlines are in it)."""
        return (await self.store.persons.get_person(person_id)).timezone

    async def create_goal(
        self,
        *,
        person_id: str,
        task_id: str,
        key: str,
        title: str,
        instructions: str,
        deadline: datetime | None,
        stop_condition: str,
        report_policy: str,
        sources: Sequence[str],
        schedules: Sequence[Schedule],
        timezone: str,
    ) -> tuple[Goal, list[Trigger]]:
        """The goal and its triggers, created once per ``key``."""
        goal = await self.store.goals.create_goal(
            goal_id=derived_id("gol", key),
            person_id=person_id,
            title=title,
            now=self.clock.now(),
            instructions=instructions,
            deadline=deadline,
            stop_condition=stop_condition,
            report_policy=report_policy,
            sources=sources,
        )
        failpoint("goalsetup.after_goal")  # the goal is written, its schedule not yet
        made = [
            await self._trigger(goal, schedule, task_id, timezone, derived_id("trg", key, i))
            for i, schedule in enumerate(schedules)
        ]
        return goal, made

    async def add_trigger(
        self,
        *,
        person_id: str,
        task_id: str,
        key: str,
        goal: str,
        schedule: Schedule,
        timezone: str,
    ) -> Trigger:
        """One more trigger for a live goal of the person's, created once per ``key``."""
        found = await self.live_goal(person_id, goal)
        return await self._trigger(found, schedule, task_id, timezone, derived_id("trg", key))

    async def stop_trigger(self, *, person_id: str, goal: str, trigger_id: str) -> Trigger:
        """Switch off one of a goal's triggers (its firings stay in the history)."""
        found = await self.live_goal(person_id, goal)
        try:
            trigger = await self.store.schedule.get_trigger(trigger_id)
        except NotFound:
            trigger = None
        if trigger is None or trigger.goal_id != found.id:
            raise UsageError(f"goal '{found.title}' has no schedule {trigger_id}")
        return await self.store.schedule.set_trigger_enabled(
            trigger_id, enabled=False, next_fire_at=None, now=self.clock.now()
        )

    async def revise_goal(
        self,
        *,
        person_id: str,
        goal: str,
        instructions: str | None,
        deadline: datetime | None,
        clear_deadline: bool,
        stop_condition: str | None,
        report_policy: str | None,
        sources: Sequence[str] | None,
        status: GoalStatus | None,
    ) -> Goal:
        """Change a live goal; ``status`` pauses or resumes it (its triggers stay on their
        schedule and start nothing while it is paused)."""
        found = await self.live_goal(person_id, goal)
        now = self.clock.now()
        revised = await self.store.goals.revise_goal(
            found.id,
            now=now,
            instructions=instructions,
            deadline=deadline,
            clear_deadline=clear_deadline,
            stop_condition=stop_condition,
            report_policy=report_policy,
            sources=sources,
        )
        if status is not None and status is not revised.status:
            revised = await self.store.goals.set_goal_status(revised.id, status, now=now)
        return revised

    async def complete_goal(
        self, *, person_id: str, task_id: str, key: str, goal: str, evidence: str
    ) -> Goal:
        """The goal's stop condition is met (``evidence`` says what shows it, recorded in the
        goal): it completes, its triggers stop, its other open tasks are cancelled (the task
        that said so finishes itself). Once: a replay finds it completed."""
        found = await self._own_goal(person_id, goal)
        if found.status is GoalStatus.COMPLETED:
            return found
        if found.status.terminal:
            raise UsageError(f"goal '{found.title}' already ended ({found.status.value})")
        now = self.clock.now()
        await self.store.goals.write_goal(
            found.id,
            now=now,
            record=("evidence", {"text": evidence, "completes": True, "task_id": task_id}),
            key=f"complete:{key}",
        )
        return await self.store.goals.set_goal_status(
            found.id, GoalStatus.COMPLETED, now=now, spare=task_id
        )

    async def live_goal(self, person_id: str, ref: str) -> Goal:
        """The person's goal named by ``ref``, still running (active or paused)."""
        goal = await self._own_goal(person_id, ref)
        if goal.status.terminal:
            raise UsageError(f"goal '{goal.title}' has ended ({goal.status.value})")
        return goal

    async def _own_goal(self, person_id: str, ref: str) -> Goal:
        """The person's goal with id ``ref``, else the one live goal titled ``ref`` (ignoring
        case); another person's goal is not found."""
        try:
            goal = await self.store.goals.get_goal(ref)
        except NotFound:
            goal = None
        if goal is not None and goal.person_id == person_id:
            return goal
        wanted = " ".join(ref.split()).casefold()
        live = await self.store.goals.list_goals(
            person_id=person_id, status=[GoalStatus.ACTIVE, GoalStatus.PAUSED], limit=1000
        )
        named = [g for g in live if " ".join(g.title.split()).casefold() == wanted]
        if not named:
            raise UsageError(f"you have no running goal called {ref!r}")
        if len(named) > 1:
            raise UsageError(f"{len(named)} goals are called {ref!r}: name one by its id")
        return named[0]

    async def _trigger(
        self, goal: Goal, schedule: Schedule, task_id: str, timezone: str, trigger_id: str
    ) -> Trigger:
        try:
            return await self.store.schedule.get_trigger(trigger_id)
        except NotFound:
            pass
        hours = schedule.active_hours
        now = self.clock.now()
        trigger = Trigger(
            id=trigger_id,
            person_id=goal.person_id,
            goal_id=goal.id,
            name=goal.title,
            kind=schedule.kind,
            spec=schedule.spec,
            timezone=timezone,
            task=await self._task(goal, task_id),
            next_fire_at=first_fire(schedule.kind, schedule.spec, timezone, now, hours),
            created_at=now,
            active_hours=hours,
        )
        return await self.store.schedule.create_trigger(trigger)

    async def _task(self, goal: Goal, task_id: str) -> TaskSpec:
        """What each firing starts: an agent task on the goal, speaking to the audience of the
        conversation the goal was made in (a group's goal reports to that group, never more)."""
        origin = await self.store.tasks.get_task(task_id)
        audience = AgentTaskInput.from_json(origin.input).audience
        return TaskSpec(
            kind="agent",
            title=goal.title,
            input={"instructions": goal.instructions or goal.title, "audience": str(audience)},
        )
