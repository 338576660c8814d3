"""Wake-ups across processes on PostgreSQL: LISTEN/NOTIFY.

A transaction that makes a task runnable (a new task, a wait ended, an approval decided, a
task resumed or recovered) or stores an event announces it on a channel
(:meth:`~steward.store.backend.Backend.announce`); the PostgreSQL backend sends the NOTIFY in
that same transaction, so the server delivers it only once the change is visible. Each runtime
process keeps one autocommit connection that LISTENs and wakes its worker or scheduler loops at
once. Polling stays as the fallback: a notification is a hint to look, never the only way work
is found (SQLite has no LISTEN; across its processes polling is the only way).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import structlog

log = structlog.get_logger(__name__)

WORK = "steward_work"
"""A task became runnable: workers look for work."""
EVENTS = "steward_events"
"""An event arrived: the scheduler routes it."""

RECONNECT_SECONDS = (0.5, 1.0, 2.0, 5.0)
"""Waits before each reconnect attempt while the database is away (the last one repeats)."""


class Listener:
    """One LISTEN connection for a process, calling a callback per channel on each
    notification. It reconnects after the connection is lost (a database restart) and then
    calls every callback once, since notifications sent while it was away are gone."""

    def __init__(self, dsn: str, callbacks: Mapping[str, Callable[[], None]]) -> None:
        self.dsn = dsn
        self.callbacks = dict(callbacks)
        self.connected = asyncio.Event()
        """Set while the LISTEN connection is up (tests wait for it)."""
        self.backend_pid: int | None = None
        """The server process of the LISTEN connection, while connected."""

    async def run(self) -> None:
        """Listen until cancelled."""
        import psycopg  # only PostgreSQL runtimes listen: SQLite ones need not load the driver

        failures = 0
        while True:
            try:
                await self._listen()
            except (psycopg.Error, OSError) as error:
                self.connected.clear()
                self.backend_pid = None
                wait = RECONNECT_SECONDS[min(failures, len(RECONNECT_SECONDS) - 1)]
                if failures == 0:
                    log.info("listen connection lost; polling until it is back", error=str(error))
                failures += 1
                await asyncio.sleep(wait)
            else:
                failures = 0

    async def _listen(self) -> None:
        import psycopg

        async with await psycopg.AsyncConnection.connect(
            self.dsn, autocommit=True, connect_timeout=10
        ) as conn:
            for channel in self.callbacks:
                await conn.execute(f"LISTEN {channel}")
            self.backend_pid = conn.info.backend_pid
            self.connected.set()
            for callback in self.callbacks.values():
                callback()
            async for note in conn.notifies():
                wake = self.callbacks.get(note.channel)
                if wake is not None:
                    wake()
