"""Store conformance: approvals keep what their tool showed beside the sentence (a picture's
workspace path and hash, labelled lines) exactly, and a replayed step gets the approval it
recorded the first time, preview and all."""

from __future__ import annotations

from steward.domain import Approval, ApprovalPreview, ApprovalStatus, Notification, args_hash
from steward.domain.clock import SimulatedClock
from steward.store import Fence, Store
from steward.testing.store_conformance.helpers import claim, new_person, new_task

PREVIEW = ApprovalPreview(
    picture="browser/tsk_1/000004.png",
    picture_sha256="9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    facts=(("Site", "shop.example"), ("Card", "•••• 4242"), ("Note", "Ring twice, « please »")),
)


def _asked(
    fence: Fence,
    person_id: str,
    clock: SimulatedClock,
    step: int,
    preview: ApprovalPreview | None = None,
) -> Approval:
    args = {"ref": "e12", "expect_url": "http://shop.example/orders"}
    return Approval(
        id=f"apr.{fence.task_id}.{step}",
        person_id=person_id,
        task_id=fence.task_id,
        goal_id=None,
        step_seq=step,
        tool="browser_submit",
        args=args,
        args_hash=args_hash("browser_submit", args),
        reason="external action",
        status=ApprovalStatus.PENDING,
        created_at=clock.now(),
        summary="Send the order form on shop.example",
        preview=preview,
    )


def _notice(approval: Approval) -> Notification:
    return Notification(
        id=f"ntf.{approval.id}",
        person_id=approval.person_id,
        kind="approval",
        title=f"Approve? {approval.summary}",
        body="",
        task_id=approval.task_id,
        ref=approval.id,
        created_at=approval.created_at,
    )


async def test_an_approvals_preview_round_trips(store: Store, clock: SimulatedClock) -> None:
    ada = (await new_person(store, clock)).id
    await new_task(store, clock, ada)
    [claimed] = await claim(store, clock)
    fence = Fence.of(claimed)
    shown = _asked(fence, ada, clock, 4, preview=PREVIEW)
    plain = _asked(fence, ada, clock, 6)
    facts_only = _asked(fence, ada, clock, 8, preview=ApprovalPreview(facts=(("Site", "x.io"),)))
    for approval in (shown, plain, facts_only):
        recorded = await store.inbox.request_approval(
            fence, approval, _notice(approval), lease_now=clock.lease_now()
        )
        assert recorded == approval
        assert await store.inbox.get_approval(approval.id) == approval
    listed = {a.id: a.preview for a in await store.inbox.list_approvals(person_id=ada)}
    assert listed == {shown.id: PREVIEW, plain.id: None, facts_only.id: facts_only.preview}
    # a replayed step that asks again, whatever it would show now, gets the first one back
    again = _asked(fence, ada, clock, 4, preview=ApprovalPreview(facts=(("Site", "other"),)))
    kept = await store.inbox.request_approval(
        fence, again, _notice(again), lease_now=clock.lease_now()
    )
    assert kept.preview == PREVIEW
    decided = await store.inbox.decide_approval(
        shown.id, approve=True, decided_by="person", now=clock.now()
    )
    assert decided.preview == PREVIEW
