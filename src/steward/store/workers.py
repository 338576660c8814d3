"""The registry of runtime processes: each registers, beats and marks itself stopped."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, RowMapping, Select, Table, delete, func, insert, select, update

from steward.domain import ApprovalStatus, EffectStatus
from steward.domain.goal import GoalStatus
from steward.domain.workers import WorkerProcess
from steward.store import rows
from steward.store.backend import Backend
from steward.store.fencing import lease_clock
from steward.store.schema import approvals, effects, goals, leases, tasks, workers

KEEP_STOPPED = timedelta(days=7)
"""How long a stopped or gone process stays listed (the table holds one row per start)."""
SCHEDULER_LEASE = "scheduler"
"""The lease the active scheduler holds (:mod:`steward.runtime.scheduler` takes it)."""


@dataclass(kw_only=True, frozen=True)
class Waiting:
    active_goals: int
    """Goals still being worked on."""
    pending_approvals: int
    """Approvals waiting for a decision."""
    in_doubt_effects: int
    """Effects nobody knows happened."""


class WorkerRepository:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def register(self, process: WorkerProcess) -> None:
        """Add ``process``, and forget processes that ended (or stopped beating) long ago."""
        forget = rows.ts(process.started_at - KEEP_STOPPED)

        def op(conn: Connection) -> None:
            conn.execute(delete(workers).where(workers.c.heartbeat_at < forget))
            conn.execute(
                insert(workers).values(
                    id=process.id,
                    host=process.host,
                    pid=process.pid,
                    version=process.version,
                    fingerprint=process.fingerprint,
                    model=process.model,
                    roles=rows.dump(list(process.roles)),
                    cannot_run=rows.dump(list(process.cannot_run)),
                    lease_seconds=process.lease_seconds,
                    started_at=rows.ts(process.started_at),
                    heartbeat_at=rows.ts(process.heartbeat_at),
                    stopped_at=rows.ts_opt(process.stopped_at),
                )
            )

        await self.backend.write(op)

    async def beat(self, process_id: str, *, now: datetime) -> None:
        """Its heartbeat (a process marked gone that beats again is running again)."""
        query = update(workers).where(workers.c.id == process_id).values(heartbeat_at=rows.ts(now))
        await self.backend.write(lambda conn: conn.execute(query))

    async def stopped(self, process_id: str, *, now: datetime) -> None:
        query = (
            update(workers)
            .where(workers.c.id == process_id)
            .values(heartbeat_at=rows.ts(now), stopped_at=rows.ts(now))
        )
        await self.backend.write(lambda conn: conn.execute(query))

    async def leader(self, *, lease_now: datetime | None = None) -> str | None:
        """The process holding the scheduler's lease, if it is held."""
        query = select(leases.c.holder).where(
            leases.c.name == SCHEDULER_LEASE,
            leases.c.expires_at > lease_clock(self.backend, lease_now),
        )
        return await self.backend.read(lambda conn: conn.execute(query).scalar())

    async def waiting(self, *, person_id: str | None) -> Waiting:
        """Goals at work, approvals and in-doubt effects waiting: everyone's or a person's."""

        def count(table: Table, status: str) -> Select[Any]:
            query = select(func.count()).select_from(table).where(table.c.status == status)
            if person_id is None:
                return query
            if table is effects:  # an effect is its task's person's
                mine = select(tasks.c.id).where(tasks.c.person_id == person_id)
                return query.where(effects.c.task_id.in_(mine))
            return query.where(table.c.person_id == person_id)

        def op(conn: Connection) -> Waiting:
            return Waiting(
                active_goals=conn.execute(count(goals, GoalStatus.ACTIVE.value)).scalar_one(),
                pending_approvals=conn.execute(
                    count(approvals, ApprovalStatus.PENDING.value)
                ).scalar_one(),
                in_doubt_effects=conn.execute(
                    count(effects, EffectStatus.IN_DOUBT.value)
                ).scalar_one(),
            )

        return await self.backend.read(op)

    async def list_processes(self) -> list[WorkerProcess]:
        """Every registered process, the most recently started first."""
        query = select(workers).order_by(workers.c.started_at.desc())
        return await self.backend.read(
            lambda conn: [_process(r._mapping) for r in conn.execute(query)]
        )


def _process(m: RowMapping) -> WorkerProcess:
    return WorkerProcess(
        id=m["id"],
        host=m["host"],
        pid=m["pid"],
        version=m["version"],
        fingerprint=m["fingerprint"],
        model=m["model"],
        roles=tuple(rows.load(m["roles"])),
        cannot_run=tuple(rows.load(m["cannot_run"])),
        lease_seconds=m["lease_seconds"],
        started_at=rows.dt(m["started_at"]),
        heartbeat_at=rows.dt(m["heartbeat_at"]),
        stopped_at=rows.dt_opt(m["stopped_at"]),
    )
