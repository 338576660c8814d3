"""``/inbox``: notifications, and approvals waiting for the person — the exact action, why it
was asked, where untrusted argument values came from — with approve (once, for the task, for
some hours, always) and deny."""

from __future__ import annotations

from fastapi import Request, Response

from steward.domain import Approval
from steward.harness.provenance import untrusted_arguments
from steward.service import Service
from steward.web import feed
from steward.web.forms import back, done, posted
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer

router = pages()


@router.get("/inbox")
async def inbox(request: Request, svc: Viewer) -> Response:
    approvals = await svc.list_approvals(person_id="")
    return page(
        request,
        "inbox.html",
        title="Inbox",
        approvals=[(a, await _origins(svc, a)) for a in approvals],
        notifications=await svc.list_notifications(person_id="", limit=100),
        after=await feed.head(svc, request),
    )


async def _origins(svc: Service, approval: Approval) -> dict[str, str]:
    """Arguments whose values the task saw in untrusted content (an email, a web page), and
    where. The task's record of such values is the only source: an approval does not keep
    them itself."""
    task = await svc.get_task(approval.task_id)
    flagged = untrusted_arguments(approval.args, task.state.get("taint", []), trusted_text="")
    return {
        path: f"{t.value!r} appeared in untrusted content from {t.source} (step {t.step})"
        for path, t in flagged.items()
    }


@router.post("/approvals/{approval_id}")
async def decide(request: Request, svc: Viewer, approval_id: str) -> Response:
    form = await posted(request)
    decision = form.text("decision")
    note = form.text("note", "").strip() or None
    if decision == "deny":
        await svc.decide_approval(approval_id, approve=False, note=note)
        return done(request, back(form, "/inbox"), "Denied.")
    hours = form.number("hours") if decision == "hours" else None
    await svc.decide_approval(approval_id, approve=True, note=note, scope=decision, hours=hours)
    scope = {"once": "this once", "task": "for the rest of this task", "always": "always"}
    said = scope[decision] if hours is None else f"for {hours:g} hours"
    return done(request, back(form, "/inbox"), f"Approved {said}.")


@router.post("/notifications/{notification_id}/read")
async def read(request: Request, svc: Viewer, notification_id: str) -> Response:
    await posted(request)
    await svc.mark_read(notification_id)
    return done(request, "/inbox", "Marked read.")
