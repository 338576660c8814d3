"""Authority a person gives by approving an action: the grant an approval makes.

Approving can also give lasting authority for the same tool (:data:`APPROVAL_SCOPES`):
``once`` (just this action), ``task`` (the rest of this task), ``hours`` (for ``hours``),
``always`` (standing). A lasting grant never covers more than the action approved: read by the
tool's argument roles (kept on the approval), it is bound to this tool, to exactly this
action's recipients and URLs, to at most its amount, and to the exact value of every argument
the tool did not mark as content, free text or a time
(:func:`~steward.sentinel.arguments.pinned_constraints`). When it cannot be bound, the lasting
scope is refused with a :class:`~steward.errors.UsageError`; the person can still approve the
action once. The facade stores the grant in the decision's own transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from steward.domain.approval import Approval
from steward.domain.authority import Grant, Lifetime
from steward.domain.ids import new_id
from steward.domain.limits import hours_ahead
from steward.errors import UsageError
from steward.sentinel.arguments import pinned_constraints

APPROVAL_SCOPES = ("once", "task", "hours", "always")
"""What approving an action may also allow."""

_LIFETIMES = {"task": Lifetime.TASK, "hours": Lifetime.UNTIL, "always": Lifetime.STANDING}


def approval_grant(
    approval: Approval,
    *,
    approve: bool,
    scope: str,
    hours: float | None,
    issued_by: str,
    now: datetime,
) -> Grant | None:
    """The lasting grant deciding ``approval`` so gives, or None: a denial or a ``once``
    approval gives nothing beyond the action itself. An unknown scope is refused either way."""
    if scope not in APPROVAL_SCOPES:
        raise UsageError(f"unknown approval scope {scope!r}; use one of {APPROVAL_SCOPES}")
    if not approve or scope == "once":
        return None
    expires_at = None
    if scope == "hours":
        if hours is None:
            raise UsageError("approving for some hours needs hours > 0")
        expires_at = now + hours_ahead(hours, "approving for some hours")
    constraints: dict[str, Any] = {"tool": approval.tool}
    # bound to what this action touches, or refused: never wider than what was approved
    constraints.update(pinned_constraints(approval.args, approval.roles))
    return Grant(
        id=new_id("grt"),
        person_id=approval.person_id,
        scopes=approval.scopes,
        lifetime=_LIFETIMES[scope],
        constraints=constraints,
        task_id=approval.task_id if scope == "task" else None,
        expires_at=expires_at,
        issued_by=issued_by,
        reason=f"approved {approval.id} ({scope})",
        created_at=now,
    )
