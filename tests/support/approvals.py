"""Approvals recorded the way a running task records one: fenced by its lease, with the
notification that tells the person."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from steward.domain import Approval, ApprovalStatus, Notification, args_hash
from steward.domain.clock import Clock
from steward.domain.ids import new_id
from steward.store import Fence, Store


async def record_approval(
    store: Store,
    clock: Clock,
    fence: Fence,
    *,
    person_id: str,
    goal_id: str | None,
    args: dict[str, Any],
    title: str,
    reason: str = "external action",
    step_seq: int = 1,
    lease_now: datetime | None = None,
) -> Approval:
    """A pending ``send_email`` approval for the fenced task, and its notification."""
    approval_id = new_id("apr")
    return await store.inbox.request_approval(
        fence,
        Approval(
            id=approval_id,
            person_id=person_id,
            task_id=fence.task_id,
            goal_id=goal_id,
            step_seq=step_seq,
            tool="send_email",
            args=args,
            args_hash=args_hash("send_email", args),
            reason=reason,
            scopes=("email.send",),
            status=ApprovalStatus.PENDING,
            created_at=clock.now(),
        ),
        Notification(
            id=new_id("ntf"),
            person_id=person_id,
            kind="approval",
            title=title,
            body="",
            task_id=fence.task_id,
            ref=approval_id,
            created_at=clock.now(),
        ),
        lease_now=lease_now,
    )
