"""The facade's work part: goals, tasks, triggers, events, effects, and asking and answering
the agent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from steward.domain import (
    Activation,
    Budget,
    Effect,
    EffectStatus,
    Event,
    Goal,
    GoalStatus,
    Step,
    Task,
    TaskSpec,
    TaskStatus,
)
from steward.domain.audience import PRIVATE, Audience
from steward.domain.feed import FeedEntry
from steward.domain.ids import new_id
from steward.domain.limits import (
    MAX_KEY,
    MAX_NAME,
    check_json,
    check_seq,
    check_text,
)
from steward.domain.task import TaskRequest
from steward.domain.tokens import CONTROL, READ
from steward.errors import ConfigError, UsageError
from steward.service.base import ServiceBase
from steward.service.taskinput import check_input

MOST_TASKS_AT_ONCE = 10_000
"""Tasks one :meth:`WorkService.create_tasks` call writes (one transaction)."""

_ENDED = {
    "succeed": "succeeded",
    "fail": "failed",
    "retry": "will retry",
    "wait": "waiting",
    "requeue": "requeued",
}
"""An activation's outcome as people read it."""


class GoalDetail(TypedDict):
    """A goal with what it has spent so far."""

    goal: Goal
    usage: dict[str, float]
    """Activations, steps, model tokens and cost, seconds of work."""


class TaskDetail(TypedDict):
    """A task with its activations and effects."""

    task: Task
    activations: list[Activation]
    effects: list[Effect]


@dataclass(kw_only=True, frozen=True)
class TimelineEntry:
    at: datetime
    """When it happened."""
    kind: str
    """``activation``, ``step``, ``record``, ``firing``..."""
    task_id: str | None
    """The task involved, if any."""
    summary: str
    """One line for people."""
    data: dict[str, Any]
    """The details."""


