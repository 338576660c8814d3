"""Fenced writes: the (task, epoch) a worker claimed, and the SQL every repository uses to
check it.

Every write made on behalf of a running task is *fenced*: it only applies while the task is
``running`` at the claiming epoch with an unexpired lease (by database time). A worker that lost
its lease — paused, partitioned, a zombie — gets :class:`~steward.errors.LeaseLost` and changes
nothing. The fenced statement locks the task row, and the lease it relied on is checked once
more by database time as the last statement before COMMIT (:meth:`Backend.check_leases`), so a
transaction paused in between does not commit after its lease expired.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, Connection, and_, literal, update

from steward.domain import TaskStatus
from steward.domain.outcome import Claim
from steward.errors import LeaseLost
from steward.store import rows
from steward.store.backend import Backend, hold_lease
from steward.store.schema import tasks


class Fence:
    """The (task, epoch) a worker claimed; every fenced write names it."""

    __slots__ = ("activation_id", "epoch", "task_id")

    def __init__(self, task_id: str, epoch: int, activation_id: str) -> None:
        self.task_id = task_id
        self.epoch = epoch
        self.activation_id = activation_id

    @classmethod
    def of(cls, claim: Claim) -> Fence:
        return cls(claim.task.id, claim.task.epoch, claim.activation.id)


def lease_clock(backend: Backend, lease_now: datetime | None) -> ColumnElement[float]:
    """Database time unless a simulated clock supplies it."""
    return backend.db_now() if lease_now is None else literal(rows.ts(lease_now))


def fenced(backend: Backend, fence: Fence, lease_now: datetime | None) -> ColumnElement[bool]:
    """The condition under which a write for ``fence`` may apply."""
    return and_(
        tasks.c.id == fence.task_id,
        tasks.c.epoch == fence.epoch,
        tasks.c.status == TaskStatus.RUNNING.value,
        tasks.c.lease_expires_at >= lease_clock(backend, lease_now),
    )


def touch_fenced(
    backend: Backend, conn: Connection, fence: Fence, lease_now: datetime | None
) -> None:
    """Check the fence (and lock the task row) inside a transaction, or raise LeaseLost."""
    row = conn.execute(
        update(tasks)
        .where(fenced(backend, fence, lease_now))
        .values(epoch=tasks.c.epoch)
        .returning(tasks.c.lease_expires_at)
    ).first()
    if row is None:
        raise LeaseLost(fence.task_id, fence.epoch)
    hold(conn, fence, lease_now, row[0])


def hold(conn: Connection, fence: Fence, lease_now: datetime | None, expires: float) -> None:
    """Have the lease a fenced write relied on re-checked by database time at commit (a
    simulated clock judges leases by its own time, when each statement runs)."""
    if lease_now is None:
        hold_lease(conn, fence.task_id, fence.epoch, expires)
