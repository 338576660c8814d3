"""A runtime process's row in the registry: registered at start, beating while it runs,
marked stopped when it exits (a process killed leaves a row that goes stale: shown as gone)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from dataclasses import dataclass

import structlog

import steward
from steward.domain.clock import Clock
from steward.domain.workers import WorkerProcess
from steward.errors import DatabaseUnavailable
from steward.store import Store

log = structlog.get_logger(__name__)


@dataclass(kw_only=True, frozen=True)
class Identity:
    """What a process says about itself beyond what the runtime knows."""

    fingerprint: str
    """Hash of the settings that decide what it can run (never secrets)."""
    model: str | None
    """The model it uses; None without one."""
    cannot_run: frozenset[str]
    """Task kinds its harness cannot run (it never claims them)."""
    http: bool = False
    """It serves the API and dashboard too."""
    cli: bool = False
    """It is a command's own runtime (``steward ask``), stopping when the command ends."""


class Registration:
    """Registers ``name`` and beats every ``interval`` until stopped."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        name: str,
        identity: Identity,
        roles: tuple[str, ...],
        lease_seconds: float,
    ) -> None:
        self.store = store
        self.clock = clock
        now = clock.now()
        self.process = WorkerProcess(
            id=name,
            host=socket.gethostname(),
            pid=os.getpid(),
            version=steward.__version__,
            fingerprint=identity.fingerprint,
            model=identity.model,
            roles=roles + ("http",) * identity.http + ("cli",) * identity.cli,
            cannot_run=tuple(sorted(identity.cannot_run)),
            lease_seconds=lease_seconds,
            started_at=now,
            heartbeat_at=now,
        )

        self.registered = False

    async def run(self, stop: asyncio.Event) -> None:
        """Register (retrying while the database is away) and beat until ``stop``."""
        interval = self.process.lease_seconds / 3
        while not stop.is_set():
            try:
                if self.registered:
                    await self.store.workers.beat(self.process.id, now=self.clock.now())
                else:
                    await self.store.workers.register(self.process)
                    self.registered = True
            except DatabaseUnavailable:
                pass  # the worker loops log the outage; the row catches up when it is back
            except Exception:
                log.exception("worker registry write failed; will retry")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)

    async def stopped(self) -> None:
        """Mark the row stopped (the process exits gracefully); a database away now leaves
        it to go stale, shown as gone."""
        if self.registered:
            with contextlib.suppress(Exception):
                await self.store.workers.stopped(self.process.id, now=self.clock.now())
