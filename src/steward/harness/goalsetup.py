"""Goal tools: the agent sets up standing work the person asked for in conversation ("every
weekday at 8, check my calendar and tell me only if two events overlap"), changes it, adds or
stops its schedules, and says when its stop condition is met.

Each is an action on the person's standing work: the sentinel decides it (by default the
person is asked, with one sentence saying what would be set up; a rule of theirs can allow it),
and it runs through the effect journal, so a replayed or retried step never creates a second
goal (:mod:`steward.runtime.standing` derives ids from the effect key). Arguments are checked
before anything is asked: a bad schedule, a deadline already past or an unknown report policy
come back to the model as an error, and the person is not asked about a call that cannot run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field

from steward.domain import GoalStatus, Trigger, TriggerKind
from steward.domain.actions import EffectClass
from steward.domain.clock import Clock
from steward.domain.roles import Role
from steward.errors import UsageError
from steward.harness.tools import Tool, ToolArgumentError, ToolContext, ToolError, tool
from steward.runtime.standing import Schedule, StandingWork
from steward.sentinel.defaults import STANDING_WORK_TOOLS

Policy = Literal["all", "actionable", "none"]

_POLICY_WORDS = {
    "all": "telling you each result",
    "actionable": "telling you only what needs you",
    "none": "without telling you",
}
_GOAL_REF = "The goal's title (as the person knows it) or its id."
_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

_SCHEDULE_HELP = (
    "When it runs: 'cron <min> <hour> <day> <month> <weekday>' (in the person's time zone), "
    "'at <ISO time with offset>' (once: a reminder), 'every <10m|1h|1d>', or "
    "'heartbeat <30m> [08:00-20:00 [mon-fri]]' (cheap checks, a task only when something is due)."
)


def describe_schedule(schedule: Schedule, zone: str | None) -> str:
    """A schedule in words: ``every weekday at 08:00 (Europe/Zurich)``."""
    where = f" ({zone})" if zone else " (your time)"
    if schedule.kind is TriggerKind.AT:
        when = datetime.fromisoformat(schedule.spec)
        if zone:
            when = when.astimezone(ZoneInfo(zone))
        return f"on {when:%a %d %b %Y} at {when:%H:%M}" + ("" if zone else f" ({when:%z})")
    if schedule.kind in (TriggerKind.INTERVAL, TriggerKind.HEARTBEAT):
        span = _span(float(schedule.spec))
        words = (
            f"every {span}" if schedule.kind is TriggerKind.INTERVAL else f"checking every {span}"
        )
        if schedule.active_hours is not None:
            words += f", {schedule.active_hours.describe()}"
        return words
    return _cron_words(schedule.spec) + where


def _when_words(iso: str) -> str:
    """An ISO time as the person reads it, in the offset it was given: ``Sun 31 Jan 2027
    23:59`` (as it is when it cannot be read; the arguments were checked before)."""
    try:
        return f"{datetime.fromisoformat(iso):%a %d %b %Y %H:%M}"
    except ValueError:
        return iso


def _span(seconds: float) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {unit}" if n == 1 else f"{n} {unit}s"
    return f"{seconds:g} seconds"


def _cron_words(spec: str) -> str:
    fields = spec.split()
    if (
        len(fields) == 5
        and fields[0].isdigit()
        and fields[1].isdigit()
        and fields[2:4] == ["*"] * 2
    ):
        at = f"{int(fields[1]):02d}:{int(fields[0]):02d}"
        weekday = fields[4]
        if weekday == "*":
            return f"every day at {at}"
        if weekday in ("1-5", "mon-fri", "MON-FRI"):
            return f"every weekday at {at}"
        if weekday.isdigit() and int(weekday) <= 7:
            return f"every {_DAYS[int(weekday) % 7]} at {at}"
    return f"on the schedule '{spec}'"


def _zone(name: str | None) -> str | None:
    if name is None:
        return None
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ToolArgumentError(f"unknown time zone {name!r}; use an IANA name") from exc
    return name


def _future_time(text: str, what: str, now: datetime) -> datetime:
    try:
        when = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ToolArgumentError(f"{what} is not an ISO-8601 time: {text!r}") from exc
    if when.tzinfo is None:
        raise ToolArgumentError(f"{what} needs a UTC offset, e.g. 2026-12-31T23:59:59+01:00")
    if when <= now:
        raise ToolArgumentError(f"{what} {text} has already passed; give a time in the future")
    return when


def _schedules(texts: list[str] | None, zone: str | None, now: datetime) -> list[Schedule]:
    parsed = []
    for text in texts or []:
        try:
            schedule = Schedule.parse(text, timezone=zone or "UTC")
        except UsageError as exc:
            raise ToolArgumentError(str(exc)) from exc
        if schedule.kind is TriggerKind.AT:
            _future_time(schedule.spec, "the reminder time", now)
        parsed.append(schedule)
    return parsed


def _checked(base: Tool, check: Callable[[dict[str, Any]], None]) -> Tool:
    """``base`` whose validation also runs ``check`` (ToolArgumentError: nothing is asked)."""
    validate_schema = base.validate

    def validate(args: dict[str, Any]) -> dict[str, Any]:
        checked = validate_schema(args)
        check(checked)
        return checked

    return replace(base, validate=validate)


def _refused(exc: UsageError) -> ToolError:
    """A request that cannot be carried out (no such goal, it ended): certainly not done."""
    return ToolError(str(exc))


def _local(trigger: Trigger) -> str:
    if trigger.next_fire_at is None:
        return "not scheduled"
    return trigger.next_fire_at.astimezone(ZoneInfo(trigger.timezone)).strftime("%a %d %b %H:%M %Z")


def goal_tools(work: StandingWork, clock: Clock) -> list[Tool]:
    """``create_goal``, ``update_goal``, ``schedule_goal`` and ``complete_goal`` over ``work``;
    ``clock`` judges whether a deadline or reminder is already past."""

    def summarize_create(args: Mapping[str, Any]) -> str:
        zone = args.get("timezone")
        schedules = [Schedule.parse(s, timezone=zone or "UTC") for s in args.get("schedule") or []]
        when = " and ".join(describe_schedule(s, zone) for s in schedules)
        what = str(args["instructions"]).strip().rstrip(".")
        what = what[:1].lower() + what[1:]
        policy = _POLICY_WORDS[str(args.get("report_policy", "actionable"))]
        text = f"Set up a standing goal '{args['title']}': {when} {what}".replace("  ", " ")
        if args.get("deadline"):
            until = datetime.fromisoformat(str(args["deadline"]))
            if zone:
                until = until.astimezone(ZoneInfo(zone))
            text += f" until {until:%a %d %b %Y %H:%M}"
        text += f" ({policy})"
        if args.get("stop_condition"):
            text += f"; done when {args['stop_condition']}"
        return text + "."

    def check_create(args: dict[str, Any]) -> None:
        now = clock.now()
        if not str(args["title"]).strip() or not str(args["instructions"]).strip():
            raise ToolArgumentError("a goal needs a title and instructions")
        zone = _zone(args.get("timezone"))
        _schedules(args.get("schedule"), zone, now)
        if args.get("deadline"):
            _future_time(str(args["deadline"]), "the deadline", now)

    @tool(name="create_goal", effect=EffectClass.EXTERNAL, idempotent=True)
    async def create_goal(
        ctx: ToolContext,
        title: Annotated[str, Role.FREE_TEXT, Field(description="Short name of the goal.")],
        instructions: Annotated[
            str,
            Role.FREE_TEXT,
            Field(description="What to do each time, in the person's words, self-contained."),
        ],
        schedule: Annotated[list[str] | None, Role.TIME, Field(description=_SCHEDULE_HELP)] = None,
        deadline: Annotated[
            str | None,
            Role.TIME,
            Field(
                description="ISO time with offset when the goal ends ('until the end of "
                "the month': that day 23:59:59 local)."
            ),
        ] = None,
        stop_condition: Annotated[
            str, Role.FREE_TEXT, Field(description="When the goal is done, in words.")
        ] = "",
        report_policy: Annotated[
            Policy,
            Field(
                description="all: every result; actionable: only what needs the person "
                "('tell me only if…'); none: nothing."
            ),
        ] = "actionable",
        sources: Annotated[
            list[str] | None, Role.FREE_TEXT, Field(description="Where to look.")
        ] = None,
        timezone: Annotated[
            str | None,
            Role.TIME,
            Field(description="IANA time zone of the schedule (default: the person's)."),
        ] = None,
    ) -> dict[str, Any]:
        """Set up standing work the person asked for ("every Monday…", "remind me…", "until
        the end of the month…", "tell me only if…"): a goal with its schedule. The person is
        asked first unless they allowed it."""
        zone = timezone or await work.timezone(ctx.person_id)
        assert ctx.idempotency_key is not None  # a journalled tool always runs under a key
        try:
            goal, triggers = await work.create_goal(
                person_id=ctx.person_id,
                task_id=ctx.task_id,
                key=ctx.idempotency_key,
                title=title.strip(),
                instructions=instructions.strip(),
                deadline=datetime.fromisoformat(deadline) if deadline else None,
                stop_condition=stop_condition.strip(),
                report_policy=report_policy,
                sources=sources or [],
                schedules=[Schedule.parse(s, timezone=zone) for s in schedule or []],
                timezone=zone,
            )
        except UsageError as exc:
            raise _refused(exc) from None
        return {
            "goal_id": goal.id,
            "title": goal.title,
            "triggers": [{"id": t.id, "next": _local(t)} for t in triggers],
        }

    def summarize_update(args: Mapping[str, Any]) -> str:
        changes = []
        if args.get("state") == "pause":
            changes.append("pause it")
        if args.get("state") == "resume":
            changes.append("resume it")
        if args.get("deadline"):
            changes.append(
                "remove its deadline"
                if args["deadline"] == "none"
                else f"set its deadline to {_when_words(str(args['deadline']))}"
            )
        if args.get("report_policy"):
            changes.append(f"go on {_POLICY_WORDS[str(args['report_policy'])]}")
        if args.get("stop_condition"):
            changes.append(f"stop when {args['stop_condition']}")
        if args.get("instructions"):
            changes.append(f"do this instead: {args['instructions']}")
        if args.get("sources") is not None:
            changes.append(f"look at {', '.join(args['sources']) or 'no particular sources'}")
        return f"Change your standing goal '{args['goal']}': {'; '.join(changes)}."

    def check_update(args: dict[str, Any]) -> None:
        deadline = args.get("deadline")
        if deadline and deadline != "none":
            _future_time(str(deadline), "the deadline", clock.now())
        keys = ("instructions", "deadline", "stop_condition", "report_policy", "sources", "state")
        if all(args.get(k) is None for k in keys):
            raise ToolArgumentError("say what to change")

    @tool(name="update_goal", effect=EffectClass.EXTERNAL, idempotent=True)
    async def update_goal(
        ctx: ToolContext,
        goal: Annotated[str, Role.IDENTIFIER, Field(description=_GOAL_REF)],
        instructions: Annotated[
            str | None, Role.FREE_TEXT, Field(description="New instructions.")
        ] = None,
        deadline: Annotated[
            str | None, Role.TIME, Field(description="New ISO deadline with offset, or 'none'.")
        ] = None,
        stop_condition: Annotated[str | None, Role.FREE_TEXT] = None,
        report_policy: Policy | None = None,
        sources: Annotated[list[str] | None, Role.FREE_TEXT] = None,
        state: Annotated[
            Literal["pause", "resume"] | None, Field(description="Pause or resume the goal.")
        ] = None,
    ) -> dict[str, Any]:
        """Change a standing goal: deadline, stop condition, report policy, sources,
        instructions; or pause / resume it."""
        moves = {"pause": GoalStatus.PAUSED, "resume": GoalStatus.ACTIVE, None: None}
        try:
            changed = await work.revise_goal(
                person_id=ctx.person_id,
                goal=goal,
                instructions=instructions,
                deadline=None
                if deadline in (None, "none")
                else datetime.fromisoformat(str(deadline)),
                clear_deadline=deadline == "none",
                stop_condition=stop_condition,
                report_policy=report_policy,
                sources=sources,
                status=moves[state],
            )
        except UsageError as exc:
            raise _refused(exc) from None
        return {"goal_id": changed.id, "status": changed.status.value}

    def summarize_schedule(args: Mapping[str, Any]) -> str:
        if args.get("stop_trigger"):
            return f"Stop one of the schedules of your goal '{args['goal']}'."
        zone = args.get("timezone")
        when = describe_schedule(Schedule.parse(str(args["add"]), timezone=zone or "UTC"), zone)
        return f"Also run your goal '{args['goal']}' {when}."

    def check_schedule(args: dict[str, Any]) -> None:
        if (args.get("add") is None) == (args.get("stop_trigger") is None):
            raise ToolArgumentError("give exactly one of 'add' or 'stop_trigger'")
        zone = _zone(args.get("timezone"))
        if args.get("add") is not None:
            _schedules([str(args["add"])], zone, clock.now())

    @tool(name="schedule_goal", effect=EffectClass.EXTERNAL, idempotent=True)
    async def schedule_goal(
        ctx: ToolContext,
        goal: Annotated[str, Role.IDENTIFIER, Field(description=_GOAL_REF)],
        add: Annotated[str | None, Role.TIME, Field(description=_SCHEDULE_HELP)] = None,
        stop_trigger: Annotated[
            str | None, Role.IDENTIFIER, Field(description="Or: the trigger id to stop.")
        ] = None,
        timezone: Annotated[
            str | None, Role.TIME, Field(description="IANA time zone (default: the person's).")
        ] = None,
    ) -> dict[str, Any]:
        """Add a schedule to a standing goal, or stop one of its schedules."""
        try:
            if stop_trigger is not None:
                stopped = await work.stop_trigger(
                    person_id=ctx.person_id, goal=goal, trigger_id=stop_trigger
                )
                return {"trigger_id": stopped.id, "stopped": True}
            assert add is not None
            assert ctx.idempotency_key is not None
            zone = timezone or await work.timezone(ctx.person_id)
            added = await work.add_trigger(
                person_id=ctx.person_id,
                task_id=ctx.task_id,
                key=ctx.idempotency_key,
                goal=goal,
                schedule=Schedule.parse(add, timezone=zone),
                timezone=zone,
            )
        except UsageError as exc:
            raise _refused(exc) from None
        return {"trigger_id": added.id, "next": _local(added)}

    def summarize_complete(args: Mapping[str, Any]) -> str:
        goal = f"your goal '{args['goal']}'" if args.get("goal") else "this task's goal"
        return f"Mark {goal} as done: {args['evidence']}"

    def check_complete(args: dict[str, Any]) -> None:
        if not str(args["evidence"]).strip():
            raise ToolArgumentError("say in one sentence what shows the goal is done")

    @tool(name="complete_goal", effect=EffectClass.EXTERNAL, idempotent=True)
    async def complete_goal(
        ctx: ToolContext,
        evidence: Annotated[
            str,
            Role.FREE_TEXT,
            Field(description="One sentence: what shows the stop condition holds."),
        ],
        goal: Annotated[
            str | None,
            Role.IDENTIFIER,
            Field(description="Its title or id; default: this task's goal."),
        ] = None,
    ) -> dict[str, Any]:
        """The goal's stop condition is met: end it as completed (its schedules stop)."""
        target = goal or ctx.goal_id
        if target is None:
            raise ToolError("this task has no goal; name the goal to complete")
        assert ctx.idempotency_key is not None
        try:
            done = await work.complete_goal(
                person_id=ctx.person_id,
                task_id=ctx.task_id,
                key=ctx.idempotency_key,
                goal=target,
                evidence=evidence.strip(),
            )
        except UsageError as exc:
            raise _refused(exc) from None
        return {"goal_id": done.id, "status": done.status.value, "evidence": evidence}

    made = [
        _checked(replace(create_goal, summarize=summarize_create), check_create),
        _checked(replace(update_goal, summarize=summarize_update), check_update),
        _checked(replace(schedule_goal, summarize=summarize_schedule), check_schedule),
        _checked(replace(complete_goal, summarize=summarize_complete), check_complete),
    ]
    assert {t.name for t in made} <= STANDING_WORK_TOOLS  # the sentinel asks about each
    return made
