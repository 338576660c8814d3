"""What tasks leave for the person: approvals to decide, notifications, questions to answer,
and artifacts in the workspace."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update

from steward.domain import Approval, ApprovalStatus, Artifact, Notification, TaskStatus
from steward.errors import InvalidTransition, NotFound
from steward.store import rows
from steward.store.audit import append_in
from steward.store.backend import Backend
from steward.store.feed import append_feed
from steward.store.fencing import Fence, touch_fenced
from steward.store.mailchannel import spend_token_in
from steward.store.planning import plan_waiting_in
from steward.store.schema import approvals, artifacts, notifications, tasks
from steward.store.waking import wake_in


class InboxRepository:
    """What waits on the person: approvals, questions, notifications, artifacts."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    # --- approvals ----------------------------------------------------------------------

    async def request_approval(
        self,
        fence: Fence,
        approval: Approval,
        notification: Notification,
        *,
        lease_now: datetime | None = None,
    ) -> Approval:
        """Record an approval request and its notification (fenced). A replayed step that asks
        again gets the approval recorded the first time, whatever became of it."""

        def op(conn: Connection) -> Approval:
            touch_fenced(self.backend, conn, fence, lease_now)
            existing = conn.execute(select(approvals).where(approvals.c.id == approval.id)).first()
            if existing is not None:
                return rows.approval(existing)
            values = asdict(approval)
            values |= {
                "args": rows.dump(approval.args),
                "scopes": rows.dump(list(approval.scopes)),
                "roles": None if approval.roles is None else rows.dump(approval.roles),
                "status": approval.status.value,
                "created_at": rows.ts(approval.created_at),
                "expires_at": rows.ts_opt(approval.expires_at),
                "decided_at": rows.ts_opt(approval.decided_at),
                "preview": rows.preview_json(approval.preview),
            }
            conn.execute(approvals.insert().values(values))
            insert_notification(self.backend, conn, notification)
            append_feed(
                conn,
                self.backend,
                person_id=approval.person_id,
                at=approval.created_at,
                kind="approval.requested",
                summary=f"asks: {approval.headline} ({approval.reason})",
                goal_id=_goal_of(conn, approval.task_id),
                task_id=approval.task_id,
                ref=approval.id,
                data={"tool": approval.tool},
            )
            append_in(
                conn,
                self.backend,
                person_id=approval.person_id,
                kind="approval",
                actor=f"agent:{approval.task_id}",
                data={
                    "approval": approval.id,
                    "tool": approval.tool,
                    "args_hash": approval.args_hash,
                    "reason": approval.reason,
                    "status": "pending",
                },
                now=approval.created_at,
            )
            return _get_approval(conn, approval.id)

        return await self.backend.write(op)

    async def get_approval(self, approval_id: str) -> Approval:
        return await self.backend.read(lambda conn: _get_approval(conn, approval_id))

    async def list_approvals(
        self,
        *,
        person_id: str | None = None,
        task_id: str | None = None,
        status: ApprovalStatus | None = None,
        limit: int = 200,
    ) -> list[Approval]:
        query = select(approvals).order_by(approvals.c.created_at.desc()).limit(limit)
        if person_id is not None:
            query = query.where(approvals.c.person_id == person_id)
        if task_id is not None:
            query = query.where(approvals.c.task_id == task_id)
        if status is not None:
            query = query.where(approvals.c.status == status.value)
        return await self.backend.read(lambda conn: [rows.approval(r) for r in conn.execute(query)])

    async def decide_approval(
        self,
        approval_id: str,
        *,
        approve: bool,
        decided_by: str,
        now: datetime,
        note: str | None = None,
        spend_token: str | None = None,
    ) -> Approval:
        """Decide a pending approval and wake the task waiting on it. Deciding twice, or after
        it expired, is an :class:`InvalidTransition`. ``spend_token``: the reply token that
        decides it, spent in the same transaction (spent already: a :class:`Conflict`, and
        nothing is decided)."""

        def op(conn: Connection) -> Approval:
            if spend_token is not None:
                spend_token_in(conn, spend_token, now)
            return decide_in(
                conn,
                self.backend,
                approval_id,
                approve=approve,
                decided_by=decided_by,
                now=now,
                note=note,
            )

        return await self.backend.write(op)

    async def expire_approval(
        self,
        approval_id: str,
        *,
        now: datetime,
        fence: Fence | None = None,
        lease_now: datetime | None = None,
    ) -> Approval:
        """Mark a still-pending approval expired (its task woke at the deadline)."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> Approval:
            if fence is not None:
                touch_fenced(self.backend, conn, fence, lease_now)
            current = _get_approval(conn, approval_id)
            if fence is not None and current.task_id != fence.task_id:
                # a lease on one task moves only its own approvals
                raise NotFound("approval", approval_id)
            if current.status is ApprovalStatus.PENDING:
                _set_approval(conn, approval_id, ApprovalStatus.EXPIRED, now_f)
            return _get_approval(conn, approval_id)

        return await self.backend.write(op)

    # --- questions ----------------------------------------------------------------------

    async def answer_input(self, task_id: str, answer: str, *, now: datetime) -> None:
        """Give a task waiting for the person's input its answer, and wake it."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> None:
            row = conn.execute(
                select(tasks.c.status, tasks.c.wait).where(tasks.c.id == task_id)
            ).first()
            if row is None:
                raise NotFound("task", task_id)
            wait = rows.load(row.wait) or {}
            if row.status != TaskStatus.WAITING.value or wait.get("kind") != "input":
                raise InvalidTransition(f"task {task_id} is not waiting for input")
            wake_in(conn, task_id, {"reason": "input", "answer": answer}, now_f)

        await self.backend.write(op)

    # --- notifications ------------------------------------------------------------------

    async def notify(
        self,
        notification: Notification,
        *,
        fence: Fence | None = None,
        lease_now: datetime | None = None,
    ) -> Notification:
        """Raise a notification (once per id: a replayed step does not notify twice)."""

        def op(conn: Connection) -> Notification:
            if fence is not None:
                touch_fenced(self.backend, conn, fence, lease_now)
            insert_notification(self.backend, conn, notification)
            row = conn.execute(
                select(notifications).where(notifications.c.id == notification.id)
            ).one()
            return rows.notification(row)

        return await self.backend.write(op)

    async def list_notifications(
        self, *, person_id: str, unread: bool = False, limit: int = 200
    ) -> list[Notification]:
        query = (
            select(notifications)
            .where(notifications.c.person_id == person_id)
            .order_by(notifications.c.created_at.desc())
            .limit(limit)
        )
        if unread:
            query = query.where(notifications.c.read_at.is_(None))
        return await self.backend.read(
            lambda conn: [rows.notification(r) for r in conn.execute(query)]
        )

    async def mark_read(
        self, notification_id: str, *, now: datetime, person_id: str | None = None
    ) -> None:
        """Mark a notification read (idempotent); with ``person_id``, only that person's."""
        mine = [notifications.c.id == notification_id]
        if person_id is not None:
            mine.append(notifications.c.person_id == person_id)

        def op(conn: Connection) -> None:
            res = conn.execute(
                update(notifications)
                .where(*mine, notifications.c.read_at.is_(None))
                .values(read_at=rows.ts(now))
                .returning(notifications.c.id)
            )
            missing = res.first() is None and (
                conn.execute(select(notifications.c.id).where(*mine)).first() is None
            )
            if missing:
                raise NotFound("notification", notification_id)

        await self.backend.write(op)

    # --- artifacts ----------------------------------------------------------------------

    async def add_artifact(
        self, artifact: Artifact, *, fence: Fence | None = None, lease_now: datetime | None = None
    ) -> Artifact:
        """Record an artifact (its file is already written); idempotent by id."""
        values: dict[str, Any] = asdict(artifact) | {"created_at": rows.ts(artifact.created_at)}

        def op(conn: Connection) -> Artifact:
            if fence is not None:
                touch_fenced(self.backend, conn, fence, lease_now)
            conn.execute(self.backend.insert_ignore(artifacts, values))
            return _get_artifact(conn, artifact.id)

        return await self.backend.write(op)

    async def get_artifact(self, artifact_id: str) -> Artifact:
        return await self.backend.read(lambda conn: _get_artifact(conn, artifact_id))

    async def list_artifacts(
        self, *, person_id: str | None = None, task_id: str | None = None, limit: int = 200
    ) -> list[Artifact]:
        query = select(artifacts).order_by(artifacts.c.created_at.desc()).limit(limit)
        if person_id is not None:
            query = query.where(artifacts.c.person_id == person_id)
        if task_id is not None:
            query = query.where(artifacts.c.task_id == task_id)
        return await self.backend.read(lambda conn: [rows.artifact(r) for r in conn.execute(query)])


