"""A lease on one task expires only that task's approvals (as it moves only its own effects)."""

from __future__ import annotations

import pytest

from steward.domain import ApprovalStatus
from steward.domain.clock import SimulatedClock
from steward.errors import NotFound
from steward.store import Fence, Store
from steward.testing.store_conformance.helpers import claim, new_person, new_task
from support.approvals import record_approval


async def test_a_fenced_expiry_touches_only_its_own_tasks_approvals(
    store: Store, clock: SimulatedClock
) -> None:
    person = await new_person(store, clock)
    mine = await new_task(store, clock, person.id, title="mine")
    other = await new_task(store, clock, person.id, title="other")
    fences = {c.task.id: Fence.of(c) for c in await claim(store, clock, limit=2)}
    approval = await record_approval(
        store,
        clock,
        fences[mine.id],
        person_id=person.id,
        goal_id=None,
        args={"to": "dana@example.com"},
        title="may I send?",
        lease_now=clock.lease_now(),
    )
    approval_id = approval.id

    with pytest.raises(NotFound):
        await store.inbox.expire_approval(
            approval_id, now=clock.now(), fence=fences[other.id], lease_now=clock.lease_now()
        )
    assert (await store.inbox.get_approval(approval_id)).status is ApprovalStatus.PENDING

    expired = await store.inbox.expire_approval(
        approval_id, now=clock.now(), fence=fences[mine.id], lease_now=clock.lease_now()
    )
    assert expired.status is ApprovalStatus.EXPIRED
