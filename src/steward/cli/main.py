"""``steward``: run the runtime and manage goals, tasks and triggers from a terminal.

Every command module is imported here to register its commands, so none of them imports
anything heavy (the API, the harness, connectors, model clients) at its top: those are
imported inside the commands that use them, and ``steward --help`` starts fast.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import typer

import steward
from steward.cli.agent import answer, approval_app, ask, chat, inbox
from steward.cli.backup import backup, restore, upgrade
from steward.cli.browser import browser_app
from steward.cli.channels import channel_app
from steward.cli.codehost import codehost_app
from steward.cli.common import DbOption, console, err_console, run, service, url_of, working
from steward.cli.connect import connect, connection_status, connection_test, disconnect
from steward.cli.demo import demo
from steward.cli.doctor import doctor
from steward.cli.init import init
from steward.cli.login import login, logout
from steward.cli.logs import logs
from steward.cli.manage import effect_app, event_app, goal_app, task_app
from steward.cli.memory import memory_app
from steward.cli.reports import reach_app, report_app
from steward.cli.security import audit_app, connection_app, grant_app, rule_app, token_app
from steward.cli.serve import scheduler, up, worker
from steward.cli.service_unit import service_app
from steward.cli.skills import skill_app
from steward.cli.status import status
from steward.cli.triggers import trigger_app
from steward.cli.vault import secret_app, vault_app
from steward.cli.watch import watch_app

app = typer.Typer(
    help="Steward: a self-hosted personal agent runtime.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(goal_app, name="goal")
app.add_typer(task_app, name="task")
app.add_typer(trigger_app, name="trigger")
app.add_typer(event_app, name="event")
app.add_typer(effect_app, name="effect")
app.add_typer(approval_app, name="approval")
app.add_typer(audit_app, name="audit")
app.add_typer(token_app, name="token")
app.add_typer(connection_app, name="connection")
app.add_typer(grant_app, name="grant")
app.add_typer(rule_app, name="rule")
app.add_typer(secret_app, name="secret")
app.add_typer(vault_app, name="vault")
app.add_typer(memory_app, name="memory")
app.add_typer(skill_app, name="skill")
app.add_typer(watch_app, name="watch")
app.add_typer(channel_app, name="channel")
app.add_typer(codehost_app, name="codehost")
app.add_typer(report_app, name="report")
app.add_typer(reach_app, name="reach")
app.add_typer(browser_app, name="browser")
app.add_typer(service_app, name="service")
app.command()(status)
app.command()(doctor)
app.command()(ask)
app.command()(chat)
app.command()(answer)
app.command()(inbox)
app.command("demo")(demo)
app.command("init")(init)
app.command("connect")(connect)
app.command("disconnect")(disconnect)
connection_app.command("test")(connection_test)
connection_app.command("status")(connection_status)
app.command()(login)
app.command()(backup)
app.command()(restore)
app.command()(upgrade)
app.command()(logout)
app.command()(logs)
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")


def _version(show: bool) -> None:
    if show:
        console.print(f"steward {steward.__version__}", markup=False, highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """Steward: a self-hosted personal agent runtime."""


app.command()(up)
app.command()(worker)
app.command()(scheduler)


@app.command()
def mcp(
    token: str = typer.Option(
        ...,
        envvar="STEWARD_TOKEN",
        help="An API token: the MCP client acts as it ($STEWARD_TOKEN).",
    ),
    db: str | None = DbOption,
) -> None:
    """Serve Steward over MCP on stdin/stdout, for a desktop assistant or another agent (over
    HTTP, `steward up` serves it at /mcp)."""
    from steward.api.mcp import run_stdio
    from steward.logs import configure as configure_logging

    configure_logging("warning")  # to stderr: stdout is the wire

    async def main() -> None:
        async with service(db) as svc:
            await run_stdio(svc, token)

    run(main)


@db_app.command("upgrade")
def db_upgrade(db: str | None = DbOption) -> None:
    """Bring the schema to the current revision."""

    from steward.store import Store, migrate

    async def main() -> None:
        store = await Store.open(url_of(db))
        console.print(f"{store.url}: at revision {migrate.current_revision(store.backend.engine)}")
        await store.close()

    run(main)


@app.command()
def prune(
    older_than_days: float = typer.Option(30.0, help="Delete history older than this."),
    db: str | None = DbOption,
) -> None:
    """Delete finished tasks' history (steps, activations, effects), old events and firings."""

    async def main() -> None:
        async with service(db) as svc:
            with working("pruning history"):
                counts = await svc.prune(older_than=timedelta(days=older_than_days))
            console.print(", ".join(f"{n} {what}" for what, n in counts.items()) + " deleted")

    run(main)


@app.command()
def simulate(
    days: int = typer.Option(28, help="Days of goal time to replay."),
    goals: int = typer.Option(100, help="Goals, each with a daily cron trigger."),
    cron: str = typer.Option("0 9 * * *", help="Cron expression of each goal's trigger."),
    outage_day: int | None = typer.Option(None, help="Take the runtime down on this day..."),
    outage_days: int = typer.Option(2, help="...for this many days."),
    db: str | None = typer.Option(None, "--db", help="Database URL (default: a temp SQLite)."),
) -> None:
    """Replay weeks of scheduled goals on a simulated clock, in seconds."""
    from steward.domain import TaskSpec, TriggerKind
    from steward.domain.clock import SimulatedClock
    from steward.domain.trigger import MissedPolicy
    from steward.logs import configure as configure_logging
    from steward.runtime.builtin import builtin_harness
    from steward.runtime.simulate import Outage, run_simulation
    from steward.service import Service
    from steward.store import Store

    configure_logging("warning")

    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            url = db or f"sqlite:///{Path(tmp) / 'sim.db'}"
            store = await Store.open(url)
            start = datetime(2026, 1, 1, tzinfo=UTC)
            clock = SimulatedClock(start)
            svc = Service(store, clock)
            person = await svc.ensure_person("sim")
            for i in range(goals):
                goal = await svc.create_goal(person_id=person.id, title=f"goal {i}")
                await svc.add_trigger(
                    person_id=person.id,
                    goal_id=goal.id,
                    name="daily",
                    kind=TriggerKind.CRON,
                    spec=cron,
                    task=TaskSpec(kind="noop"),
                    missed_policy=MissedPolicy.RUN_ONCE,
                )
            outages = []
            if outage_day is not None:
                down = start + timedelta(days=outage_day)
                outages.append(Outage(start=down, end=down + timedelta(days=outage_days)))
            report = await run_simulation(
                store,
                builtin_harness(),
                clock,
                until=start + timedelta(days=days),
                outages=outages,
            )
            counts = await svc.count_tasks()
            await store.close()
        console.print(
            f"replayed {days} days of {goals} goals in {report.wall_seconds:.1f}s wall time: "
            f"{report.activations} activations, tasks {counts}, {report.jumps} clock jumps"
        )

    run(main)


def _main() -> None:  # pragma: no cover - console entry
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("interrupted")


if __name__ == "__main__":  # pragma: no cover
    _main()
