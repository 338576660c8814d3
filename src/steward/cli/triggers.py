"""CLI commands for triggers: add (heartbeats, active hours, daily budgets), list in plain words,
enable/disable, budget, and a goal's follow-ups."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import typer
from rich.text import Text

from steward.cli.common import (
    DbOption,
    JsonOption,
    PersonOption,
    console,
    emit,
    emit_one,
    parse_json_arg,
    run,
    service,
    to_jsonable,
)
from steward.domain import MissedPolicy, TaskSpec, TriggerKind
from steward.domain.trigger import TriggerBudget

trigger_app = typer.Typer(help="Triggers: what wakes work up.", no_args_is_help=True)

REPORT_COLUMNS = ["id", "name", "schedule", "next", "state", "budget", "today", "checks"]

BudgetRuns = typer.Option(None, "--budget-runs", help="Most tasks it may start a day.")
BudgetTokens = typer.Option(None, "--budget-tokens", help="Most model tokens a day.")
BudgetCost = typer.Option(None, "--budget-cost", help="Most model cost a day, US dollars.")


def _budget(runs: int | None, tokens: int | None, cost: float | None) -> TriggerBudget | None:
    if runs is None and tokens is None and cost is None:
        return None
    return TriggerBudget(runs=runs, tokens=tokens, cost_usd=cost)


def _default_task(kind: TriggerKind) -> str:
    # a heartbeat's task must read what it found: a noop would use up its follow-ups unread
    return "agent" if kind is TriggerKind.HEARTBEAT else "noop"


@trigger_app.command("add")
def trigger_add(
    kind: TriggerKind = typer.Argument(..., help="at, interval, cron, event or heartbeat."),
    spec: str = typer.Argument(
        ..., help="ISO time, every (10m, 1h, 90s), cron expression or event type."
    ),
    task_kind: str | None = typer.Option(
        None, "--task", help="Kind of task each firing creates (heartbeats: agent; else noop)."
    ),
    input: str | None = typer.Option(None, "--input", help="JSON input for those tasks."),
    goal: str | None = typer.Option(
        None, help="Goal: its id (or start) or title (a heartbeat needs one)."
    ),
    name: str = typer.Option("", help="Label."),
    timezone: str | None = typer.Option(None, "--tz", help="IANA zone (cron, hours, budget day)."),
    match: str | None = typer.Option(None, help="Event triggers: JSON payload filter."),
    missed: MissedPolicy = typer.Option(MissedPolicy.RUN_ONCE, help="Missed-run policy."),
    missed_cap: int = typer.Option(10, help="run_all: most catch-up firings."),
    watch: list[str] = typer.Option(
        [], "--watch", help="Heartbeats: event types it looks at (file.*); repeatable."
    ),
    active_hours: str | None = typer.Option(
        None, "--active-hours", help="Heartbeats: e.g. 08:00-20:00 (local)."
    ),
    days: str | None = typer.Option(None, "--days", help="With --active-hours: e.g. mon-fri."),
    budget_runs: int | None = BudgetRuns,
    budget_tokens: int | None = BudgetTokens,
    budget_cost: float | None = BudgetCost,
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Add a trigger. A heartbeat checks its goal every SPEC (10m) without the model and starts
    a task only when a follow-up fell due or an event for the goal came in."""
    payload = parse_json_arg(input, "--input")
    match_filter = parse_json_arg(match, "--match")

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            trigger = await svc.add_trigger(
                person_id=who.id,
                kind=kind,
                spec=spec,
                task=TaskSpec(kind=task_kind or _default_task(kind), input=payload),
                name=name,
                goal_id=await svc.resolve_id(goal, "gol", person_id=who.id) if goal else None,
                timezone=timezone,
                match=match_filter,
                missed_policy=missed,
                missed_cap=missed_cap,
                watch=watch,
                active_hours=active_hours,
                days=days,
                budget=_budget(budget_runs, budget_tokens, budget_cost),
            )
            emit_one(trigger, as_json=as_json)

    run(main)


@trigger_app.command("list")
def trigger_list(
    goal: str | None = typer.Option(None, help="Only this goal's triggers."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """List triggers: schedule, next firing, state, daily budget, today's use, idle checks."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            goal_id = await svc.resolve_id(goal, "gol", person_id=who.id) if goal else None
            reports = await svc.trigger_reports(person_id=who.id, goal_id=goal_id)
            emit(reports, REPORT_COLUMNS, as_json=as_json, title="Triggers")

    run(main)


@trigger_app.command("budget")
def trigger_budget(
    trigger_id: str,
    runs: int | None = typer.Option(None, "--runs", help="Most tasks a day."),
    tokens: int | None = typer.Option(None, "--tokens", help="Most model tokens a day."),
    cost: float | None = typer.Option(None, "--cost", help="Most model cost a day, USD."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Set a trigger's daily budget (none given: no limit). A trigger paused for today
    resumes; its next firing checks the new budget."""

    async def main() -> None:
        async with service(db) as svc:
            whole = await svc.resolve_id(trigger_id, "trg")
            updated = await svc.set_trigger_budget(whole, _budget(runs, tokens, cost))
            emit_one(updated, as_json=as_json)

    run(main)


@trigger_app.command("follow-ups")
def trigger_follow_ups(
    goal_id: str,
    pending: bool = typer.Option(False, "--pending", help="Only those not acted on yet."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """A goal's follow-ups (set by its agent), which its heartbeat acts on when they are due."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            whole = await svc.resolve_id(goal_id, "gol", person_id=who.id)
            items = await svc.follow_ups(whole, pending=pending)
            if as_json:
                console.print_json(data=to_jsonable(items))
                return
            zone = ZoneInfo(who.timezone)
            if not items:
                console.print("No follow-ups.")
            for item in items:
                when = item.due_at.astimezone(zone).strftime("%a %d %b %Y %H:%M")
                done = " (done)" if item.done_at is not None else ""
                # the note is the agent's text: printed as text, never as Rich markup
                console.print(Text(f"{when}: {item.note}{done}"))

    run(main)


def _trigger_enable_command(name: str, enabled: bool, doc: str) -> None:
    def command(trigger_id: str, db: str | None = DbOption, as_json: bool = JsonOption) -> None:
        async def main() -> None:
            async with service(db) as svc:
                whole = await svc.resolve_id(trigger_id, "trg")
                emit_one(await svc.set_trigger_enabled(whole, enabled), as_json=as_json)

        run(main)

    command.__doc__ = doc
    trigger_app.command(name)(command)


_trigger_enable_command("enable", True, "Enable a trigger (schedules its next firing).")
_trigger_enable_command("disable", False, "Disable a trigger (stops its schedule).")
