"""CLI commands that manage goals, tasks, events and effects (triggers: ``cli.triggers``).

A goal's or a task's id may be given shortened, to any prefix that names one of the person's
(``gol_01a2c``): the facade's ``resolve_id`` completes it, or says it names none or several.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import typer

from steward.cli.common import (
    DbOption,
    JsonOption,
    PersonOption,
    console,
    emit,
    emit_one,
    parse_json_arg,
    parse_time,
    read_input,
    run,
    service,
    to_jsonable,
)
from steward.domain import Budget, GoalStatus, TaskSpec
from steward.domain.journal import resolution_summary

goal_app = typer.Typer(help="Goals: durable intent.", no_args_is_help=True)
task_app = typer.Typer(help="Tasks: units of execution.", no_args_is_help=True)
event_app = typer.Typer(help="The event inbox.", no_args_is_help=True)
effect_app = typer.Typer(help="The effect journal.", no_args_is_help=True)

GOAL_COLUMNS = ["id", "title", "status", "deadline", "report_policy"]
TASK_COLUMNS = ["id", "kind", "status", "attempts", "step_seq", "goal_id", "run_at"]


# --- goals ------------------------------------------------------------------------------


@goal_app.command("create")
def goal_create(
    title: str,
    instructions: str = typer.Option("", help="What to do, in your words."),
    deadline: str | None = typer.Option(None, help="ISO-8601 time with offset."),
    stop_condition: str = typer.Option("", help="When the goal is done."),
    report_policy: str = typer.Option("actionable", help="all, actionable or none."),
    constraint: list[str] = typer.Option([], help="A constraint (repeatable)."),
    source: list[str] = typer.Option([], help="A source to watch (repeatable)."),
    max_activations: int | None = typer.Option(None, help="Budget: most activations."),
    max_steps: int | None = typer.Option(None, help="Budget: most steps."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Create a goal."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            goal = await svc.create_goal(
                person_id=who.id,
                title=title,
                instructions=instructions,
                deadline=parse_time(deadline) if deadline else None,
                stop_condition=stop_condition,
                report_policy=report_policy,
                constraints=constraint,
                sources=source,
                budget=Budget(max_activations=max_activations, max_steps=max_steps),
            )
            emit_one(goal, as_json=as_json)

    run(main)


@goal_app.command("list")
def goal_list(
    status: GoalStatus | None = typer.Option(None, help="Only goals in this status."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """List goals."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            goals = await svc.list_goals(person_id=who.id, status=status)
            emit(goals, GOAL_COLUMNS, as_json=as_json, title="Goals")

    run(main)


@goal_app.command("show")
def goal_show(goal_id: str, db: str | None = DbOption, as_json: bool = JsonOption) -> None:
    """Show a goal, its state and budget use."""

    async def main() -> None:
        async with service(db) as svc:
            detail = await svc.goal_detail(await svc.resolve_id(goal_id, "gol"))
            emit_one({**to_jsonable(detail["goal"]), "usage": detail["usage"]}, as_json=as_json)

    run(main)


