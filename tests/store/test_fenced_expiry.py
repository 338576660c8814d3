"""A lease on one task expires only that task's approvals (as it moves only its own effects)."""

from __future__ import annotations

import pytest

from steward.domain import Approval, ApprovalStatus, Notification, args_hash
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.errors import NotFound
from steward.store import Fence, Store
from steward.testing.store_conformance.helpers import claim, new_person, new_task


async def test_a_fenced_expiry_touches_only_its_own_tasks_approvals(
    store: Store, clock: SimulatedClock
) -> None:
    person = await new_person(store, clock)
    mine = await new_task(store, clock, person.id, title="mine")
    other = await new_task(store, clock, person.id, title="other")
    fences = {c.task.id: Fence.of(c) for c in await claim(store, clock, limit=2)}
    args = {"to": "dana@example.com"}
    approval_id = new_id("apr")
    await store.inbox.request_approval(
        fences[mine.id],
        Approval(
            id=approval_id,
            person_id=person.id,
            task_id=mine.id,
            goal_id=None,
            step_seq=1,
            tool="send_email",
            args=args,
            args_hash=args_hash("send_email", args),
            reason="external action",
            scopes=("email.send",),
            status=ApprovalStatus.PENDING,
            created_at=clock.now(),
        ),
        Notification(
            id=new_id("ntf"),
            person_id=person.id,
            kind="approval",
            title="may I send?",
            body="",
            task_id=mine.id,
            ref=approval_id,
            created_at=clock.now(),
        ),
        lease_now=clock.lease_now(),
    )

    with pytest.raises(NotFound):
        await store.inbox.expire_approval(
            approval_id, now=clock.now(), fence=fences[other.id], lease_now=clock.lease_now()
        )
    assert (await store.inbox.get_approval(approval_id)).status is ApprovalStatus.PENDING

    expired = await store.inbox.expire_approval(
        approval_id, now=clock.now(), fence=fences[mine.id], lease_now=clock.lease_now()
    )
    assert expired.status is ApprovalStatus.EXPIRED