def _get_approval(conn: Connection, approval_id: str) -> Approval:
    row = conn.execute(select(approvals).where(approvals.c.id == approval_id)).first()
    if row is None:
        raise NotFound("approval", approval_id)
    return rows.approval(row)


def _set_approval(conn: Connection, approval_id: str, status: ApprovalStatus, now_f: float) -> None:
    conn.execute(
        update(approvals)
        .where(approvals.c.id == approval_id)
        .values(status=status.value, decided_at=now_f)
    )


def _wake_waiter(conn: Connection, task_id: str, kind: str, ref: str, now_f: float) -> None:
    """Wake the task if it sleeps on exactly this thing (it may not be asleep yet, or was
    cancelled: then it reads the decision when it next runs)."""
    row = conn.execute(
        select(tasks.c.status, tasks.c.wait).where(tasks.c.id == task_id).with_for_update()
    ).first()
    if row is None or row.status != TaskStatus.WAITING.value:
        return
    wait = rows.load(row.wait) or {}
    if wait.get("kind") == kind and wait.get("ref") == ref:
        wake_in(conn, task_id, {"reason": kind, "ref": ref}, now_f)


def insert_notification(backend: Backend, conn: Connection, item: Notification) -> None:
    values: dict[str, Any] = asdict(item) | {
        "created_at": rows.ts(item.created_at),
        "read_at": rows.ts_opt(item.read_at),
    }
    # RETURNING, not rowcount: drivers may report -1 for an INSERT's rowcount
    inserted = conn.execute(
        backend.insert_ignore(notifications, values).returning(notifications.c.id)
    ).first()
    if inserted is not None:
        append_feed(
            conn,
            backend,
            person_id=item.person_id,
            at=item.created_at,
            kind="notification",
            summary=item.title,
            goal_id=item.goal_id,
            task_id=item.task_id,
            ref=item.id,
            data={"kind": item.kind},
        )
        if item.kind in ("approval", "question"):
            plan_waiting_in(conn, backend, item)


