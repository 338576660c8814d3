"""A runtime process: a scheduler and/or workers sharing one store and clock.

``steward up`` runs both roles in one process on SQLite; on PostgreSQL any number of processes on
any number of hosts can run either role (one scheduler is active at a time; the rest stand by).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from steward.domain.clock import Clock
from steward.runtime.harness import Harness
from steward.runtime.outage import DatabaseOutage
from steward.runtime.registry import Identity, Registration
from steward.runtime.scheduler import Scheduler
from steward.runtime.worker import Worker, default_worker_name
from steward.store import Store, notify


@dataclass(kw_only=True)
class RuntimeConfig:
    scheduler: bool = True
    """Run the scheduler role in this process."""
    workers: int = 1
    """Worker loops in this process (each claims up to ``concurrency`` tasks)."""
    concurrency: int = 8
    """Tasks one worker runs at once."""
    lease_seconds: float = 30.0
    """Task lease; renewed every third of it while a task runs."""
    poll_seconds: float | None = 1.0
    """Idle re-check period; None for a single-process simulation (wake-ups only)."""
    retry_base_seconds: float = 1.0
    """Base of the exponential retry backoff."""
    listen: bool = True
    """Hear at once of work other processes make (PostgreSQL LISTEN/NOTIFY); off, or on
    SQLite, such work is found by the idle poll of ``poll_seconds``."""
    skip_kinds: frozenset[str] = frozenset()
    """Task kinds its workers never claim (the harness cannot run them: no model), left for
    another process that can."""


class Runtime:
    def __init__(
        self,
        store: Store,
        harness: Harness,
        clock: Clock,
        config: RuntimeConfig | None = None,
        *,
        identity: Identity | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.config = config or RuntimeConfig()
        self.name = default_worker_name()
        """This process in the registry; its scheduler holds leases as it, its workers claim
        tasks as it with a loop number."""
        self.work_available = asyncio.Event()
        self.scheduler_wakeup = asyncio.Event()
        self.outage = DatabaseOutage(clock)
        """Database outages this process sees: every role logs through it, once per outage."""
        cfg = self.config
        self.scheduler = (
            Scheduler(
                store,
                clock,
                name=self.name,
                max_sleep_seconds=cfg.poll_seconds,
                on_work=self.work_available,
                wakeup=self.scheduler_wakeup,
                outage=self.outage,
            )
            if cfg.scheduler
            else None
        )
        self.workers = [
            Worker(
                store,
                harness,
                clock,
                name=f"{self.name}#{i}",
                concurrency=cfg.concurrency,
                lease_seconds=cfg.lease_seconds,
                poll_seconds=cfg.poll_seconds,
                retry_base_seconds=cfg.retry_base_seconds,
                wakeup=self.work_available,
                outage=self.outage,
                skip_kinds=cfg.skip_kinds,
            )
            for i in range(cfg.workers)
        ]
        roles = ("scheduler",) * cfg.scheduler + ("worker",) * bool(cfg.workers)
        self.registration = (
            None
            if identity is None
            else Registration(
                store,
                clock,
                name=self.name,
                identity=identity,
                roles=roles,
                lease_seconds=cfg.lease_seconds,
            )
        )
        """Its row in the registry of processes (None: unlisted, as in tests)."""
        self.stop_event = asyncio.Event()
        wakes: dict[str, Callable[[], None]] = {}
        if self.workers:
            wakes[notify.WORK] = self.notify_work
        if self.scheduler is not None:
            # an event routed or a wait ended elsewhere may make a trigger fire or a wait due
            wakes[notify.EVENTS] = self.notify_scheduler
        self.listener = store.listener(wakes) if wakes and cfg.listen else None
        """Other processes' wake-ups (PostgreSQL LISTEN/NOTIFY); None on SQLite, which polls."""

    def notify_work(self) -> None:
        """Something became runnable in this process: wake workers now."""
        self.work_available.set()

    def notify_scheduler(self) -> None:
        """An event or trigger arrived in this process: let the scheduler look now."""
        self.scheduler_wakeup.set()

    async def run(self) -> None:
        """Run until :meth:`stop`."""
        roles = [w.run(self.stop_event) for w in self.workers]
        if self.scheduler is not None:
            roles.append(self.scheduler.run(self.stop_event))
        listening = None
        if self.listener is not None:
            listening = asyncio.get_running_loop().create_task(self.listener.run())
        if self.registration is not None:
            roles.append(self.registration.run(self.stop_event))
        try:
            await asyncio.gather(*roles)
        finally:
            if listening is not None:
                listening.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listening
            if self.registration is not None:
                await self.registration.stopped()

    def stop(self) -> None:
        self.stop_event.set()
