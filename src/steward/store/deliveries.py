"""Deliveries: claimed in batches under a lease, marked ``sent`` durably just before the
channel is called, then ``delivered``, retried or ``failed``.

A delivery found ``sent`` whose lease has lapsed belonged to a dispatcher that died while the
channel was called: it may have reached the person, so it becomes ``in_doubt`` and is never
sent again. A delivery claimed but not yet ``sent`` when its dispatcher died is still
``planned``: the next claim sends it (the channel was never called).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, func, or_, select, update

from steward.domain import ApprovalStatus, Notification
from steward.domain.channel import Channel
from steward.domain.delivery import Delivery, DeliveryStatus
from steward.domain.report import ReportState
from steward.store import rows
from steward.store.backend import Backend
from steward.store.channels import load_channel
from steward.store.fencing import lease_clock
from steward.store.inbox import insert_notification
from steward.store.schema import approvals, channels, deliveries, reports, tasks
from steward.store.waking import TERMINAL

MAX_ERROR = 500
"""Characters of a failure kept."""
_QUESTION = re.compile(r"q\.([^.]+)\.(\d+)")
"""A question's ref: its task and step."""


@dataclass(kw_only=True, frozen=True)
class Claimed:
    """A delivery claimed to be sent, with its channel."""

    delivery: Delivery
    """What to send."""
    channel: Channel
    """Through which channel."""


def _still_asked(conn: Connection, kind: str, ref: str) -> bool:
    """Whether an approval or a question still waits for the person: an approval not
    decided nor expired; a question (``q.<task>.<step>``) whose task has not ended and has
    not been answered. A question is asked while its task still runs, before the task records
    the step that waits for the answer: the task is then still before that step. Once it
    sleeps on the question its wait names it; answered (on the dashboard, by mail, in a
    room), the wait is gone and the task is past that step. Anything else is always still to
    be sent."""
    if kind == "approval":
        status = conn.execute(
            select(approvals.c.status).where(approvals.c.id == ref)
        ).scalar_one_or_none()
        return status is None or status == ApprovalStatus.PENDING.value
    if kind == "question":
        asked = _QUESTION.fullmatch(ref)
        if asked is None:
            return True
        task = conn.execute(
            select(tasks.c.status, tasks.c.step_seq, tasks.c.wait).where(
                tasks.c.id == asked.group(1)
            )
        ).first()
        if task is None or task.status in TERMINAL:
            return False
        if task.step_seq < int(asked.group(2)):
            return True  # not asleep on it yet
        return bool((rows.load(task.wait) or {}).get("ref") == ref)
    return True


