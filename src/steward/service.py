"""The service facade: the one door every interface (CLI, API, dashboard, MCP) goes through.

It validates input (a bad request raises a :class:`~steward.errors.UsageError` and changes
nothing), stamps times from the clock, and nudges an in-process runtime when it adds work.

**Tenancy.** A :class:`Service` acts for a :class:`Principal` or, with none, for the machine's
owner at a local console (who holds the database anyway). :meth:`Service.authenticate` turns an
API token into a service bound to the token's person and scopes: every method then acts for
that person only — an id of anyone else's goal, task, trigger, approval, notification, effect,
grant, rule, connection or token is :class:`~steward.errors.NotFound`, exactly like an id that
does not exist — and needs the token's ``read`` or ``control`` scope
(:class:`~steward.errors.Forbidden` otherwise). A few maintenance operations over everyone's
data (pruning history, verifying the whole audit chain) are for the owner only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from steward.domain import (
    ApiToken,
    Approval,
    ApprovalStatus,
    AuditEntry,
    Budget,
    Connection,
    Effect,
    EffectStatus,
    Event,
    Goal,
    GoalStatus,
    Grant,
    Lifetime,
    MissedPolicy,
    Notification,
    Person,
    Rule,
    RuleMode,
    Step,
    Task,
    TaskSpec,
    TaskStatus,
    Trigger,
    TriggerKind,
)
from steward.domain.ids import new_id
from steward.errors import ConfigError, Forbidden, NotFound, StewardError, UsageError
from steward.runtime.clock import Clock
from steward.runtime.schedule import first_fire, validate_spec
from steward.sentinel.audit import AuditVerdict
from steward.sentinel.policy import recipients_of, urls_of
from steward.sentinel.tokens import CONTROL, READ, require_scope
from steward.store import Store
from steward.store.authority import Disconnected

APPROVAL_SCOPES = ("once", "task", "hours", "always")
"""What approving an action may also allow: see :meth:`Service.decide_approval`."""


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


@dataclass(kw_only=True, frozen=True)
class Principal:
    """Who a bound service acts for: a person, through an API token."""

    person_id: str
    """The token's person: the only one whose data the service touches."""
    token: ApiToken
    """The token, with its scopes (``read``, ``control``)."""

    @property
    def actor(self) -> str:
        """How decisions made through it are recorded (never the token's secret)."""
        return f"token:{self.token.id}"


