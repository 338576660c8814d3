"""Grants: what one covers, and the one a person gives by approving an action.

A grant *covers* an action when it is live for it (not revoked; ``once``: unspent and for no task or
this task; ``task``: this task; ``session``: this session; ``until``: before its expiry;
``standing``), gives every scope the tool needs (a tool without scopes only through a ``tool``
constraint naming it), and its constraints hold on the arguments: ``tool`` (exact name),
``recipients`` (every ``to``/``cc``/``bcc``/``recipient``/``recipients`` value; for a tool that
declares argument roles, its RECIPIENT and PAYEE arguments; each one plain address, lower-cased, its
domain normalised like a host), ``domains`` (each recipient's and URL's domain, or a subdomain of
one; an IP address only exactly), ``hosts`` (the host of ``url``/``endpoint``, or of a tool's HOST
arguments), ``path_prefix`` (their path, at a ``/`` boundary, with no dot segments), ``calendars``
(every CALENDAR argument names one of them, case-insensitively; an action naming no calendar does
not hold), ``max_amount`` (the amounts at most it) and ``period_amount`` over ``period_seconds``
(the amounts of the actions it allowed in the trailing period, this one included, at most it:
counted atomically by the store when the grant allows an action, so two racing actions cannot both
use the last of an allowance); ``data`` names the kinds of the person's sensitive data the actions
may carry out (step 6 of :mod:`steward.sentinel.policy`) and narrows nothing. A constraint whose
argument is missing or cannot be read fails: a constraint never passes by default. URLs and hosts
are read by :mod:`steward.sentinel.urls`, as the grant builder and the egress broker read them. When
several grants cover, a non-``once`` grant is preferred, so a one-time grant is not spent
needlessly.

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

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import unquote

from steward.domain.actions import ActionRequest
from steward.domain.approval import Approval
from steward.domain.authority import Grant, Lifetime
from steward.domain.ids import new_id
from steward.domain.limits import hours_ahead
from steward.domain.roles import Role
from steward.errors import UsageError
from steward.sentinel.arguments import (
    amounts_of,
    calendars_of,
    domains_of,
    number,
    pinned_constraints,
    recipients_of,
    same_holds,
    url_keys,
    urls_of,
)
from steward.sentinel.urls import host_key, ip_of, recipient_key

_LIFETIME_PREFERENCE = {
    Lifetime.STANDING: 0,
    Lifetime.UNTIL: 1,
    Lifetime.SESSION: 2,
    Lifetime.TASK: 3,
    Lifetime.ONCE: 4,
}


def covering_grant(
    request: ActionRequest, grants: Sequence[Grant], *, now: datetime, session_id: str | None
) -> Grant | None:
    """The grant that allows ``request``, preferring ones that are not spent by using them."""
    for grant in sorted(grants, key=lambda g: (_LIFETIME_PREFERENCE[g.lifetime], g.id)):
        if covers(grant, request, now=now, session_id=session_id):
            return grant
    return None


def live_for(
    grant: Grant, request: ActionRequest, *, now: datetime, session_id: str | None
) -> bool:
    """The grant's lifetime includes this action."""
    if grant.revoked_at is not None or grant.person_id != request.person_id:
        return False
    match grant.lifetime:
        case Lifetime.ONCE:
            return grant.used_at is None and grant.task_id in (None, request.task_id)
        case Lifetime.TASK:
            return grant.task_id == request.task_id
        case Lifetime.SESSION:
            return session_id is not None and grant.session_id == session_id
        case Lifetime.UNTIL:
            return grant.expires_at is not None and now < grant.expires_at
        case Lifetime.STANDING:
            return True


def covers(grant: Grant, request: ActionRequest, *, now: datetime, session_id: str | None) -> bool:
    """The grant is live for the action, gives its scopes and its constraints hold."""
    if not live_for(grant, request, now=now, session_id=session_id):
        return False
    constraints = grant.constraints
    if request.scopes:
        if not set(request.scopes) <= set(grant.scopes):
            return False
    elif constraints.get("tool") != request.tool:
        return False
    return constraints_hold(constraints, request.tool, request.args, request.roles)


def constraints_hold(
    constraints: dict[str, Any],
    tool: str,
    args: dict[str, Any],
    roles: Mapping[str, Role] | None = None,
) -> bool:
    """Every constraint holds on the arguments; one that cannot be checked does not hold.
    ``roles`` are the tool's argument roles, if it declares them."""
    for key, allowed in constraints.items():
        if key == "tool":
            ok = allowed == tool
        elif key == "recipients":
            found = recipients_of(args, roles)
            admitted = {recipient_key(a) for a in allowed}
            ok = bool(found) and all(r in admitted for r in found or ())
        elif key == "hosts":
            hosts = [u.host for u in urls_of(args, roles) or ()]
            admitted = {host_key(a) for a in allowed}
            ok = bool(hosts) and all(h in admitted for h in hosts)
        elif key == "domains":
            ok = _domains_hold(allowed, args, roles)
        elif key == "calendars":
            named = calendars_of(args, roles)
            admitted = {str(a).strip().casefold() for a in allowed}
            ok = bool(named) and all(c in admitted for c in named or ())
        elif key == "data":
            ok = True  # it lets the person's data of these kinds leave; it narrows nothing
        elif key == "urls":
            keys = url_keys(args, roles)
            ok = bool(keys) and all(k in allowed for k in keys or ())
        elif key == "same":
            ok = same_holds(allowed, args, roles)
        elif key == "path_prefix":
            urls = urls_of(args, roles)
            ok = bool(urls) and all(_under(u.path, allowed) for u in urls or ())
        elif key in ("max_amount", "period_amount"):
            amounts = [number(given) for given in amounts_of(args, roles)]
            ok = bool(amounts) and all(a is not None and a <= allowed for a in amounts)
            # an allowance is only counted with its window
            ok = ok and (key == "max_amount" or "period_seconds" in constraints)
        elif key == "period_seconds":
            ok = "period_amount" in constraints  # the window of that ceiling
        else:
            ok = False  # a constraint this evaluator does not know is never satisfied
        if not ok:
            return False
    return True


def _domains_hold(
    allowed: Sequence[str], args: dict[str, Any], roles: Mapping[str, Role] | None
) -> bool:
    domains = domains_of(args, roles)
    admitted = [host_key(a) for a in allowed]
    return bool(domains) and all(
        any(d == a or (ip_of(d) is None and d.endswith("." + a)) for a in admitted if a)
        for d in domains or ()
    )


def _under(path: str, prefix: str) -> bool:
    """``path`` is ``prefix`` or below it, judged after one round of percent-decoding, and
    has no ``.``/``..`` segment or leftover escape that a server might resolve differently."""
    decoded = unquote(path)
    if "%" in decoded or "\\" in decoded:
        return False
    if any(part in (".", "..") for part in decoded.split("/")):
        return False
    base = prefix.rstrip("/")
    return decoded == base or decoded.startswith(base + "/")


# --- the grant an approval gives -------------------------------------------------------------

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
