"""Running the demo: a fresh database, the fake office, the seeded person and goals, and the
runtime with the API, the dashboard and the delivery of reports to the person's channels in
one process, as ``steward up`` runs them — with the demo's scripted model in place of a real
one."""

from __future__ import annotations

import asyncio
import secrets
import shutil
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from steward.api import create_app
from steward.api.server import check_port_free, serving
from steward.app import build_harness, notify_dispatcher, task_kinds
from steward.config import Settings, default_data_dir
from steward.demo.mail import office_mail_tool
from steward.demo.office import FakeOffice
from steward.demo.script import REAL_MODEL_HINT, SECRET_NAME, DemoScript
from steward.demo.seed import HOST, PERSON, Seeded, seed
from steward.domain.clock import Clock
from steward.errors import UsageError
from steward.filemodes import private_dir
from steward.models.scripted import ScriptedModel
from steward.runtime.runtime import Runtime, RuntimeConfig
from steward.service import Service
from steward.store import Store

MARKER = ".steward-demo"
"""A file that marks a directory as the demo's own: only such a directory is wiped."""
DEFAULT_PORT = 8470
DEFAULT_EVERY = 20.0


def default_demo_dir() -> Path:
    """Next to the person's own data, never in it."""
    return default_data_dir() / "demo"


@dataclass(kw_only=True, frozen=True)
class DemoOptions:
    data_dir: Path
    """Wiped and reused on each run (only if it is empty or an earlier demo's)."""
    port: int = DEFAULT_PORT
    """Of the API and the dashboard, on loopback; 0 picks a free one."""
    every: float = DEFAULT_EVERY
    """Seconds between scheduled inbox checks."""
    notify: str | None = None
    """An Apprise address the person's reports also reach (a phone, a chat), from the start."""
    notify_private_network: bool = False
    """``notify`` is a service on this machine or the home network (the person confirms it)."""


@dataclass(kw_only=True, frozen=True)
class RunningDemo:
    url: str
    """Base URL of the API and the dashboard."""
    login: str
    """A one-time link that signs a browser in (as ``steward up`` prints on a first start)."""
    service: Service
    """The facade, acting for the demo's person and everyone."""
    data_dir: Path
    seeded: Seeded
    office: FakeOffice
    office_url: str
    runtime: asyncio.Task[None]
    """The runtime's run; it ends only when stopped (or when it failed)."""


def fresh_data_dir(path: Path) -> Path:
    """Empty ``path`` for a new run; refuse a directory that is not the demo's."""
    path = path.expanduser().resolve()
    if path.exists():
        if not path.is_dir() or (not (path / MARKER).exists() and any(path.iterdir())):
            raise UsageError(
                f"{path} is not an empty directory nor a Steward demo directory; give "
                "--data-dir a new or empty directory (the demo starts from scratch in it)"
            )
        shutil.rmtree(path)
    private_dir(path)
    (path / MARKER).write_text("made by `steward demo`; wiped by its next run\n")
    return path


