"""The long-running commands: ``steward up``, ``steward worker`` and ``steward scheduler``.

Each says what it started and how to stop it, and says "stopped" when it ends. Their heavy
imports (the API server, the harness, the connectors) happen inside :func:`_serve`, so that
``steward --help`` and the short commands do not pay for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import signal
from typing import TYPE_CHECKING

import typer

from steward.cli.common import DbOption, console, run, url_of

if TYPE_CHECKING:
    from fastapi import FastAPI

    from steward.config import Settings
    from steward.domain import Person
    from steward.runtime.runtime import RuntimeConfig
    from steward.service import Service
    from steward.store import Store

UP = "up"


async def _serve(
    url: str, config: RuntimeConfig, *, role: str, http: tuple[str, int] | None = None
) -> None:
    """Run ``config``'s roles on ``url`` until SIGINT or SIGTERM; ``role`` names the command
    in what is printed (``up`` prints the whole banner, the others one line)."""
    from steward.api import create_app
    from steward.api.server import serving
    from steward.app import (
        UnconfiguredModel,
        build_harness,
        cannot_run,
        connection_watcher,
        mail_channel_sender,
        matrix_channel_sender,
        matrix_listener,
        model_from,
        notify_dispatcher,
        process_identity,
        task_kinds,
        web_watch_runner,
    )
    from steward.config import Settings, private_data_dir
    from steward.domain.clock import Clock
    from steward.logs import configure as configure_logging
    from steward.memory.embedding import embedder_from
    from steward.memory.jobs import schedule_consolidation
    from steward.memory.rerank import reranker_from
    from steward.runtime.outage import DatabaseOutage
    from steward.runtime.runtime import Runtime
    from steward.service import Service
    from steward.service.mailchannel import answer_by_mail
    from steward.store import DatabaseLimits, Store
    from steward.telemetry import configure_tracing

    settings = Settings()
    private_data_dir(settings)
    configure_logging(to_file=settings)
    configure_tracing(settings.otel_exporter)
    clock = Clock()
    # a database still starting (or failing over) is waited for, not a reason to exit
    starting = DatabaseOutage(clock)
    store = await starting.retry(lambda: Store.open(url, limits=DatabaseLimits.of(settings)))
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
        reranker=reranker_from(settings, lambda: model_from(settings)),
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
            if role == UP:
                _banner(settings, store, harness.model.name, person, config, address, login)
            else:
                _start_line(settings, store, harness.model.name, role)
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
    console.print(f"{'Steward' if role == UP else role} stopped; all state is in the database")


async def _login_link(service: Service, app: FastAPI, person: Person, address: str) -> str | None:
    """On a first start (no control token yet), a one-time link that signs a browser in with
    a new control token; None once the person has one."""
    from steward.domain.tokens import CONTROL

    tokens = await service.list_tokens(person_id=person.id)
    if any(CONTROL in t.scopes and t.revoked_at is None for t in tokens):
        return None
    code: str = app.state.login_codes.issue(person.id)  # steward.web.logincodes
    return f"{address}/login?code={code}"


def _where(store: Store) -> str:
    if store.dialect == "sqlite":
        return f"{store.backend.path} (SQLite, WAL)"  # type: ignore[attr-defined]
    return store.url


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
    say = functools.partial(console.print, soft_wrap=True)
    say(f"[bold]Steward[/bold] running ({', '.join(roles)}), pid {os.getpid()}")
    if login is not None:
        say(f"  open:    {login}  (a one-time login link, for 15 minutes)")
    elif address is not None:
        say(f"  open:    {address}/  (log in: steward token create browser --scope control)")
        say(f"  api:     {address}/api/v1  (docs at {address}/api/v1/docs)")
    say(f"  data:    {_where(store)}")
    say(f"  person:  {person.name} ({person.id})")
    from steward.app import UnconfiguredModel  # loaded already: _serve imported it

    if model == UnconfiguredModel.name:
        say("  model:   none set, so agent tasks cannot run: `steward init` sets one")
    else:
        say(f"  model:   {model} ({settings.model_provider})")
    say(f"  stop:    Ctrl-C, or kill {os.getpid()} (all state is kept in the database)")


def _start_line(settings: Settings, store: Store, model: str, role: str) -> None:
    """One line for a process that runs one role: what, where, and how to stop it."""
    from steward.app import UnconfiguredModel  # loaded already: _serve imported it

    pid = os.getpid()
    using = (
        "none set" if model == UnconfiguredModel.name else f"{model} ({settings.model_provider})"
    )
    console.print(
        f"{role} started, pid {pid}; data: {_where(store)}; model: {using}; "
        f"stop: Ctrl-C or kill {pid}",
        soft_wrap=True,
        markup=False,
    )


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
    from steward.config import Settings
    from steward.runtime.runtime import RuntimeConfig

    settings = Settings()
    http = None if no_http else (host or settings.host, settings.port if port is None else port)
    config = RuntimeConfig(workers=workers, concurrency=concurrency)
    run(lambda: _serve(url_of(db), config, role=UP, http=http), log_level=log_level)


def worker(
    db: str | None = DbOption,
    concurrency: int = typer.Option(8, help="Tasks run at once."),
    lease_seconds: float = typer.Option(30.0, help="Task lease length."),
    log_level: str = typer.Option("warning", help="debug, info, warning or error."),
) -> None:
    """Run a worker only (more can run on other hosts against PostgreSQL)."""
    from steward.runtime.runtime import RuntimeConfig

    config = RuntimeConfig(scheduler=False, concurrency=concurrency, lease_seconds=lease_seconds)
    run(lambda: _serve(url_of(db), config, role="worker"), log_level=log_level)


def scheduler(
    db: str | None = DbOption,
    log_level: str = typer.Option("warning", help="debug, info, warning or error."),
) -> None:
    """Run the scheduler role only (one is active across all hosts; others stand by)."""
    from steward.runtime.runtime import RuntimeConfig

    config = RuntimeConfig(workers=0)
    run(lambda: _serve(url_of(db), config, role="scheduler"), log_level=log_level)
