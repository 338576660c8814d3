"""Time. Every time read in the runtime goes through a :class:`Clock`.

:class:`SystemClock` is wall time (and lets the database decide lease expiry).
:class:`SimulatedClock` is a public test double: it stands still while anything is working and
jumps straight to the next wake-up once every registered loop is asleep, so weeks of schedule
replay in seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from datetime import UTC, datetime, timedelta


class Clock:
    """Wall time."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def lease_now(self) -> datetime | None:
        """The time to judge leases by, or None to let the database's own clock decide (so
        workers on hosts with skewed clocks agree)."""
        return None

    def register(self) -> None:
        """Announce a loop that sleeps on this clock (only the simulated clock cares)."""

    def unregister(self) -> None:
        """Undo :meth:`register` when that loop ends."""

    async def sleep_until(self, deadline: datetime, wake: asyncio.Event | None = None) -> None:
        """Sleep until ``deadline`` or until ``wake`` is set, whichever comes first."""
        delay = (deadline - self.now()).total_seconds()
        if wake is None:
            await asyncio.sleep(max(0.0, delay))
            return
        if wake.is_set() or delay <= 0:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), timeout=delay)


SystemClock = Clock


class SimulatedClock(Clock):
    """Virtual time that advances only when every registered participant is asleep."""

    def __init__(self, start: datetime, *, settle_rounds: int = 20) -> None:
        if start.tzinfo is None:
            raise ValueError("SimulatedClock needs an aware datetime")
        self._now = start
        self._participants = 0
        self._sleepers: list[tuple[datetime, int, asyncio.Future[None], asyncio.Event | None]] = []
        self._counter = itertools.count()
        self._settle_rounds = settle_rounds
        self._driver: asyncio.Task[None] | None = None
        self.jumps = 0
        """How many times time jumped forward (a measure of how much was skipped)."""

    def now(self) -> datetime:
        return self._now

    def lease_now(self) -> datetime | None:
        return self._now

    def advance(self, delta: timedelta) -> None:
        """Move time forward by hand (tests); wakes sleepers that are now due."""
        self._now += delta
        self._wake_due()

    def register(self) -> None:
        self._participants += 1

    def unregister(self) -> None:
        self._participants -= 1
        self._maybe_drive()

    async def sleep_until(self, deadline: datetime, wake: asyncio.Event | None = None) -> None:
        if deadline <= self._now or (wake is not None and wake.is_set()):
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (deadline, next(self._counter), future, wake)
        heapq.heappush(self._sleepers, entry)
        waiter = None
        if wake is not None:
            waiter = asyncio.ensure_future(wake.wait())

            def _woken(_: object) -> None:
                if not future.done():
                    future.set_result(None)

            waiter.add_done_callback(_woken)
        self._maybe_drive()
        try:
            await future
        finally:
            if waiter is not None:
                waiter.cancel()
            if not future.done():
                future.cancel()

    def _asleep(self) -> int:
        return sum(
            1
            for _, _, fut, wake in self._sleepers
            if not fut.done() and not (wake is not None and wake.is_set())
        )

    def _maybe_drive(self) -> None:
        if self._driver is None or self._driver.done():
            self._driver = asyncio.get_running_loop().create_task(self._drive())

    async def _drive(self) -> None:
        """Jump to the earliest deadline once everybody has been asleep for a few loop turns
        (so work scheduled with call_soon, or woken by an event, gets to run first)."""
        while True:
            for _ in range(self._settle_rounds):
                await asyncio.sleep(0)
                if self._participants == 0 or self._asleep() < self._participants:
                    return
            self._sleepers = [s for s in self._sleepers if not s[2].done()]
            heapq.heapify(self._sleepers)
            if not self._sleepers:
                return
            deadline = self._sleepers[0][0]
            if deadline > self._now:
                self._now = deadline
                self.jumps += 1
            self._wake_due()

    def _wake_due(self) -> None:
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future, _ = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)