class WorkService(ServiceBase):
    # --- goals --------------------------------------------------------------------------

    async def create_goal(
        self,
        *,
        person_id: str,
        title: str,
        instructions: str = "",
        constraints: Sequence[str] = (),
        deadline: datetime | None = None,
        stop_condition: str = "",
        report_policy: str = "actionable",
        sources: Sequence[str] = (),
        budget: Budget | None = None,
    ) -> Goal:
        person_id = self._for(person_id, CONTROL)
        if not title.strip():
            raise UsageError("a goal needs a title")
        check_json(
            [title, instructions, list(constraints), stop_condition, list(sources)], "a goal"
        )
        if budget is not None:
            check_json(budget.to_json(), "a goal's budget")
        if report_policy not in ("all", "actionable", "none"):
            raise UsageError("report policy must be one of: all, actionable, none")
        if deadline is not None and deadline <= self.clock.now():
            raise UsageError(f"deadline {deadline.isoformat()} is already past")
        return await self.store.goals.create_goal(
            person_id=person_id,
            title=title.strip(),
            now=self.clock.now(),
            instructions=instructions,
            constraints=constraints,
            deadline=deadline,
            stop_condition=stop_condition,
            report_policy=report_policy,
            sources=sources,
            budget=budget,
        )

    async def set_goal_status(self, goal_id: str, status: GoalStatus) -> Goal:
        await self._goal(goal_id, CONTROL)
        goal = await self.store.goals.set_goal_status(goal_id, status, now=self.clock.now())
        self._nudge()
        return goal

    async def set_goal_budget(self, goal_id: str, budget: Budget) -> Goal:
        await self._goal(goal_id, CONTROL)
        check_json(budget.to_json(), "a goal's budget")
        for name, value in budget.to_json().items():
            if value < 0:
                raise UsageError(f"budget {name} must not be negative")
        return await self.store.goals.set_goal_budget(goal_id, budget, now=self.clock.now())

    async def list_goals(
        self, *, person_id: str, status: GoalStatus | None = None, limit: int = 100
    ) -> list[Goal]:
        return await self.store.goals.list_goals(
            person_id=self._for(person_id, READ), status=[status] if status else None, limit=limit
        )

    async def goal_detail(self, goal_id: str) -> GoalDetail:
        """A goal with what it has spent so far."""
        goal = await self._goal(goal_id, READ)
        return {"goal": goal, "usage": await self.store.activations.goal_usage(goal_id)}

    async def timeline(self, goal_id: str, *, limit: int = 500) -> list[TimelineEntry]:
        """Everything that happened under a goal, oldest first."""
        await self._goal(goal_id, READ)
        entries: list[TimelineEntry] = []
        for act in await self.store.activations.list_activations(goal_id=goal_id, limit=limit):
            entries.append(
                TimelineEntry(
                    at=act.started_at,
                    kind="activation",
                    task_id=act.task_id,
                    summary=f"woke for {act.reason}, {act.steps} steps: "
                    f"{_ENDED.get(act.outcome or '', act.outcome or 'running')}",
                    data={
                        "id": act.id,
                        "worker": act.worker,
                        "usage": act.usage,
                        "ended_at": act.ended_at.isoformat() if act.ended_at else None,
                    },
                )
            )
        for rec in await self.store.goals.list_goal_records(goal_id, limit=limit):
            entries.append(
                TimelineEntry(
                    at=rec.created_at,
                    kind=rec.kind,
                    task_id=rec.task_id,
                    summary=_short(rec.content),
                    data=rec.content,
                )
            )
        for trigger in await self.store.schedule.list_triggers(goal_id=goal_id):
            for firing in await self.store.schedule.list_firings(trigger.id, limit=limit):
                entries.append(
                    TimelineEntry(
                        at=firing.scheduled_for,
                        kind="firing",
                        task_id=firing.task_id,
                        summary=f"trigger {trigger.name} {firing.status.value}",
                        data={"trigger_id": trigger.id, "firing_id": firing.id},
                    )
                )
        for follow_up in await self.store.heartbeats.list_follow_ups(
            goal_id, latest=True, limit=limit
        ):
            done = " (done)" if follow_up.done_at is not None else ""
            entries.append(
                TimelineEntry(
                    at=follow_up.due_at,
                    kind="follow-up",
                    task_id=follow_up.done_task_id or follow_up.task_id,
                    summary=f"follow up: {follow_up.note[:80]}{done}",
                    data={"follow_up_id": follow_up.id},
                )
            )
        entries.sort(key=lambda e: e.at)
        return entries[-limit:]

    async def feed(
        self,
        *,
        person_id: str,
        after_seq: int = 0,
        goal_id: str | None = None,
        limit: int = 500,
    ) -> list[FeedEntry]:
        """What happened for the person after ``after_seq`` (under one goal, with
        ``goal_id``), in commit order: the live stream's source."""
        person_id = self._for(person_id, READ)
        if goal_id is not None:
            await self._goal(goal_id, READ)
        check_seq(after_seq, "after_seq")
        if not 1 <= limit <= 1000:
            raise UsageError("limit is from 1 to 1000")
        return await self.store.feed.feed_since(
            person_id=person_id, after_seq=after_seq, goal_id=goal_id, limit=limit
        )

    async def feed_head(self, *, person_id: str) -> int:
        """The seq of the person's newest feed entry (0 while the feed is empty): where a live
        view that has just read the current state starts listening."""
        return await self.store.feed.feed_head(person_id=self._for(person_id, READ))

    # --- tasks --------------------------------------------------------------------------

    async def create_task(
        self,
        *,
        person_id: str,
        spec: TaskSpec,
        goal_id: str | None = None,
        run_at: datetime | None = None,
    ) -> Task:
        person_id = self._for(person_id, CONTROL)
        task = await self.store.tasks.create_task(
            checked_task(spec, self.task_kinds, goal_id=goal_id),
            person_id=person_id,
            goal_id=goal_id,
            run_at=run_at,
            now=self.clock.now(),
        )
        self._nudge()
        return task

    async def create_tasks(self, *, person_id: str, requests: Sequence[TaskRequest]) -> list[Task]:
        """Create a batch of tasks (a script's, at most :data:`MOST_TASKS_AT_ONCE`) in one
        transaction: each checked first, and the first that cannot run refuses them all
        (:class:`UsageError` naming it, counted from 1), nothing written."""
        person_id = self._for(person_id, CONTROL)
        if not requests:
            raise UsageError("no tasks to create")
        if len(requests) > MOST_TASKS_AT_ONCE:
            raise UsageError(
                f"{len(requests)} tasks at once: at most {MOST_TASKS_AT_ONCE}; split the batch"
            )
        checked = []
        for number, request in enumerate(requests, start=1):
            try:
                spec = checked_task(request.spec, self.task_kinds, goal_id=request.goal_id)
            except UsageError as exc:
                raise UsageError(f"task {number}: {exc}") from None
            checked.append(replace(request, spec=spec))
        created = await self.store.tasks.create_tasks(
            checked, person_id=person_id, now=self.clock.now()
        )
        self._nudge()
        return created

    async def get_task(self, task_id: str) -> Task:
        return await self._task(task_id, READ)

    async def task_detail(self, task_id: str) -> TaskDetail:
        """A task with its activations and effects."""
        return {
            "task": await self._task(task_id, READ),
            "activations": await self.store.activations.list_activations(task_id=task_id),
            "effects": await self.store.effects.list_effects(task_id=task_id),
        }

    async def count_tasks(self) -> dict[str, int]:
        """Tasks by status: everyone's, or a bound service's person's."""
        return await self.store.tasks.count_tasks(person_id=self._mine(READ))

    async def control_task(self, task_id: str, action: str) -> Task:
        await self._task(task_id, CONTROL)
        if action not in ("cancel", "pause", "resume"):
            raise UsageError(f"unknown action {action!r}: use cancel, pause or resume")
        task = await self.store.tasks.request_control(task_id, action, now=self.clock.now())
        self._nudge()
        return task

    async def list_tasks(
        self,
        *,
        person_id: str | None = None,
        goal_id: str | None = None,
        status: str | None = None,
        kind: str | None = None,
        limit: int = 100,
    ) -> list[Task]:
        """Tasks, newest first: everyone's (a bound service's person's), or one person's; only
        those under ``goal_id``, in ``status`` or of ``kind`` (e.g. ``agent``) if given."""
        person_id = self._mine(READ, person_id)
        statuses = None
        if status is not None:
            try:
                statuses = [TaskStatus(status)]
            except ValueError as exc:
                raise UsageError(
                    f"unknown status {status!r}: {', '.join(s.value for s in TaskStatus)}"
                ) from exc
        return await self.store.tasks.list_tasks(
            person_id=person_id or None, goal_id=goal_id, status=statuses, kind=kind, limit=limit
        )

    # --- events and effects -------------------------------------------------------------

    async def send_event(
        self,
        *,
        person_id: str,
        type: str,
        payload: dict[str, Any] | None = None,
        source: str = "cli",
        dedupe_key: str | None = None,
    ) -> tuple[Event, bool]:
        person_id = self._for(person_id, CONTROL)
        if not type:
            raise UsageError("an event needs a type")
        check_json([type, source, dedupe_key, payload], "an event")
        check_text(type, "an event's type", most=MAX_NAME)
        check_text(source, "an event's source", most=MAX_NAME)
        check_text(dedupe_key or "", "an event's dedupe key", most=MAX_KEY)
        event, created = await self.store.schedule.add_event(
            person_id=person_id,
            type=type,
            source=source,
            dedupe_key=dedupe_key or new_id("dlv"),
            payload=payload or {},
            now=self.clock.now(),
        )
        if created:
            self._nudge(scheduler=True)
        return event, created

    async def list_events(self, *, person_id: str, limit: int = 200) -> list[Event]:
        return await self.store.schedule.list_events(
            person_id=self._for(person_id, READ), limit=limit
        )

    async def list_effects(self, *, task_id: str | None = None) -> list[Effect]:
        if task_id is not None:
            await self._task(task_id, READ)
        return await self.store.effects.list_effects(task_id=task_id, person_id=self._mine(READ))

    async def prune(self, *, older_than: timedelta) -> dict[str, int]:
        """Delete history of work that finished longer than ``older_than`` ago."""
        self._owner_only("pruning everyone's history")
        if older_than.total_seconds() < 0:
            raise UsageError("the age to prune must not be negative")
        return await self.store.schedule.prune_history(before=self.clock.now() - older_than)

    async def in_doubt_effects(self, person_id: str | None = None) -> list[Effect]:
        """Effects nobody knows happened: everyone's, one person's, or a bound service's."""
        return await self.store.effects.list_effects(
            status=EffectStatus.IN_DOUBT, person_id=self._mine(READ, person_id)
        )

    async def resolve_effect(self, effect_id: str, *, applied: bool, result: Any = None) -> Effect:
        """Decide an in-doubt effect: it happened (``result``: what the service answered, if
        known; without it the step reads an explicit "applied; result unknown" marker) or it
        did not (refused while the worker that sent it may still be sending it; the message
        says until when). A task waiting on it wakes; a task that has ended stays as it is
        (:func:`~steward.domain.journal.resolution_summary` says what changed)."""
        self._may(CONTROL)
        if result is not None and not applied:
            raise UsageError("a result goes only with an effect that happened (applied)")
        check_json(result, "an effect's result")
        effect = await self.store.effects.get_effect(effect_id)
        task = await self.store.tasks.get_task(effect.task_id)
        self._owned("effect", effect_id, task.person_id)
        effect = await self.store.effects.resolve_effect(
            effect_id,
            applied=applied,
            result=result,
            now=self.clock.now(),
            lease_now=self.clock.lease_now(),
        )
        self._nudge()
        return effect

    # --- the agent: asking and answering -------------------------------------------------------

    async def ask_agent(
        self,
        *,
        person_id: str,
        instructions: str,
        goal_id: str | None = None,
        chat: bool = False,
        tools: Sequence[str] | None = None,
        budget: dict[str, Any] | None = None,
        audience: Audience = PRIVATE,
        skill: str | None = None,
        inputs: dict[str, Any] | None = None,
    ) -> Task:
        """Create an ``agent`` task: a one-off request, or a chat conversation (``chat``).

        ``audience`` is who hears the conversation; it bounds what the agent may disclose in it
        and is inherited by every subtask. ``skill`` runs that skill's workflow with ``inputs``
        first, without a model (the model takes over if a step fails)."""
        person_id = self._for(person_id, CONTROL)
        if not instructions.strip():
            raise UsageError("tell the agent what to do: the instructions are empty")
        task_input: dict[str, Any] = {"instructions": instructions.strip()}
        if chat:
            task_input["mode"] = "chat"
        if tools is not None:
            task_input["tools"] = list(tools)
        if budget:
            task_input["budget"] = budget
        task_input["audience"] = str(audience)
        if skill is not None:
            if not skill.strip():
                raise UsageError("name the skill to run")
            task_input["skill"] = skill.strip()
            task_input["inputs"] = dict(inputs or {})
        elif inputs:
            raise UsageError("inputs are for a skill: name it with skill=")
        title = instructions.strip().splitlines()[0][:80]
        return await self.create_task(
            person_id=person_id,
            spec=TaskSpec(kind="agent", input=task_input, title=title, max_attempts=5),
            goal_id=goal_id,
        )

    async def answer_task(self, task_id: str, answer: str) -> None:
        """Answer a task that waits for the person (a question, a chat reply, a budget stop)."""
        await self._task(task_id, CONTROL)
        if not answer.strip():
            raise UsageError("the answer is empty")
        check_text(answer, "the answer")
        await self.store.inbox.answer_input(task_id, answer, now=self.clock.now())
        self._nudge()

    async def steps(self, task_id: str, *, after: int = 0, limit: int = 1000) -> list[Step]:
        await self._task(task_id, READ)
        return await self.store.activations.list_steps(task_id, after=after, limit=limit)


