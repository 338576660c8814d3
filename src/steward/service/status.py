"""What runs where and what waits (``steward status``), for the owner or one token's person."""

from __future__ import annotations

from steward.domain.tokens import READ
from steward.domain.workers import ProcessStatus, SystemStatus
from steward.service.base import ServiceBase


class StatusService(ServiceBase):
    async def status(self) -> SystemStatus:
        """The processes registered on this database (everyone sees them: they are the
        machine's), and the queue, goals, approvals, wake-ups and in-doubt effects: everyone's,
        or a bound service's person's."""
        person_id = self._mine(READ)
        now = self.clock.now()
        leader = await self.store.workers.leader(lease_now=self.clock.lease_now())
        processes = tuple(
            ProcessStatus(process=p, state=p.state(now), leader=p.id == leader)
            for p in await self.store.workers.list_processes()
        )
        waiting = await self.store.workers.waiting(person_id=person_id)
        return SystemStatus(
            at=now,
            processes=processes,
            tasks=await self.store.tasks.count_tasks(person_id=person_id),
            active_goals=waiting.active_goals,
            pending_approvals=waiting.pending_approvals,
            in_doubt_effects=waiting.in_doubt_effects,
            next_trigger_at=await self.store.schedule.next_trigger_time(person_id=person_id),
            next_wait_at=await self.store.tasks.next_wait_time(person_id=person_id),
        )
