"""The facade's approvals part: the actions waiting for the person's yes or no, what deciding
one grants (decided by the sentinel: :mod:`steward.sentinel.grants`), the picture its tool
took of one, and the notifications that tell the person about them."""

from __future__ import annotations

import asyncio
import hashlib

from steward.domain import Approval, ApprovalStatus, Notification
from steward.domain.limits import check_text
from steward.domain.tokens import CONTROL, READ
from steward.domain.trail import Trail
from steward.errors import NotFound, UsageError
from steward.service.base import ServiceBase
from steward.service.workspace import FileDownload, home_of, read_file

PNG = b"\x89PNG\r\n\x1a\n"
"""How every PNG file begins: a picture is served as ``image/png`` only if it is one."""


class NoPicture(NotFound):
    """The approval shows no picture: it has none, or its file is gone or changed since."""

    def __init__(self, approval_id: str, why: str) -> None:
        super().__init__("picture of approval", approval_id)
        self.args = (why,)


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
        from steward.sentinel.provenance import untrusted_arguments

        task = await self._task(approval.task_id, READ)
        # the approval does not keep the tool's roles: every argument that looks consequential
        trail = Trail.from_json(task.state)
        flagged = untrusted_arguments(approval.args, trail, trusted_text="", roles=None)
        return {
            path: f"{t.value!r} appeared in untrusted content from {t.source} (step {t.step})"
            for path, t in flagged.items()
        }

    async def approval_picture(self, approval_id: str) -> FileDownload:
        """The picture the approval's tool took of the action (a PNG in the person's
        workspace), only while its file is the one taken: reached without following a link,
        inside the workspace, with the sha256 recorded when it was taken (the workspace's
        shell can write files). Otherwise :class:`NoPicture`, saying why."""
        approval = await self._approval(approval_id, READ)
        shown = approval.preview
        if shown is None or shown.picture is None or shown.picture_sha256 is None:
            raise NoPicture(approval_id, "This approval has no picture.")
        home = home_of(self.data_dir, approval.person_id)
        try:
            found = await asyncio.to_thread(read_file, home, shown.picture)
        except UsageError:  # gone, a link, a folder, outside the workspace
            raise NoPicture(
                approval_id, "The picture of this approval is no longer in your workspace."
            ) from None
        if hashlib.sha256(found.data).hexdigest() != shown.picture_sha256:
            raise NoPicture(
                approval_id,
                "The picture of this approval was changed after it was taken, so it is not shown.",
            )
        if not found.data.startswith(PNG):
            raise NoPicture(approval_id, "The picture of this approval is not a PNG image.")
        return found

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
        from steward.sentinel.grants import approval_grant

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
