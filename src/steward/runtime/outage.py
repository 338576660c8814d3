"""Riding through a database outage (a restart, a failover, a lock held too long).

A process does not exit when the database goes away: each loop (claim, heartbeat, outcome,
scheduler tick) backs off and tries again, and what a cut-off process may still write is decided
by its lease and the fence, as for any other pause. The process logs one line when it first sees
the outage and one when the database answers again, however many loops noticed.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import TypeVar

import structlog

from steward.errors import DatabaseUnavailable
from steward.runtime.clock import Clock

log = structlog.get_logger(__name__)

T = TypeVar("T")


class DatabaseOutage:
    """The database being unreachable, as one process sees it."""

    def __init__(self, clock: Clock, *, base_seconds: float = 0.5, cap_seconds: float = 15.0):
        self.clock = clock
        self.base_seconds = base_seconds
        self.cap_seconds = cap_seconds
        """Longest wait between tries: how late at most a process notices the database is back."""
        self.since: datetime | None = None
        """When the current outage was first seen (None: the database answers)."""
        self.failures = 0
        """Failed tries in the current outage."""
        self.count = 0
        """Outages seen since the process started."""

    def failed(self, error: DatabaseUnavailable) -> float:
        """Note a failed try; returns how long to wait before the next (backoff with jitter)."""
        ceiling = min(self.cap_seconds, self.base_seconds * 2**self.failures)
        delay = random.uniform(ceiling / 2, ceiling)
        if self.since is None:
            self.since = self.clock.now()
            self.count += 1
            log.warning(f"database unavailable, retrying in {delay:.1f}s: {error.reason}")
        self.failures += 1
        return delay

    def ok(self) -> None:
        """The database answered."""
        if self.since is None:
            return
        took = (self.clock.now() - self.since).total_seconds()
        self.since = None
        self.failures = 0
        log.warning(f"database available again after {took:.1f}s")

    async def wait(self, error: DatabaseUnavailable, stop: asyncio.Event | None = None) -> None:
        """Note a failed try and back off (less if ``stop`` is set meanwhile)."""
        delay = self.failed(error)
        await self.clock.sleep_until(self.clock.now() + timedelta(seconds=delay), stop)

    async def retry(self, op: Callable[[], Awaitable[T]]) -> T:
        """``await op()`` until the database answers it."""
        while True:
            try:
                value = await op()
            except DatabaseUnavailable as error:
                await self.wait(error)
                continue
            self.ok()
            return value
