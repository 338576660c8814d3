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

from steward.domain.clock import Clock
from steward.errors import DatabaseUnavailable

log = structlog.get_logger(__name__)

T = TypeVar("T")


class DatabaseOutage:
    """The database being unreachable, as one process sees it."""

    def __init__(
        self, clock: Clock, *, base_seconds: float = 0.5, cap_seconds: float = 10.0
    ) -> None:
        self.clock = clock
        self.base_seconds = base_seconds
        """The first wait."""
        self.cap_seconds = cap_seconds
        """The longest wait: how late at most a loop notices that the database is back."""
        self.since: datetime | None = None
        """When the current outage was first seen (None: the database answers)."""
        self.count = 0
        """Outages seen since the process started."""

    def noticed(self, error: DatabaseUnavailable) -> None:
        """A try failed; the first failure of an outage is logged."""
        if self.since is None:
            self.since = self.clock.now()
            self.count += 1
            log.warning(
                f"database unavailable, retrying in {self.base_seconds:.1f}s: {error.reason}"
            )

    def ok(self) -> None:
        """The database answered."""
        if self.since is None:
            return
        took = (self.clock.now() - self.since).total_seconds()
        self.since = None
        log.warning(f"database available again after {took:.1f}s")

    def backoff(self) -> float:
        """How long to wait before the next try: about as long as the outage has lasted
        (between the base and the cap, with jitter). Growing with the outage rather than with
        the number of failed tries keeps it the same for however many loops are retrying."""
        lasted = 0.0 if self.since is None else (self.clock.now() - self.since).total_seconds()
        ceiling = min(self.cap_seconds, max(self.base_seconds, lasted))
        return random.uniform(ceiling / 2, ceiling)

    async def wait(self, error: DatabaseUnavailable, stop: asyncio.Event | None = None) -> None:
        """Note a failed try and back off (less if ``stop`` is set meanwhile)."""
        self.noticed(error)
        delay = self.backoff()
        await self.clock.sleep_until(self.clock.now() + timedelta(seconds=delay), stop)

    async def unexpected(
        self, what: str, error: Exception, stop: asyncio.Event | None = None
    ) -> None:
        """A loop's pass failed with an error that is not an outage (a bug, a row it cannot
        read, a database error nobody classified): one line, a pause, and the loop goes on —
        a process does not exit on one failure."""
        delay = random.uniform(self.cap_seconds / 2, self.cap_seconds)
        log.error(
            f"{what} failed, retrying in {delay:.1f}s: {type(error).__name__}: "
            + " ".join(str(error).split())[:500]
        )
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