class DeliveryRepository:
    """Deliveries of reports, digests, approvals and questions to channels."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def claim_due(
        self,
        *,
        holder: str,
        now: datetime,
        limit: int,
        lease_seconds: float,
        lease_now: datetime | None = None,
    ) -> list[Claimed]:
        """Mark lapsed ``sent`` deliveries in doubt, then take up to ``limit`` planned ones due
        by ``now`` on enabled channels and not leased to another dispatcher, earliest first,
        leased to ``holder``; each claim counts as an attempt."""
        lease_sql = lease_clock(self.backend, lease_now)
        now_f = rows.ts(now)
        free = or_(
            deliveries.c.lease_expires_at.is_(None), deliveries.c.lease_expires_at < lease_sql
        )
        due = and_(
            deliveries.c.status == DeliveryStatus.PLANNED.value,
            deliveries.c.next_attempt_at <= now_f,
            free,
        )

        def op(conn: Connection) -> list[Claimed]:
            conn.execute(
                update(deliveries)
                .where(
                    deliveries.c.status == DeliveryStatus.SENT.value,
                    deliveries.c.lease_expires_at < lease_sql,
                )
                .values(
                    status=DeliveryStatus.IN_DOUBT.value,
                    error="the sender stopped while sending: it may have arrived",
                    updated_at=now_f,
                )
            )
            found_due = conn.execute(
                self.backend.lock_rows(
                    select(deliveries.c.id, deliveries.c.kind, deliveries.c.ref)
                    .join(channels, channels.c.id == deliveries.c.channel_id)
                    .where(due, channels.c.enabled.is_(True))
                    .order_by(deliveries.c.next_attempt_at, deliveries.c.id)
                    .limit(limit)
                )
            ).all()
            stale = [r.id for r in found_due if not _still_asked(conn, r.kind, r.ref)]
            if stale:
                conn.execute(
                    update(deliveries)
                    .where(deliveries.c.id.in_(stale))
                    .values(
                        status=DeliveryStatus.WITHDRAWN.value,
                        error="answered before it went out",
                        updated_at=now_f,
                    )
                )
            ids = [r.id for r in found_due if r.id not in stale]
            if not ids:
                return []
            claimed = conn.execute(
                update(deliveries)
                .where(deliveries.c.id.in_(ids), due)
                .values(
                    lease_holder=holder,
                    lease_expires_at=lease_sql + lease_seconds,
                    attempts=deliveries.c.attempts + 1,
                    updated_at=now_f,
                )
                .returning(*deliveries.c)
            ).all()
            found = sorted((rows.delivery(r) for r in claimed), key=lambda d: d.next_attempt_at)
            return [Claimed(delivery=d, channel=load_channel(conn, d.channel_id)) for d in found]

        return await self.backend.write(op)

    async def mark_sent(self, delivery_id: str, *, holder: str, now: datetime) -> bool:
        """Record, durably, that the channel is about to be called; False when the claim was
        lost (another dispatcher has it): then the caller must not send."""
        return await self._move(
            delivery_id, holder, DeliveryStatus.PLANNED, {"status": DeliveryStatus.SENT.value}, now
        )

    async def mark_delivered(
        self, delivery_id: str, *, holder: str, detail: str, now: datetime
    ) -> bool:
        """The channel took it (also when it had been judged in doubt meanwhile)."""

        def op(conn: Connection) -> bool:
            row = conn.execute(
                update(deliveries)
                .where(
                    deliveries.c.id == delivery_id,
                    deliveries.c.lease_holder == holder,
                    deliveries.c.status.in_(
                        [DeliveryStatus.SENT.value, DeliveryStatus.IN_DOUBT.value]
                    ),
                )
                .values(
                    status=DeliveryStatus.DELIVERED.value,
                    error=detail[:MAX_ERROR] or None,
                    lease_holder=None,
                    lease_expires_at=None,
                    updated_at=rows.ts(now),
                )
                .returning(deliveries.c.ref)
            ).first()
            if row is None:
                return False
            conn.execute(
                update(reports)
                .where(
                    reports.c.id == row.ref,
                    reports.c.state.in_([ReportState.PENDING.value, ReportState.HELD.value]),
                )
                .values(state=ReportState.DELIVERED.value)
            )
            return True

        return await self.backend.write(op)

    async def retry(
        self, delivery_id: str, *, holder: str, error: str, at: datetime, now: datetime
    ) -> bool:
        """The channel was unavailable: planned again for ``at``."""
        return await self._move(
            delivery_id,
            holder,
            DeliveryStatus.SENT,
            {
                "status": DeliveryStatus.PLANNED.value,
                "next_attempt_at": rows.ts(at),
                "error": error[:MAX_ERROR],
                "lease_holder": None,
                "lease_expires_at": None,
            },
            now,
        )

    async def fail(
        self, delivery_id: str, *, holder: str, error: str, notice: Notification, now: datetime
    ) -> bool:
        """The channel refused it or stayed unavailable: failed, and the person told on the
        dashboard by ``notice`` (once per delivery: its id derives from the delivery's)."""

        def op(conn: Connection) -> bool:
            changed = conn.execute(
                update(deliveries)
                .where(
                    deliveries.c.id == delivery_id,
                    deliveries.c.lease_holder == holder,
                    deliveries.c.status.in_(
                        [DeliveryStatus.PLANNED.value, DeliveryStatus.SENT.value]
                    ),
                )
                .values(
                    status=DeliveryStatus.FAILED.value,
                    error=error[:MAX_ERROR],
                    lease_holder=None,
                    lease_expires_at=None,
                    updated_at=rows.ts(now),
                )
                .returning(deliveries.c.id)
            ).first()
            if changed is None:
                return False
            insert_notification(self.backend, conn, notice)
            return True

        return await self.backend.write(op)

    async def mark_in_doubt(
        self, delivery_id: str, *, holder: str, error: str, now: datetime
    ) -> bool:
        """The sender failed in a way that does not say whether the message went: in doubt,
        never sent again."""
        return await self._move(
            delivery_id,
            holder,
            DeliveryStatus.SENT,
            {"status": DeliveryStatus.IN_DOUBT.value, "error": error[:MAX_ERROR]},
            now,
        )

    async def list_for(
        self, *, person_id: str | None = None, ref: str | None = None, limit: int = 500
    ) -> list[Delivery]:
        """Deliveries, oldest first, of one person and/or one report, digest or approval."""
        query = select(deliveries).order_by(deliveries.c.created_at, deliveries.c.id).limit(limit)
        if person_id is not None:
            query = query.where(deliveries.c.person_id == person_id)
        if ref is not None:
            query = query.where(deliveries.c.ref == ref)
        return await self.backend.read(lambda conn: [rows.delivery(r) for r in conn.execute(query)])

    async def next_due(self) -> datetime | None:
        """When the earliest planned delivery is due, or a lapsing ``sent`` one is to be
        judged in doubt; None without either."""
        planned = select(func.min(deliveries.c.next_attempt_at)).where(
            deliveries.c.status == DeliveryStatus.PLANNED.value
        )
        lapsing = select(func.min(deliveries.c.lease_expires_at)).where(
            deliveries.c.status == DeliveryStatus.SENT.value
        )

        def op(conn: Connection) -> datetime | None:
            times = [conn.execute(q).scalar() for q in (planned, lapsing)]
            return rows.dt_opt(min((t for t in times if t is not None), default=None))

        return await self.backend.read(op)

    async def _move(
        self,
        delivery_id: str,
        holder: str,
        status: DeliveryStatus,
        values: dict[str, Any],
        now: datetime,
    ) -> bool:
        def op(conn: Connection) -> bool:
            changed = conn.execute(
                update(deliveries)
                .where(
                    deliveries.c.id == delivery_id,
                    deliveries.c.lease_holder == holder,
                    deliveries.c.status == status.value,
                )
                .values(values | {"updated_at": rows.ts(now)})
                .returning(deliveries.c.id)
            ).first()
            return changed is not None

        return await self.backend.write(op)