def _goal_of(conn: Connection, task_id: str) -> str | None:
    return conn.execute(select(tasks.c.goal_id).where(tasks.c.id == task_id)).scalar_one_or_none()


def _get_artifact(conn: Connection, artifact_id: str) -> Artifact:
    row = conn.execute(select(artifacts).where(artifacts.c.id == artifact_id)).first()
    if row is None:
        raise NotFound("artifact", artifact_id)
    return rows.artifact(row)


def decide_in(
    conn: Connection,
    backend: Backend,
    approval_id: str,
    *,
    approve: bool,
    decided_by: str,
    now: datetime,
    note: str | None,
) -> Approval:
    """:meth:`InboxRepository.decide_approval` in the caller's transaction."""
    now_f = rows.ts(now)
    status = ApprovalStatus.APPROVED if approve else ApprovalStatus.DENIED

    current = _get_approval(conn, approval_id)
    if current.status is not ApprovalStatus.PENDING:
        raise InvalidTransition(f"approval {approval_id} is already {current.status}")
    if current.expires_at is not None and rows.ts(current.expires_at) <= now_f:
        raise InvalidTransition(f"approval {approval_id} expired; the task was told")
    conn.execute(
        update(approvals)
        .where(approvals.c.id == approval_id)
        .values(status=status.value, decided_by=decided_by, note=note, decided_at=now_f)
    )
    _wake_waiter(conn, current.task_id, "approval", approval_id, now_f)
    append_feed(
        conn,
        backend,
        person_id=current.person_id,
        at=now,
        kind="approval.decided",
        summary=f"{status.value}: {current.tool} (by {decided_by})",
        goal_id=_goal_of(conn, current.task_id),
        task_id=current.task_id,
        ref=approval_id,
        data={"status": status.value, "decided_by": decided_by},
    )
    append_in(
        conn,
        backend,
        person_id=current.person_id,
        kind="approval",
        actor=decided_by,
        data={"approval": approval_id, "status": status.value, "note": note},
        now=now,
    )
    return _get_approval(conn, approval_id)