class Service:
    def __init__(
        self,
        store: Store,
        clock: Clock | None = None,
        runtime: Any = None,
        *,
        principal: Principal | None = None,
    ) -> None:
        self.store = store
        self.clock = clock or Clock()
        self.runtime = runtime
        """An in-process :class:`~steward.runtime.runtime.Runtime` to nudge, if any."""
        self.principal = principal
        """Who it acts for; None: the machine's owner, for anyone."""

    # --- who is asking ------------------------------------------------------------------

    async def authenticate(self, token: str) -> Service:
        """A service bound to the person and scopes of ``token`` (stored hashed; a missing,
        unknown or revoked token is :class:`~steward.errors.Unauthorized`)."""
        found = await self.store.authenticate(token, now=self.clock.now())
        return Service(
            self.store,
            self.clock,
            self.runtime,
            principal=Principal(person_id=found.person_id, token=found),
        )

    def _may(self, scope: str) -> None:
        if self.principal is not None:
            require_scope(self.principal.token, scope)

    def _for(self, person_id: str | None, scope: str) -> str:
        """The person to act for: a bound service's own (naming anyone else is not found)."""
        self._may(scope)
        if self.principal is None:
            if not person_id:
                raise UsageError("say which person to act for")
            return person_id
        if person_id and person_id != self.principal.person_id:
            raise NotFound("person", person_id)
        return self.principal.person_id

    def _owned(self, kind: str, object_id: str, person_id: str) -> None:
        if self.principal is not None and person_id != self.principal.person_id:
            raise NotFound(kind, object_id)

    def _owner_only(self, what: str) -> None:
        if self.principal is not None:
            raise Forbidden(f"{what} is for the machine's owner, not an API token")

    async def _goal(self, goal_id: str, scope: str) -> Goal:
        self._may(scope)
        goal = await self.store.get_goal(goal_id)
        self._owned("goal", goal_id, goal.person_id)
        return goal

    async def _task(self, task_id: str, scope: str) -> Task:
        self._may(scope)
        task = await self.store.get_task(task_id)
        self._owned("task", task_id, task.person_id)
        return task

    async def _approval(self, approval_id: str, scope: str) -> Approval:
        self._may(scope)
        approval = await self.store.get_approval(approval_id)
        self._owned("approval", approval_id, approval.person_id)
        return approval

    def _decider(self, given: str) -> str:
        return given if self.principal is None else self.principal.actor

    # --- persons ------------------------------------------------------------------------

    async def ensure_person(self, name: str = "me") -> Person:
        """The person to act for: the first one, created on first use (a bound service's own
        person)."""
        if self.principal is not None:
            return await self.person(None)
        persons = await self.store.list_persons()
        if persons:
            return persons[0]
        return await self.store.create_person(name=name, now=self.clock.now())

    async def person(self, person_id: str | None) -> Person:
        if self.principal is not None:
            return await self.store.get_person(self._for(person_id, READ))
        if person_id:
            return await self.store.get_person(person_id)
        return await self.ensure_person()

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

    async def goal_detail(self, goal_id: str) -> dict[str, Any]:
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
                    summary=f"activation ({act.reason}) → {act.outcome or 'running'}, "
                    f"{act.steps} steps",
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
                    summary=f"{rec.kind}: {_short(rec.content)}",
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
        if spec.max_attempts < 1:
            raise UsageError("max_attempts must be at least 1")
        task = await self.store.create_task(
            spec, person_id=person_id, goal_id=goal_id, run_at=run_at, now=self.clock.now()
        )
        self._nudge()
        return task

    async def get_task(self, task_id: str) -> Task:
        return await self._task(task_id, READ)

    async def task_detail(self, task_id: str) -> dict[str, Any]:
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

    async def list_tasks(self, **filters: Any) -> list[Task]:
        self._may(READ)
        if self.principal is not None:
            filters["person_id"] = self._for(filters.get("person_id"), READ)
        status = filters.pop("status", None)
        if isinstance(status, str):
            try:
                filters["status"] = [TaskStatus(status)]
            except ValueError as exc:
                raise UsageError(
                    f"unknown status {status!r}: {', '.join(s.value for s in TaskStatus)}"
                ) from exc
        return await self.store.list_tasks(**filters)

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
        if missed_cap < 0:
            raise UsageError("missed_cap cannot be negative")
        now = self.clock.now()
        trigger = Trigger(
            id=new_id("trg"),
            person_id=person_id,
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

    async def resolve_effect(self, effect_id: str, *, applied: bool) -> Effect:
        self._may(CONTROL)
        effect = await self.store.get_effect(effect_id)
        task = await self.store.get_task(effect.task_id)
        self._owned("effect", effect_id, task.person_id)
        effect = await self.store.resolve_effect(effect_id, applied=applied, now=self.clock.now())
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
    ) -> Task:
        """Create an ``agent`` task: a one-off request, or a chat conversation (``chat``)."""
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
        ``hours``), ``always`` (standing, bound to this action's recipients/hosts)."""
        approval = await self._approval(approval_id, CONTROL)
        decided_by = self._decider(decided_by)
        if scope not in APPROVAL_SCOPES:
            raise UsageError(f"unknown approval scope {scope!r}; use one of {APPROVAL_SCOPES}")
        grant = None
        if approve and scope != "once":
            # created first: it is checked against the connections before anything is decided
            grant = await self.store.add_grant(
                self._grant_for(approval, scope, hours=hours, issued_by=decided_by)
            )
        try:
            decided = await self.store.decide_approval(
                approval_id, approve=approve, decided_by=decided_by, now=self.clock.now(), note=note
            )
        except StewardError:
            if grant is not None:
                await self.store.revoke_grant(
                    grant.id, person_id=grant.person_id, now=self.clock.now()
                )
            raise
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
            if hours is None or hours <= 0:
                raise UsageError("approving for some hours needs hours > 0")
            expires_at = now + timedelta(hours=hours)
        if scope == "always":
            # "always for this recipient/host": bound to what this action touches
            recipients = recipients_of(approval.args)
            if recipients:
                constraints["recipients"] = recipients
            urls = urls_of(approval.args)
            if urls:
                constraints["hosts"] = sorted({u.hostname or "" for u in urls} - {""})
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
        """Mark read (a read token may: it is the dashboard's own bookkeeping)."""
        self._may(READ)
        mine = None if self.principal is None else self.principal.person_id
        await self.store.mark_read(notification_id, now=self.clock.now(), person_id=mine)

    # --- security: audit log and API tokens ---------------------------------------------

    async def audit_log(
        self, *, person_id: str, after_seq: int = 0, limit: int = 500
    ) -> list[AuditEntry]:
        """The person's own audit entries, oldest first."""
        return await self.store.list_audit(
            person_id=self._for(person_id, READ), after_seq=after_seq, limit=limit
        )

    async def verify_audit(self) -> AuditVerdict:
        """Check the whole hash chain; the verdict names the first entry that fails. The chain
        links everyone's entries, so this is the machine owner's."""
        self._owner_only("verifying the whole audit chain")
        return await self.store.verify_audit()

    async def create_token(
        self, *, person_id: str, name: str, scopes: Sequence[str]
    ) -> tuple[ApiToken, str]:
        """Issue an API token; the plaintext is returned once and never stored."""
        return await self.store.create_token(
            person_id=self._for(person_id, CONTROL), name=name, scopes=scopes, now=self.clock.now()
        )

    async def list_tokens(self, *, person_id: str) -> list[ApiToken]:
        return await self.store.list_tokens(self._for(person_id, READ))

    async def revoke_token(self, token_id: str, *, person_id: str) -> ApiToken:
        return await self.store.revoke_token(
            token_id, person_id=self._for(person_id, CONTROL), now=self.clock.now()
        )

    # --- security: connections, grants, rules ------------------------------------------

    async def add_connection(
        self,
        *,
        person_id: str,
        kind: str,
        name: str,
        scopes: Sequence[str],
        hosts: Sequence[str] = (),
    ) -> Connection:
        person_id = self._for(person_id, CONTROL)
        if not scopes:
            raise UsageError("a connection exposes at least one scope (e.g. email.read)")
        return await self.store.add_connection(
            Connection(
                id=new_id("con"),
                person_id=person_id,
                kind=kind,
                name=name,
                scopes=tuple(scopes),
                hosts=tuple(hosts),
                created_at=self.clock.now(),
            )
        )

    async def list_connections(self, *, person_id: str) -> list[Connection]:
        return await self.store.list_connections(self._for(person_id, READ))

    async def disconnect(self, connection_id: str, *, person_id: str) -> Disconnected:
        """Deactivate a connection; grants it no longer covers are revoked at once."""
        return await self.store.disconnect(
            connection_id, person_id=self._for(person_id, CONTROL), now=self.clock.now()
        )

    async def list_grants(self, *, person_id: str, live: bool = True) -> list[Grant]:
        return await self.store.list_grants(
            self._for(person_id, READ), live_at=self.clock.now() if live else None
        )

    async def add_grant(
        self,
        *,
        person_id: str,
        scopes: Sequence[str],
        constraints: dict[str, Any] | None = None,
        hours: float | None = None,
        reason: str = "",
        issued_by: str = "person",
    ) -> Grant:
        """A grant the person gives directly: standing, or for ``hours`` from now."""
        person_id = self._for(person_id, CONTROL)
        issued_by = self._decider(issued_by)
        if hours is not None and hours <= 0:
            raise UsageError("a grant for some hours needs hours > 0")
        now = self.clock.now()
        return await self.store.add_grant(
            Grant(
                id=new_id("grt"),
                person_id=person_id,
                scopes=tuple(scopes),
                lifetime=Lifetime.STANDING if hours is None else Lifetime.UNTIL,
                constraints=constraints or {},
                expires_at=None if hours is None else now + timedelta(hours=hours),
                issued_by=issued_by,
                reason=reason,
                created_at=now,
            )
        )

    async def revoke_grant(self, grant_id: str, *, person_id: str) -> Grant:
        """Takes effect at the very next action, inside running tasks too."""
        return await self.store.revoke_grant(
            grant_id, person_id=self._for(person_id, CONTROL), now=self.clock.now()
        )

    async def add_rule(
        self, *, person_id: str, pattern: str, mode: str, priority: int = 0, reason: str = ""
    ) -> Rule:
        person_id = self._for(person_id, CONTROL)
        try:
            parsed = RuleMode(mode)
        except ValueError as exc:
            modes = ", ".join(m.value for m in RuleMode)
            raise UsageError(f"unknown rule mode {mode!r}; use one of {modes}") from exc
        return await self.store.add_rule(
            Rule(
                id=new_id("rul"),
                person_id=person_id,
                pattern=pattern,
                mode=parsed,
                priority=priority,
                reason=reason,
                created_at=self.clock.now(),
            )
        )

    async def list_rules(self, *, person_id: str) -> list[Rule]:
        return await self.store.list_rules(self._for(person_id, READ))

    async def delete_rule(self, rule_id: str, *, person_id: str) -> None:
        await self.store.delete_rule(
            rule_id, person_id=self._for(person_id, CONTROL), now=self.clock.now()
        )

    def _nudge(self, *, scheduler: bool = False) -> None:
        if self.runtime is None:
            return
        self.runtime.notify_work()
        if scheduler:
            self.runtime.notify_scheduler()


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
