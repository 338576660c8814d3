"""``/inbox``: what waits for the person's decision — approvals (the exact action, why it was
asked, what its tool showed of it, where untrusted argument values came from; approve once,
for the task, for some hours, always, or deny), effects nobody knows happened (it did, or it
did not), memory changes held for review (apply or reject) — and notifications.
``/inbox/<approval>`` is one approval, the page its notification links to (decided ones too),
and ``/approvals/<approval>/picture`` the picture its tool took."""

from __future__ import annotations

from fastapi import Request, Response

from steward.domain.approval import ApprovalStatus
from steward.domain.journal import resolution_summary
from steward.domain.memory_pass import PassStatus
from steward.web.attachment import picture
from steward.web.forms import DECISIONS, back, done, posted
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer

router = pages()

OUTCOMES = {"yes": True, "no": False}
"""How the in-doubt form says whether the effect happened."""


@router.get("/inbox")
async def inbox(request: Request, svc: Viewer) -> Response:
    after = await svc.feed_head(person_id="")  # read first: no change falls between
    approvals = await svc.list_approvals(person_id="")
    goals = {g.id: g.title for g in await svc.list_goals(person_id="")}
    passes = await svc.list_memory_passes(person_id="", status=PassStatus.HELD)
    return page(
        request,
        "inbox.html",
        title="Inbox",
        approvals=[(a, await svc.approval_origins(a)) for a in approvals],
        effects=await svc.in_doubt_effects(),
        passes=passes,
        held={p.id for p in passes},
        skills=[s for s in await svc.list_skills() if s.pending or s.status == "proposed"],
        notifications=await svc.list_notifications(person_id="", limit=100),
        goal_titles=goals,
        pending={a.id for a in approvals},
        after=after,
    )


@router.get("/inbox/{approval_id}")
async def approval(request: Request, svc: Viewer, approval_id: str) -> Response:
    found = await svc.get_approval(approval_id)
    goals = {g.id: g.title for g in await svc.list_goals(person_id="")}
    return page(
        request,
        "approval.html",
        title="Approve?" if found.status is ApprovalStatus.PENDING else "An approval",
        approval=found,
        origins=await svc.approval_origins(found),
        goal_titles=goals,
    )


@router.get("/approvals/{approval_id}/picture")
async def approval_picture(svc: Viewer, approval_id: str) -> Response:
    return picture(await svc.approval_picture(approval_id))


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
    if decision != "once":  # a lasting approval is pinned to what this action touches
        said += ", for the same recipients and sites"
    return done(request, back(form, "/inbox"), f"Approved {said}.")


@router.post("/effects/{effect_id}/resolve")
async def resolve(request: Request, svc: Viewer, effect_id: str) -> Response:
    form = await posted(request)
    applied = form.choice("applied", OUTCOMES)
    effect = await svc.resolve_effect(effect_id, applied=applied)
    task = await svc.get_task(effect.task_id)
    return done(request, "/inbox", resolution_summary(effect, task.status))


@router.post("/passes/{pass_id}")
async def decide_pass(request: Request, svc: Viewer, pass_id: str) -> Response:
    form = await posted(request)
    approve = form.choice("decision", DECISIONS)
    decided = await svc.decide_memory_pass(pass_id, approve=approve)
    if not approve:
        return done(request, back(form, "/inbox"), "Rejected: your memories are unchanged.")
    skipped = sum(1 for op in decided.operations if op.skipped)
    applied = len(decided.operations) - skipped
    message = f"Applied {applied} change(s)"
    if skipped:
        message += f"; {skipped} skipped because their memories changed meanwhile"
    return done(request, back(form, "/inbox"), message + ".")


@router.post("/notifications/{notification_id}/read")
async def read(request: Request, svc: Viewer, notification_id: str) -> Response:
    await posted(request)
    await svc.mark_read(notification_id)
    return done(request, "/inbox", "Marked read.")
