"""The facade's approvals part: the actions waiting for the person's yes or no, what deciding
one grants (decided by the sentinel: :mod:`steward.sentinel.grants`), and the notifications
that tell the person about them."""

from __future__ import annotations

from steward.domain import Approval, ApprovalStatus, Notification
from steward.domain.limits import check_text
from steward.domain.tokens import CONTROL, READ
from steward.domain.trail import Trail
from steward.sentinel.grants import approval_grant
from steward.sentinel.provenance import untrusted_arguments
from steward.service.base import ServiceBase


class ApprovalService(ServiceBase):
    async def list_approvals(
        self, *, person_id: str, status: ApprovalStatus | None = ApprovalStatus.PENDING
    ) -> list[Approval]:
        return await self.store.inbox.list_approvals(
            person_id=self._for(person_id, READ), status=status
        )

    async def get_approval(self, approval_id: str) -> Approval:
        return await self._approval(approval_id, READ)

    async def approval_origins(self, approval: Approval) -> dict[str, str]:
        """Arguments of ``approval`` whose values its task saw in untrusted content (an email, a
        web page), and where, in words. The task's record of such values is the only source: an
        approval does not keep them itself."""
        task = await self._task(approval.task_id, READ)
        # the approval does not keep the tool's roles: every argument that looks consequential
        trail = Trail.from_json(task.state)
        flagged = untrusted_arguments(approval.args, trail, trusted_text="", roles=None)
        return {
            path: f"{t.value!r} appeared in untrusted content from {t.source} (step {t.step})"
            for path, t in flagged.items()
        }

    async def decide_approval(
        self,
        approval_id: str,
        *,
        approve: bool,
        decided_by: str = "person",
        note: str | None = None,
        scope: str = "once",
        hours: float | None = None,
        spend_token: str | None = None,
    ) -> Approval:
        """Approve or deny exactly the action that was asked about; the task resumes.

        Approving can also give lasting authority for the same tool (a grant, audited):
        ``once`` (just this action), ``task`` (the rest of this task), ``hours`` (for
        ``hours``), ``always`` (standing). The sentinel decides the grant
        (:func:`~steward.sentinel.grants.approval_grant`): it never covers more than the action
        approved, and it is recorded in the same transaction as the decision. When it cannot be
        bound — the action names no recipient or URL, or one of them (or the amount) cannot be
        read unambiguously (a display name, a host that is not plainly a host) — the lasting
        scope is refused with a :class:`~steward.errors.UsageError` and nothing changes; the
        person can still approve it once.

        ``spend_token``: the reply token (of an approval mail) that decides it, spent in the
        decision's transaction: a token spent already decides nothing."""
        check_text(note or "", "a decision's note")
        approval = await self._approval(approval_id, CONTROL)
        decided_by = self._decider(decided_by)
        now = self.clock.now()
        grant = approval_grant(
            approval, approve=approve, scope=scope, hours=hours, issued_by=decided_by, now=now
        )
        if grant is not None:
            # one transaction: a grant never outlives a decision that failed
            decided = await self.store.authority.approve_granting(
                approval_id,
                grant,
                decided_by=decided_by,
                now=now,
                note=note,
                spend_token=spend_token,
            )
        else:
            decided = await self.store.inbox.decide_approval(
                approval_id,
                approve=approve,
                decided_by=decided_by,
                now=now,
                note=note,
                spend_token=spend_token,
            )
        self._nudge()
        return decided

    async def list_notifications(
        self, *, person_id: str, unread: bool = False, limit: int = 200
    ) -> list[Notification]:
        return await self.store.inbox.list_notifications(
            person_id=self._for(person_id, READ), unread=unread, limit=limit
        )

    async def mark_read(self, notification_id: str) -> None:
        """Mark read (a read token may: it is the dashboard's own bookkeeping). Marking one
        already read changes nothing; an id that is not the person's is
        :class:`~steward.errors.NotFound`, like one that does not exist."""
        await self.store.inbox.mark_read(
            notification_id, now=self.clock.now(), person_id=self._mine(READ)
        )
