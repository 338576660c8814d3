"""The scheduler: exactly one active across all hosts (a lease in the database).

Each tick it fires due triggers (applying missed-run policies and daily budgets; a heartbeat
checks the store first and starts a task only when it finds something), routes inbox events to
waiting tasks and event triggers, wakes tasks whose timed wait is over, re-queues tasks whose
worker lost its lease, and expires goals past their deadline. Then it sleeps until the next known
due time. While the database is unavailable it backs off and ticks again (a tick is safe to
repeat).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from datetime import datetime, timedelta

import structlog

from steward.domain import Trigger
from steward.domain.clock import Clock
from steward.errors import DatabaseUnavailable
from steward.runtime.outage import DatabaseOutage
from steward.runtime.schedule import plan_firings, resume_time
from steward.runtime.worker import _either, default_worker_name
from steward.store import Store
from steward.store.workers import SCHEDULER_LEASE

log = structlog.get_logger(__name__)

LEASE_NAME = SCHEDULER_LEASE


class Scheduler:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        name: str | None = None,
        lease_seconds: float = 15.0,
        max_sleep_seconds: float | None = 1.0,
        on_work: asyncio.Event | None = None,
        wakeup: asyncio.Event | None = None,
        outage: DatabaseOutage | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.name = name or default_worker_name()
        self.lease_seconds = lease_seconds
        self.max_sleep_seconds = max_sleep_seconds
        """Longest sleep between ticks (events and leases from other processes are only seen
        by looking). None: sleep until the next known due time (single-process simulation)."""
        self.on_work = on_work
        """Set whenever a tick made tasks runnable, to wake in-process workers."""
        self.wakeup = wakeup or asyncio.Event()
        """Set it to tick now (a new event or trigger arrived in this process)."""
        self.outage = outage or DatabaseOutage(clock)
        """Database outages as this process sees them (shared by its loops)."""
        self.is_leader = False
        self.fired = 0

    async def run(self, stop: asyncio.Event) -> None:
        self.clock.register()
        try:
            while not stop.is_set():
                self.wakeup.clear()
                try:
                    next_due = await self.tick()
                except DatabaseUnavailable as error:
                    await self.outage.wait(error, stop)
                    continue
                except Exception as error:  # never exit on one failure: log it and go on
                    await self.outage.unexpected("scheduler tick", error, stop)
                    continue
                self.outage.ok()
                now = self.clock.now()
                deadline = next_due or now + timedelta(days=3650)
                if self.max_sleep_seconds is not None:
                    deadline = min(deadline, now + timedelta(seconds=self.max_sleep_seconds))
                if not self.is_leader:
                    deadline = min(deadline, now + timedelta(seconds=self.lease_seconds / 3))
                wake = _either(self.wakeup, stop)
                try:
                    await self.clock.sleep_until(deadline, wake.event)
                finally:
                    wake.close()
        finally:
            self.clock.unregister()
            if self.is_leader:
                with contextlib.suppress(Exception):
                    await self.store.schedule.release_lease(LEASE_NAME, holder=self.name)

    async def tick(self) -> datetime | None:
        """One pass. Returns the next time something is due (None if nothing is scheduled)."""
        epoch = await self.store.schedule.acquire_lease(
            LEASE_NAME,
            holder=self.name,
            ttl_seconds=self.lease_seconds,
            lease_now=self.clock.lease_now(),
        )
        if epoch is None:
            if self.is_leader:
                log.warning("scheduler lease lost", holder=self.name)
            self.is_leader = False
            return None
        if not self.is_leader:
            log.info("scheduler lease acquired", holder=self.name, epoch=epoch)
        self.is_leader = True
        now = self.clock.now()
        runnable = await self._fire_triggers(now)
        runnable += await self.store.schedule.route_events(now=now)
        runnable += await self.store.tasks.wake_due_waits(now=now)
        runnable += len(
            await self.store.tasks.reap_expired_leases(now=now, lease_now=self.clock.lease_now())
        )
        expired = await self.store.goals.expire_goals(now=now)
        if expired:
            log.info("goals expired", goals=expired)
        if runnable and self.on_work is not None:
            self.on_work.set()
        times = [
            t
            for t in (
                await self.store.schedule.next_trigger_time(),
                await self.store.tasks.next_wait_time(),
                await self.store.goals.next_deadline(),
            )
            if t is not None
        ]
        return min(times) if times else None

    async def _fire_triggers(self, now: datetime) -> int:
        batch = []
        for due in await self.store.schedule.due_triggers(now=now):
            trigger = await self._resumed(due, now)
            if trigger is None:
                continue
            plan = plan_firings(trigger, now)
            missed = sum(1 for _, status in plan.firings if status == "missed")
            if missed:
                log.warning(
                    "trigger missed runs",
                    trigger=trigger.id,
                    missed=missed,
                    policy=trigger.missed_policy.value,
                )
            batch.append((trigger, plan.firings, plan.next_fire_at))
        if not batch:
            return 0
        created = len(await self.store.schedule.apply_many_firings(batch, now=now))
        self.fired += created
        return created

    async def _resumed(self, trigger: Trigger, now: datetime) -> Trigger | None:
        """A trigger due now, back on its schedule if this is the end of a budget pause
        (the pause moved its next firing to the resume time, which is not on its schedule).
        None when it is not due any more."""
        if trigger.paused_until is None or trigger.paused_until > now:
            return trigger
        moved = replace(trigger, paused_until=None, next_fire_at=resume_time(trigger, now))
        if not await self.store.schedule.resume_trigger(trigger, next_fire_at=moved.next_fire_at):
            return None
        log.info("trigger resumed after its daily budget", trigger=trigger.id)
        due = moved.next_fire_at is not None and moved.next_fire_at <= now
        return moved if due else None