def parse_time(value: str) -> datetime:
    """Parse an ISO-8601 time for the CLI/API; a time without offset is rejected."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ConfigError(f"not an ISO-8601 time: {value!r}") from exc
    if parsed.tzinfo is None:
        raise ConfigError(f"time {value!r} needs a UTC offset, e.g. {value}+00:00")
    return parsed


def _short(content: dict[str, Any], width: int = 80) -> str:
    text = ", ".join(f"{k}={v}" for k, v in content.items())
    return text if len(text) <= width else text[: width - 1] + "…"


def checked_task(spec: TaskSpec, kinds: frozenset[str] | None, *, goal_id: str | None) -> TaskSpec:
    """A task spec as stored, for a task under ``goal_id`` (or none): a bad one is refused
    here, not discovered mid-run."""
    from steward.sentinel.urls import parse_url

    if kinds is not None and spec.kind not in kinds:
        raise UsageError(
            f"unknown task kind {spec.kind!r}: the workers run {', '.join(sorted(kinds))}"
        )
    if spec.max_attempts < 1:
        raise UsageError("max_attempts must be at least 1")
    check_json([spec.kind, spec.title, spec.input], "a task")
    check_text(spec.kind, "a task's kind", most=MAX_NAME)
    check_input(spec.kind, spec.input, goal_id)
    if spec.kind == "http_post":
        # where it may post is decided when it runs (connections change); what it names is
        # read here, the way the sentinel and the broker will read it
        url = spec.input.get("url")
        if not isinstance(url, str):
            raise UsageError("an http_post task needs input.url, the URL to post to")
        parse_url(url)
        if not isinstance(spec.input.get("body", {}), dict):
            raise UsageError("an http_post task's input.body must be a JSON object")
        calls = spec.input.get("calls", 1)
        if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
            raise UsageError("an http_post task's input.calls must be a whole number, 1 or more")
    if "audience" in spec.input:
        audience = Audience.parse(str(spec.input["audience"]))  # kept in its one spelling
        spec = replace(spec, input={**spec.input, "audience": str(audience)})
    return spec
