"""The facade's work part: goals, tasks, triggers, events, effects, the agent, approvals and
notifications."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from steward.domain import (
    Activation,
    Approval,
    ApprovalStatus,
    Budget,
    Effect,
    EffectStatus,
    Event,
    Goal,
    GoalStatus,
    Grant,
    Lifetime,
    MissedPolicy,
    Notification,
    Step,
    Task,
    TaskSpec,
    TaskStatus,
    Trigger,
    TriggerKind,
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
    hours_ahead,
    seconds_span,
)
from steward.domain.tokens import CONTROL, READ
from steward.domain.trail import Trail
from steward.errors import ConfigError, UsageError
from steward.runtime.schedule import first_fire, validate_spec
from steward.sentinel.arguments import pinned_constraints
from steward.sentinel.provenance import untrusted_arguments
from steward.sentinel.urls import parse_url
from steward.service.base import ServiceBase

APPROVAL_SCOPES = ("once", "task", "hours", "always")
"""What approving an action may also allow: see :meth:`Service.decide_approval`."""


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
        return await self.store.create_goal(
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
        goal = await self.store.set_goal_status(goal_id, status, now=self.clock.now())
        self._nudge()
        return goal

    async def set_goal_budget(self, goal_id: str, budget: Budget) -> Goal:
        await self._goal(goal_id, CONTROL)
        check_json(budget.to_json(), "a goal's budget")
        for name, value in budget.to_json().items():
            if value < 0:
                raise UsageError(f"budget {name} must not be negative")
        return await self.store.set_goal_budget(goal_id, budget, now=self.clock.now())

    async def list_goals(
        self, *, person_id: str, status: GoalStatus | None = None, limit: int = 100
    ) -> list[Goal]:
        return await self.store.list_goals(
            person_id=self._for(person_id, READ), status=[status] if status else None, limit=limit
        )

    async def goal_detail(self, goal_id: str) -> GoalDetail:
        """A goal with what it has spent so far."""
        goal = await self._goal(goal_id, READ)
        return {"goal": goal, "usage": await self.store.goal_usage(goal_id)}

    async def timeline(self, goal_id: str, *, limit: int = 500) -> list[TimelineEntry]:
        """Everything that happened under a goal, oldest first."""
        await self._goal(goal_id, READ)
        entries: list[TimelineEntry] = []
        for act in await self.store.list_activations(goal_id=goal_id, limit=limit):
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
        for rec in await self.store.list_goal_records(goal_id, limit=limit):
            entries.append(
                TimelineEntry(
                    at=rec.created_at,
                    kind=rec.kind,
                    task_id=rec.task_id,
                    summary=_short(rec.content),
                    data=rec.content,
                )
            )
        for trigger in await self.store.list_triggers(goal_id=goal_id):
            for firing in await self.store.list_firings(trigger.id, limit=limit):
                entries.append(
                    TimelineEntry(
                        at=firing.scheduled_for,
                        kind="firing",
                        task_id=firing.task_id,
                        summary=f"trigger {trigger.name} {firing.status.value}",
                        data={"trigger_id": trigger.id, "firing_id": firing.id},
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
        return await self.store.feed_since(
            person_id=person_id, after_seq=after_seq, goal_id=goal_id, limit=limit
        )

    async def feed_head(self, *, person_id: str) -> int:
        """The seq of the person's newest feed entry (0 while the feed is empty): where a live
        view that has just read the current state starts listening."""
        return await self.store.feed_head(person_id=self._for(person_id, READ))

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
        task = await self.store.create_task(
            _checked(spec, self.task_kinds),
            person_id=person_id,
            goal_id=goal_id,
            run_at=run_at,
            now=self.clock.now(),
        )
        self._nudge()
        return task

    async def get_task(self, task_id: str) -> Task:
        return await self._task(task_id, READ)

    async def task_detail(self, task_id: str) -> TaskDetail:
        """A task with its activations and effects."""
        return {
            "task": await self._task(task_id, READ),
            "activations": await self.store.list_activations(task_id=task_id),
            "effects": await self.store.list_effects(task_id=task_id),
        }

    async def count_tasks(self) -> dict[str, int]:
        """Tasks by status: everyone's, or a bound service's person's."""
        self._may(READ)
        mine = None if self.principal is None else self.principal.person_id
        return await self.store.count_tasks(person_id=mine)

    async def control_task(self, task_id: str, action: str) -> Task:
        await self._task(task_id, CONTROL)
        if action not in ("cancel", "pause", "resume"):
            raise UsageError(f"unknown action {action!r}: use cancel, pause or resume")
        task = await self.store.request_control(task_id, action, now=self.clock.now())
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
        self._may(READ)
        if self.principal is not None:
            person_id = self._for(person_id, READ)
        statuses = None
        if status is not None:
            try:
                statuses = [TaskStatus(status)]
            except ValueError as exc:
                raise UsageError(
                    f"unknown status {status!r}: {', '.join(s.value for s in TaskStatus)}"
                ) from exc
        return await self.store.list_tasks(
            person_id=person_id or None, goal_id=goal_id, status=statuses, kind=kind, limit=limit
        )

    # --- triggers -----------------------------------------------------------------------

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
    ) -> Trigger:
        person = await self.store.get_person(self._for(person_id, CONTROL))
        zone = timezone or person.timezone
        validate_spec(kind, spec, zone)
        task = _checked(task, self.task_kinds)
        check_json([name, spec, match], "a trigger")
        seconds_span(grace_seconds, "grace_seconds")
        if missed_cap < 0:
            raise UsageError("missed_cap cannot be negative")
        now = self.clock.now()
        trigger = Trigger(
            id=new_id("trg"),
            person_id=person.id,
            goal_id=goal_id,
            name=name or f"{kind.value} {spec}",
            kind=kind,
            spec=spec,
            timezone=zone,
            match=match or {},
            task=task,
            missed_policy=missed_policy,
            missed_cap=missed_cap,
            grace_seconds=grace_seconds,
            next_fire_at=first_fire(kind, spec, zone, now),
            created_at=now,
        )
        created = await self.store.create_trigger(trigger)
        self._nudge(scheduler=True)
        return created

    async def list_triggers(self, *, person_id: str, goal_id: str | None = None) -> list[Trigger]:
        return await self.store.list_triggers(person_id=self._for(person_id, READ), goal_id=goal_id)

    async def set_trigger_enabled(self, trigger_id: str, enabled: bool) -> Trigger:
        self._may(CONTROL)
        trigger = await self.store.get_trigger(trigger_id)
        self._owned("trigger", trigger_id, trigger.person_id)
        next_fire = (
            first_fire(trigger.kind, trigger.spec, trigger.timezone, self.clock.now())
            if enabled
            else None
        )
        updated = await self.store.set_trigger_enabled(
            trigger_id, enabled=enabled, next_fire_at=next_fire
        )
        self._nudge(scheduler=True)
        return updated

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
        event, created = await self.store.add_event(
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
        return await self.store.list_events(person_id=self._for(person_id, READ), limit=limit)

    async def list_effects(self, *, task_id: str | None = None) -> list[Effect]:
        self._may(READ)
        if task_id is not None:
            await self._task(task_id, READ)
        mine = None if self.principal is None else self.principal.person_id
        return await self.store.list_effects(task_id=task_id, person_id=mine)

    async def prune(self, *, older_than: timedelta) -> dict[str, int]:
        """Delete history of work that finished longer than ``older_than`` ago."""
        self._owner_only("pruning everyone's history")
        if older_than.total_seconds() < 0:
            raise UsageError("the age to prune must not be negative")
        return await self.store.prune_history(before=self.clock.now() - older_than)

    async def in_doubt_effects(self, person_id: str | None = None) -> list[Effect]:
        """Effects nobody knows happened: everyone's, one person's, or a bound service's."""
        self._may(READ)
        if self.principal is not None:
            person_id = self._for(person_id, READ)
        return await self.store.list_effects(status=EffectStatus.IN_DOUBT, person_id=person_id)

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
        effect = await self.store.get_effect(effect_id)
        task = await self.store.get_task(effect.task_id)
        self._owned("effect", effect_id, task.person_id)
        effect = await self.store.resolve_effect(
            effect_id,
            applied=applied,
            result=result,
            now=self.clock.now(),
            lease_now=self.clock.lease_now(),
        )
        self._nudge()
        return effect

    # --- the agent: asking, answering, approving --------------------------------------------

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
        await self.store.answer_input(task_id, answer, now=self.clock.now())
        self._nudge()

    async def steps(self, task_id: str, *, after: int = 0, limit: int = 1000) -> list[Step]:
        await self._task(task_id, READ)
        return await self.store.list_steps(task_id, after=after, limit=limit)

    async def list_approvals(
        self, *, person_id: str, status: ApprovalStatus | None = ApprovalStatus.PENDING
    ) -> list[Approval]:
        return await self.store.list_approvals(person_id=self._for(person_id, READ), status=status)

    async def get_approval(self, approval_id: str) -> Approval:
        return await self._approval(approval_id, READ)

    async def approval_origins(self, approval: Approval) -> dict[str, str]:
        """Arguments of ``approval`` whose values its task saw in untrusted content (an email, a
        web page), and where, in words. The task's record of such values is the only source: an
        approval does not keep them itself."""
        task = await self.get_task(approval.task_id)
        # the approval does not keep the tool's roles: every argument that looks consequential
        trail = Trail.from_json(task.state)
        flagged = untrusted_arguments(approval.args, trail, trusted_text="", roles=None)
        return {
            path: f"{t.value!r} appeared in untrusted content from {t.source} (step {t.step})"
            for path, t in flagged.items()
        }

    async def decide_approval(
        self,
        approval_id: str,
        *,
        approve: bool,
        decided_by: str = "person",
        note: str | None = None,
        scope: str = "once",
        hours: float | None = None,
    ) -> Approval:
        """Approve or deny exactly the action that was asked about; the task resumes.

        Approving can also give lasting authority for the same tool (a grant, audited):
        ``once`` (just this action), ``task`` (the rest of this task), ``hours`` (for
        ``hours``), ``always`` (standing). A lasting grant never covers more than the action
        approved: read by the tool's argument roles (kept on the approval), it is bound to this
        tool, to exactly this action's recipients and URLs, to at most its amount, and to the
        exact value of every argument the tool did not mark as content, free text or a time
        (:func:`~steward.sentinel.arguments.pinned_constraints`); it is recorded in the same
        transaction as the decision. When it
        cannot be bound — the action names no recipient or URL, or one of them (or the amount)
        cannot be read unambiguously (a display name, a host that is not plainly a host) —
        the lasting scope is refused with
        a :class:`~steward.errors.UsageError` and nothing changes; the person can still
        approve it once."""
        check_text(note or "", "a decision's note")
        approval = await self._approval(approval_id, CONTROL)
        decided_by = self._decider(decided_by)
        if scope not in APPROVAL_SCOPES:
            raise UsageError(f"unknown approval scope {scope!r}; use one of {APPROVAL_SCOPES}")
        now = self.clock.now()
        if approve and scope != "once":
            # one transaction: a grant never outlives a decision that failed
            decided = await self.store.approve_granting(
                approval_id,
                self._grant_for(approval, scope, hours=hours, issued_by=decided_by),
                decided_by=decided_by,
                now=now,
                note=note,
            )
        else:
            decided = await self.store.decide_approval(
                approval_id, approve=approve, decided_by=decided_by, now=now, note=note
            )
        self._nudge()
        return decided

    def _grant_for(
        self, approval: Approval, scope: str, *, hours: float | None, issued_by: str
    ) -> Grant:
        now = self.clock.now()
        constraints: dict[str, Any] = {"tool": approval.tool}
        lifetime = {"task": Lifetime.TASK, "hours": Lifetime.UNTIL, "always": Lifetime.STANDING}
        expires_at = None
        if scope == "hours":
            if hours is None:
                raise UsageError("approving for some hours needs hours > 0")
            expires_at = now + hours_ahead(hours, "approving for some hours")
        # bound to what this action touches, or refused: never wider than what was approved
        constraints.update(pinned_constraints(approval.args, approval.roles))
        return Grant(
            id=new_id("grt"),
            person_id=approval.person_id,
            scopes=approval.scopes,
            lifetime=lifetime[scope],
            constraints=constraints,
            task_id=approval.task_id if scope == "task" else None,
            expires_at=expires_at,
            issued_by=issued_by,
            reason=f"approved {approval.id} ({scope})",
            created_at=now,
        )

    async def list_notifications(
        self, *, person_id: str, unread: bool = False, limit: int = 200
    ) -> list[Notification]:
        return await self.store.list_notifications(
            person_id=self._for(person_id, READ), unread=unread, limit=limit
        )

    async def mark_read(self, notification_id: str) -> None:
        """Mark read (a read token may: it is the dashboard's own bookkeeping). Marking one
        already read changes nothing; an id that is not the person's is
        :class:`~steward.errors.NotFound`, like one that does not exist."""
        self._may(READ)
        mine = None if self.principal is None else self.principal.person_id
        await self.store.mark_read(notification_id, now=self.clock.now(), person_id=mine)


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


def _checked(spec: TaskSpec, kinds: frozenset[str] | None) -> TaskSpec:
    """A task spec as stored: a bad one is refused here, not discovered mid-run."""
    if kinds is not None and spec.kind not in kinds:
        raise UsageError(
            f"unknown task kind {spec.kind!r}: the workers run {', '.join(sorted(kinds))}"
        )
    if spec.max_attempts < 1:
        raise UsageError("max_attempts must be at least 1")
    check_json([spec.kind, spec.title, spec.input], "a task")
    check_text(spec.kind, "a task's kind", most=MAX_NAME)
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