@goal_app.command("budget")
def goal_budget(
    goal_id: str,
    max_activations: int | None = typer.Option(None, help="Most activations."),
    max_steps: int | None = typer.Option(None, help="Most steps."),
    max_tokens: int | None = typer.Option(None, help="Most model tokens."),
    max_cost_usd: float | None = typer.Option(None, help="Most model cost in USD."),
    max_seconds: float | None = typer.Option(None, help="Most seconds of work in all."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Set a goal's spend caps (unset options remove that cap)."""

    async def main() -> None:
        async with service(db) as svc:
            budget = Budget(
                max_activations=max_activations,
                max_steps=max_steps,
                max_tokens=max_tokens,
                max_cost_usd=max_cost_usd,
                max_seconds=max_seconds,
            )
            whole = await svc.resolve_id(goal_id, "gol")
            emit_one(await svc.set_goal_budget(whole, budget), as_json=as_json)

    run(main)


def _goal_status_command(name: str, status: GoalStatus, doc: str) -> None:
    def command(goal_id: str, db: str | None = DbOption, as_json: bool = JsonOption) -> None:
        async def main() -> None:
            async with service(db) as svc:
                whole = await svc.resolve_id(goal_id, "gol")
                emit_one(await svc.set_goal_status(whole, status), as_json=as_json)

        run(main)

    command.__doc__ = doc
    goal_app.command(name)(command)


_goal_status_command("pause", GoalStatus.PAUSED, "Pause a goal: no new activations.")
_goal_status_command("resume", GoalStatus.ACTIVE, "Resume a paused goal.")
_goal_status_command("cancel", GoalStatus.CANCELLED, "Cancel a goal, its tasks and triggers.")
_goal_status_command("complete", GoalStatus.COMPLETED, "Mark a goal done.")


@goal_app.command("timeline")
def goal_timeline(
    goal_id: str,
    limit: int = typer.Option(200, help="Most recent entries to show."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Show what happened under a goal: firings, activations, results."""

    async def main() -> None:
        async with service(db) as svc:
            entries = await svc.timeline(await svc.resolve_id(goal_id, "gol"), limit=limit)
            emit(entries, ["at", "kind", "task_id", "summary"], as_json=as_json, title="Timeline")

    run(main)


# --- tasks ------------------------------------------------------------------------------


@task_app.command("create")
def task_create(
    kind: str | None = typer.Argument(
        None, help="Task kind (e.g. noop, note, wait_event, http_post)."
    ),
    input: str | None = typer.Option(None, "--input", help="JSON object of handler input."),
    goal: str | None = typer.Option(None, help="Goal: its id (or start) or title."),
    title: str = typer.Option("", help="Label."),
    priority: int = typer.Option(0, help="Higher runs first."),
    max_attempts: int = typer.Option(5, help="Attempts before dead letter."),
    run_at: str | None = typer.Option(None, help="Earliest start, ISO-8601 with offset."),
    from_file: str | None = typer.Option(
        None,
        "--from-file",
        help="Create many at once from this file (- for stdin): JSON lines, each like the "
        'flags, e.g. {"kind": "note", "goal": "gol_01a2", "input": {"text": "hi"}}. All are '
        "checked first; a bad one refuses them all.",
    ),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Create a task (or, with --from-file, many in one transaction)."""
    if from_file is not None:
        if kind is not None:
            raise typer.BadParameter("give a kind or --from-file, not both")
        _create_from_file(from_file, person, db, as_json)
        return
    if kind is None:
        raise typer.BadParameter("give the task's kind, or --from-file")
    payload = parse_json_arg(input, "--input")

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            spec = TaskSpec(
                kind=kind, input=payload, priority=priority, max_attempts=max_attempts, title=title
            )
            task = await svc.create_task(
                person_id=who.id,
                spec=spec,
                goal_id=await svc.resolve_id(goal, "gol") if goal else None,
                run_at=parse_time(run_at) if run_at else None,
            )
            emit_one(task, as_json=as_json)

    run(main)


def _create_from_file(source: str, person: str | None, db: str | None, as_json: bool) -> None:
    from steward.service.task_items import parse_task_items

    text = read_input(source)

    async def main() -> None:
        requests = parse_task_items(text)
        async with service(db) as svc:
            who = await svc.person(person)
            goals = {r.goal_id for r in requests if r.goal_id is not None}
            whole = {g: await svc.resolve_id(g, "gol") for g in goals}
            created = await svc.create_tasks(
                person_id=who.id,
                requests=[
                    replace(r, goal_id=whole[r.goal_id]) if r.goal_id else r for r in requests
                ],
            )
        if as_json:
            emit(created, TASK_COLUMNS, as_json=True)
        else:
            console.print(f"{len(created)} tasks created")

    run(main)


@task_app.command("list")
def task_list(
    status: str | None = typer.Option(None, help="Only tasks in this status."),
    goal: str | None = typer.Option(None, help="Only this goal's tasks."),
    limit: int = typer.Option(100),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """List tasks, newest first."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            goal_id = await svc.resolve_id(goal, "gol") if goal else None
            tasks = await svc.list_tasks(
                person_id=who.id, goal_id=goal_id, status=status, limit=limit
            )
            emit(tasks, TASK_COLUMNS, as_json=as_json, title="Tasks")

    run(main)


@task_app.command("show")
def task_show(task_id: str, db: str | None = DbOption, as_json: bool = JsonOption) -> None:
    """Show a task with its activations and effects."""

    async def main() -> None:
        async with service(db) as svc:
            detail = to_jsonable(await svc.task_detail(await svc.resolve_id(task_id, "tsk")))
            emit_one({**detail.pop("task"), **detail}, as_json=as_json)

    run(main)


def _task_control_command(action: str, doc: str) -> None:
    def command(task_id: str, db: str | None = DbOption, as_json: bool = JsonOption) -> None:
        async def main() -> None:
            async with service(db) as svc:
                whole = await svc.resolve_id(task_id, "tsk")
                emit_one(await svc.control_task(whole, action), as_json=as_json)

        run(main)

    command.__doc__ = doc
    task_app.command(action)(command)


_task_control_command("cancel", "Cancel a task (a running one stops at its next step).")
_task_control_command("pause", "Pause a task (a running one stops at its next step).")
_task_control_command("resume", "Resume a paused task.")


# --- events and effects -----------------------------------------------------------------


@event_app.command("send")
def event_send(
    type: str = typer.Argument(..., help="Event type, e.g. email.received."),
    payload: str | None = typer.Option(None, help="JSON payload."),
    dedupe_key: str | None = typer.Option(None, help="Delivery id; a repeat is stored once."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Put an event into the inbox."""
    body = parse_json_arg(payload, "--payload")

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            event, created = await svc.send_event(
                person_id=who.id, type=type, payload=body, dedupe_key=dedupe_key
            )
            result: dict[str, Any] = {**to_jsonable(event), "duplicate": not created}
            emit_one(result, as_json=as_json)

    run(main)


@event_app.command("list")
def event_list(
    person: str | None = PersonOption, db: str | None = DbOption, as_json: bool = JsonOption
) -> None:
    """List recent events."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            events = await svc.list_events(person_id=who.id)
            emit(
                events,
                ["id", "type", "source", "dedupe_key", "received_at", "routed_at"],
                as_json=as_json,
                title="Events",
            )

    run(main)


@effect_app.command("list")
def effect_list(
    in_doubt: bool = typer.Option(False, "--in-doubt", help="Only effects needing a decision."),
    task: str | None = typer.Option(None, help="Only this task's effects."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """List journalled side effects."""

    async def main() -> None:
        async with service(db) as svc:
            if in_doubt:
                effects = await svc.in_doubt_effects()
            else:
                task_id = await svc.resolve_id(task, "tsk") if task else None
                effects = await svc.list_effects(task_id=task_id)
            emit(
                effects,
                ["id", "task_id", "tool", "status", "attempts", "key"],
                as_json=as_json,
                title="Effects",
            )

    run(main)


@effect_app.command("resolve")
def effect_resolve(
    effect_id: str,
    applied: bool = typer.Option(
        ..., "--applied/--not-applied", help="Did the effect happen? Not applied: it will be sent."
    ),
    result: str | None = typer.Option(
        None,
        "--result",
        help="With --applied: what the service answered, as JSON. Left out, the task reads "
        "that the effect happened and its result is unknown.",
    ),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Decide an in-doubt effect; a task waiting on it resumes, an ended one stays ended."""
    answer = None
    if result is not None:
        if not applied:
            raise typer.BadParameter("--result goes only with --applied", param_hint="--result")
        try:
            answer = json.loads(result)
        except json.JSONDecodeError as exc:
            raise typer.BadParameter(f"not JSON: {exc}", param_hint="--result") from exc

    async def main() -> None:
        async with service(db) as svc:
            whole = await svc.resolve_id(effect_id, "eff")
            effect = await svc.resolve_effect(whole, applied=applied, result=answer)
            task = await svc.get_task(effect.task_id)
            emit_one(effect, as_json=as_json)
            if not as_json:
                console.print(resolution_summary(effect, task.status))

    run(main)
