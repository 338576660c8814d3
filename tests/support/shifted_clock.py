"""A wall clock a test can move forward: it runs at real speed from a chosen start, and
:meth:`ShiftedClock.advance` jumps it ahead (to the evening's digest, say) while servers,
browsers and the runtime keep running over real sockets. Sleepers look at it again every
``tick`` seconds, so a jump wakes what fell due."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime, timedelta

from steward.domain.clock import Clock


class ShiftedClock(Clock):
    def __init__(self, start: datetime, *, tick: float = 0.2) -> None:
        if start.tzinfo is None:
            raise ValueError("ShiftedClock needs an aware datetime")
        self._shift = start - super().now()
        self._tick = tick

    def now(self) -> datetime:
        return super().now() + self._shift

    def lease_now(self) -> datetime | None:
        return self.now()  # leases judged on this clock, not the database's

    def advance(self, delta: timedelta) -> None:
        """Jump ``delta`` ahead."""
        self._shift += delta

    async def sleep_until(self, deadline: datetime, wake: asyncio.Event | None = None) -> None:
        while (left := (deadline - self.now()).total_seconds()) > 0:
            if wake is None:
                await asyncio.sleep(min(left, self._tick))
                continue
            if wake.is_set():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout=min(left, self._tick))