@asynccontextmanager
async def running_demo(
    options: DemoOptions, *, clock: Clock | None = None
) -> AsyncIterator[RunningDemo]:
    """Set the demo up and run it until the block ends; ``clock`` (wall time by default) is
    every time the demo reads, the office's mail arrivals included, so a test can move it to
    the evening's digest."""
    if options.every <= 0:
        raise UsageError("the inbox check's period must be more than 0 seconds")
    if options.port:
        check_port_free(HOST, options.port)
    data_dir = fresh_data_dir(options.data_dir)
    # built, not read: the person's environment and config file (their database, model, MCP
    # servers) must not reach the demo. Compaction summaries are deterministic: the script
    # only knows how to do the demo's tasks, not how to summarise.
    settings = Settings.model_construct(data_dir=data_dir, model_summaries=False)
    store = await Store.open(settings.resolved_database_url())
    try:
        clock = clock or Clock()
        office = FakeOffice(secret=secrets.token_urlsafe(24), every=options.every, clock=clock)
        async with AsyncExitStack() as stack:
            office_url = await stack.enter_async_context(
                serving(office.app(), host=HOST, log_level="critical")
            )
            model = ScriptedModel(DemoScript(office_url), name="demo-script")
            harness = await build_harness(
                settings,
                store,
                clock,
                model=model,
                more_tools=lambda broker: [office_mail_tool(broker, office_url, SECRET_NAME)],
            )
            runtime = Runtime(store, harness, clock, RuntimeConfig())
            service = Service(store, clock, runtime, data_dir=data_dir, task_kinds=task_kinds())
            if options.notify is not None:  # before the first report is made
                person = await service.ensure_person(PERSON)
                await service.add_apprise_channel(
                    "phone",
                    options.notify,
                    private_network=options.notify_private_network,
                    person_id=person.id,
                )
            seeded = await seed(
                service, office=office_url, secret=office.secret, every=options.every
            )
            app = create_app(service)
            # at a stop the open live streams are cancelled, which uvicorn logs as errors
            url = await stack.enter_async_context(
                serving(app, host=HOST, port=options.port, log_level="critical")
            )
            code: str = app.state.login_codes.issue(seeded.person.id)  # steward.web.logincodes
            # reports, digests and approvals reach the channels the person adds (Apprise, Web
            # Push), as under `steward up`, their links opening this dashboard
            notify = notify_dispatcher(
                settings,
                store,
                clock,
                also=list(service.channel_senders(dashboard_url=url).values()),
            )
            running = asyncio.create_task(runtime.run())
            delivering = asyncio.create_task(notify.run(runtime.stop_event))
            try:
                yield RunningDemo(
                    url=url,
                    login=f"{url}/login?code={code}",
                    service=service,
                    data_dir=data_dir,
                    seeded=seeded,
                    office=office,
                    office_url=office_url,
                    runtime=running,
                )
            finally:
                runtime.stop()
                await running
                await delivering
    finally:
        await store.close()


async def run_demo(
    options: DemoOptions,
    *,
    seconds: float | None = None,
    say: Callable[[str], object] = print,
    handle_signals: bool = False,
) -> None:
    """Run the demo, print how to look at it, and stop after ``seconds`` (None: on Ctrl-C or
    SIGTERM with ``handle_signals``)."""
    async with running_demo(options) as demo:
        for line in banner(demo, options):
            say(line)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        signals = (signal.SIGINT, signal.SIGTERM) if handle_signals else ()
        for sig in signals:
            loop.add_signal_handler(sig, stop.set)
        stopped = asyncio.create_task(stop.wait())
        try:
            # the runtime ends early only if it failed: then stop and let its error show
            await asyncio.wait(
                {stopped, demo.runtime}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stopped.cancel()
            for sig in signals:
                loop.remove_signal_handler(sig)
    say(f"demo stopped; its data stays in {demo.data_dir} until the next `steward demo`")


def banner(demo: RunningDemo, options: DemoOptions) -> list[str]:
    """What the person reads first: where to look, how to log in, what they will see."""
    token = demo.seeded.token
    return [
        "Steward demo: everything runs here, offline, with a scripted model (no API key).",
        f"  open:    {demo.login}  (a one-time login link, for 15 minutes)",
        f"  token:   {token}",
        f"           (or paste it into {demo.url}/login; for the API: Authorization: Bearer "
        "<token>)",
        f"  api:     {demo.url}/api/v1  (docs at {demo.url}/api/v1/docs)",
        f"  office:  {demo.office_url}  (a fake mail and calendar the agent calls)",
        f"  data:    {demo.data_dir}  (fresh each run; your own database is untouched)",
        "What you will see:",
        f"  - goal 'Keep an eye on the shared inbox': checked every {options.every:g} s; what "
        "needs you is reported at once, the rest in the evening digest (home page)",
        "  - goal 'Reply to Dana about Thursday': the mail to Dana waits for your approval (Inbox)",
        "  - add a channel (Channels) and the reports reach your phone too",
        "  - memories with where they came from: yours, the agent's, a mail's (a candidate), "
        "and a city you moved away from",
        "  - skill 'check-shared-inbox' with two versions; 'answer-meeting-requests', which "
        "the agent proposed after reading mail, waits for you",
        REAL_MODEL_HINT,
        "Stop: Ctrl-C",
    ]
