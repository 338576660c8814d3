"""``steward``: run the runtime and manage goals, tasks and triggers from a terminal."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import signal
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import typer
from fastapi import FastAPI

from steward.api import create_app
from steward.api.server import serving
from steward.app import (
    UnconfiguredModel,
    build_harness,
    cannot_run,
    connection_watcher,
    database_limits,
    embedder_from,
    mail_channel_sender,
    matrix_channel_sender,
    matrix_listener,
    notify_dispatcher,
    process_identity,
    task_kinds,
    web_watch_runner,
)
from steward.cli.agent import answer, approval_app, ask, chat, inbox
from steward.cli.backup import backup, restore, upgrade
from steward.cli.browser import browser_app
from steward.cli.channels import channel_app
from steward.cli.codehost import codehost_app
from steward.cli.common import (
    DbOption,
    console,
    err_console,
    run,
    service,
    working,
)
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
from steward.cli.service_unit import service_app
from steward.cli.skills import skill_app
from steward.cli.status import status
from steward.cli.triggers import trigger_app
from steward.cli.vault import secret_app, vault_app
from steward.cli.watch import watch_app
from steward.config import Settings, private_data_dir
from steward.domain import Person, TaskSpec, TriggerKind
from steward.domain.clock import Clock, SimulatedClock
from steward.domain.tokens import CONTROL
from steward.domain.trigger import MissedPolicy
from steward.logs import configure as configure_logging
from steward.memory.jobs import schedule_consolidation
from steward.runtime.builtin import builtin_harness
from steward.runtime.outage import DatabaseOutage
from steward.runtime.runtime import Runtime, RuntimeConfig
from steward.runtime.simulate import Outage, run_simulation
from steward.service import Service
from steward.service.mailchannel import answer_by_mail
from steward.store import Store, migrate

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


async def _serve(
    url: str, config: RuntimeConfig, *, banner: bool, http: tuple[str, int] | None = None
) -> None:
    settings = Settings()
    private_data_dir(settings)
    configure_logging(to_file=settings)
    from steward.telemetry import configure_tracing  # loads OpenTelemetry: not for --help

    configure_tracing(settings.otel_exporter)
    clock = Clock()
    # a database still starting (or failing over) is waited for, not a reason to exit
    starting = DatabaseOutage(clock)
    store = await starting.retry(lambda: Store.open(url, limits=database_limits(settings)))
    try:
        # it reads the database (are there secrets for the vault key to open?): waited for too
        harness = await starting.retry(lambda: build_harness(settings, store, clock))
    except BaseException:
        await store.close()
        raise
    runtime = Runtime(
        store,
        harness,
        clock,
        dataclasses.replace(config, skip_kinds=cannot_run(harness)),
        identity=process_identity(settings, harness, http=http is not None),
    )
    # connected accounts are watched where events are routed
    watcher = (
        await starting.retry(
            lambda: connection_watcher(settings, store, clock, on_events=runtime.notify_scheduler)
        )
        if config.scheduler
        else None
    )
    # so are web pages: checked without a model, events only when something matters
    web_watches = (
        await starting.retry(
            lambda: web_watch_runner(settings, store, clock, on_events=runtime.notify_scheduler)
        )
        if config.scheduler
        else None
    )
    service = Service(
        store,
        clock,
        runtime,
        data_dir=settings.data_dir,
        embedder=embedder_from(settings),
        task_kinds=task_kinds(),
        no_model=isinstance(harness.model, UnconfiguredModel),
    )
    if watcher is not None:  # the person's own mail to the agent's mailbox goes to them
        watcher.env.person_mail = service
    person = await starting.retry(service.ensure_person)
    # nightly, once per person
    await starting.retry(lambda: schedule_consolidation(store, clock, person_id=person.id))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, runtime.stop)
    try:
        async with contextlib.AsyncExitStack() as stack:
            address = login = None
            if http is not None:  # the API and the dashboard, in this process and loop
                served = create_app(service, streams_per_person=settings.streams_per_person)
                address = await stack.enter_async_context(
                    serving(served, host=http[0], port=http[1])
                )
                login = await _login_link(service, served, person, address)
            # reports, digests, approvals and questions reach the person's channels from
            # here: Apprise and Web Push (the facade's vault), e-mail and Matrix (the connected
            # accounts); their links start with the dashboard's address
            dashboard = settings.resolved_dashboard_url(
                host=http[0] if http else None,
                port=int(address.rpartition(":")[2]) if address else None,
            )
            notify = (
                notify_dispatcher(
                    settings,
                    store,
                    clock,
                    also=[
                        *service.channel_senders(dashboard_url=dashboard).values(),
                        await starting.retry(
                            lambda: mail_channel_sender(
                                settings, store, clock, dashboard_url=dashboard
                            )
                        ),
                        await starting.retry(
                            lambda: matrix_channel_sender(
                                settings, store, clock, dashboard_url=dashboard
                            )
                        ),
                    ],
                )
                if config.scheduler
                else None
            )
            if banner:
                _banner(settings, store, harness.model.name, person, config, address, login)
            async with asyncio.TaskGroup() as roles:
                roles.create_task(runtime.run())
                if watcher is not None:
                    roles.create_task(watcher.run(runtime.stop_event))
                if web_watches is not None:
                    roles.create_task(web_watches.run(runtime.stop_event))
                if config.scheduler:  # the agent's answers to conversations held by mail
                    roles.create_task(answer_by_mail(service, runtime.stop_event))
                if notify is not None:
                    roles.create_task(notify.run(runtime.stop_event))
                if config.scheduler:  # the person's Matrix rooms
                    listener = await matrix_listener(settings, store, clock, people=service)
                    roles.create_task(listener.run(runtime.stop_event))
    finally:
        await store.close()
    if banner:
        console.print("stopped; all state is in the database")


async def _login_link(service: Service, app: FastAPI, person: Person, address: str) -> str | None:
    """On a first start (no control token yet), a one-time link that signs a browser in with
    a new control token; None once the person has one."""
    tokens = await service.list_tokens(person_id=person.id)
    if any(CONTROL in t.scopes and t.revoked_at is None for t in tokens):
        return None
    code: str = app.state.login_codes.issue(person.id)  # steward.web.logincodes
    return f"{address}/login?code={code}"


def _banner(
    settings: Settings,
    store: Store,
    model: str,
    person: Person,
    config: RuntimeConfig,
    address: str | None,
    login: str | None = None,
) -> None:
    roles = (
        ["scheduler", "account and page watches", "deliveries to your channels"]
        if config.scheduler
        else []
    ) + [f"{config.workers} worker(s)"]
    where = store.url
    if store.dialect == "sqlite":
        where = f"{store.backend.path} (SQLite, WAL)"  # type: ignore[attr-defined]
    say = functools.partial(console.print, soft_wrap=True)
    say(f"[bold]Steward[/bold] running ({', '.join(roles)}), pid {os.getpid()}")
    if login is not None:
        say(f"  open:    {login}  (a one-time login link, for 15 minutes)")
    elif address is not None:
        say(f"  open:    {address}/  (log in: steward token create browser --scope control)")
        say(f"  api:     {address}/api/v1  (docs at {address}/api/v1/docs)")
    say(f"  data:    {where}")
    say(f"  person:  {person.name} ({person.id})")
    if model == UnconfiguredModel.name:
        say("  model:   none set, so agent tasks cannot run: `steward init` sets one")
    else:
        say(f"  model:   {model} ({settings.model_provider})")
    say(f"  stop:    Ctrl-C, or kill {os.getpid()} (all state is kept in the database)")


def _url(db: str | None) -> str:
    settings = Settings()
    return db or settings.resolved_database_url()


@app.command()
def up(
    db: str | None = DbOption,
    workers: int = typer.Option(1, help="Worker loops in this process."),
    concurrency: int = typer.Option(8, help="Tasks each worker runs at once."),
    log_level: str = typer.Option("info", help="debug, info, warning or error."),
    host: str | None = typer.Option(None, help="Serve the API and dashboard here ($STEWARD_HOST)."),
    port: int | None = typer.Option(None, help="On this port ($STEWARD_PORT, default 8470)."),
    no_http: bool = typer.Option(False, "--no-http", help="Run without the API and dashboard."),
) -> None:
    """Run scheduler, workers, the API and the dashboard in one process (embedded SQLite by
    default)."""
    settings = Settings()
    http = None if no_http else (host or settings.host, settings.port if port is None else port)
    config = RuntimeConfig(workers=workers, concurrency=concurrency)
    run(lambda: _serve(_url(db), config, banner=True, http=http), log_level=log_level)


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

    configure_logging("warning")  # to stderr: stdout is the wire

    async def main() -> None:
        async with service(db) as svc:
            await run_stdio(svc, token)

    run(main)


@app.command()
def worker(
    db: str | None = DbOption,
    concurrency: int = typer.Option(8, help="Tasks run at once."),
    lease_seconds: float = typer.Option(30.0, help="Task lease length."),
    log_level: str = typer.Option("warning", help="debug, info, warning or error."),
) -> None:
    """Run a worker only (more can run on other hosts against PostgreSQL)."""
    config = RuntimeConfig(scheduler=False, concurrency=concurrency, lease_seconds=lease_seconds)
    run(lambda: _serve(_url(db), config, banner=False), log_level=log_level)


@app.command()
def scheduler(
    db: str | None = DbOption,
    log_level: str = typer.Option("warning", help="debug, info, warning or error."),
) -> None:
    """Run the scheduler role only (one is active across all hosts; others stand by)."""
    run(lambda: _serve(_url(db), RuntimeConfig(workers=0), banner=False), log_level=log_level)


@db_app.command("upgrade")
def db_upgrade(db: str | None = DbOption) -> None:
    """Bring the schema to the current revision."""

    async def main() -> None:
        store = await Store.open(_url(db))
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
