"""Replay goal time on a simulated clock: weeks of schedule in seconds.

Used by ``steward simulate``, the month-replay benchmark and the simulated-clock tests.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import datetime

from steward.domain.clock import SimulatedClock
from steward.runtime.harness import Harness
from steward.runtime.runtime import Runtime, RuntimeConfig
from steward.store import Store


@dataclass(kw_only=True, frozen=True)
class Outage:
    start: datetime
    """The runtime stops here..."""
    end: datetime
    """...and comes back here (the clock runs on meanwhile, as in real downtime)."""


@dataclass(kw_only=True, frozen=True)
class SimulationReport:
    start: datetime
    end: datetime
    wall_seconds: float
    """Real time the replay took."""
    jumps: int
    """Times the clock skipped ahead."""
    activations: int
    """Activations run."""


async def run_simulation(
    store: Store,
    harness: Harness,
    clock: SimulatedClock,
    *,
    until: datetime,
    outages: list[Outage] | None = None,
    config: RuntimeConfig | None = None,
) -> SimulationReport:
    """Run scheduler and worker on ``clock`` until ``until``, down during each outage."""
    start = clock.now()
    wall = time.perf_counter()
    activations = 0
    cfg = config or RuntimeConfig(poll_seconds=None, lease_seconds=300.0)
    for segment_end, resume_at in _segments(until, outages or []):
        runtime = Runtime(store, harness, clock, cfg)

        async def stop_at(rt: Runtime = runtime, when: datetime = segment_end) -> None:
            clock.register()
            try:
                await clock.sleep_until(when)
            finally:
                clock.unregister()
            rt.stop()

        stopper = asyncio.ensure_future(stop_at())
        await runtime.run()
        await stopper
        activations += sum(w.activations for w in runtime.workers)
        if resume_at is not None:
            clock.advance(resume_at - clock.now())
    return SimulationReport(
        start=start,
        end=clock.now(),
        wall_seconds=time.perf_counter() - wall,
        jumps=clock.jumps,
        activations=activations,
    )


def _segments(until: datetime, outages: list[Outage]) -> list[tuple[datetime, datetime | None]]:
    """(run until, then jump to) pairs: up to each outage start, then to its end."""
    pairs: list[tuple[datetime, datetime | None]] = [
        (o.start, o.end) for o in sorted(outages, key=lambda o: o.start)
    ]
    pairs.append((until, None))
    return pairs
