"""``/``: while you were away — the reports Steward wrote and what waits for the person, per
goal, newest first, in their time zone. A report stays until the person marks it read (a
reload shows the same page); steps stay in each goal's timeline."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response

from steward.domain import TaskStatus
from steward.web.digest import STATES, digest
from steward.web.forms import done, posted
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer

router = pages()

PAGE = 20
"""Reports per page: a phone's few screens; older ones a tap away."""
APPROVALS_SHOWN = 5
"""Approvals listed per goal; the rest are counted, with the Inbox a tap away."""


@router.get("/")
async def home(
    request: Request, svc: Viewer, older: Annotated[int, Query(ge=0, le=100_000)] = 0
) -> Response:
    found = await svc.list_reports(person_id="", limit=PAGE + 1, offset=older)
    shown = found[:PAGE]
    goals = await svc.list_goals(person_id="")
    usage = await svc.goal_usages(person_id="")
    waiting = await svc.list_tasks(status=TaskStatus.WAITING.value, limit=200)
    questions = [t for t in waiting if t.wait is not None and t.wait.kind == "input"]

    groups = digest(
        goals=goals,
        usage=usage,
        reports=shown,
        approvals=await svc.list_approvals(person_id=""),
        questions=questions,
    )
    return page(
        request,
        "home.html",
        title="While you were away",
        digests=groups,
        unread=sum(d.unread for d in groups),
        waiting=sum(d.waiting for d in groups),
        states=STATES,
        approvals_shown=APPROVALS_SHOWN,
        older=older + PAGE if len(found) > PAGE else None,
        newer=max(older - PAGE, 0) if older else None,
    )


@router.post("/reports/{report_id}/read")
async def mark_read(request: Request, svc: Viewer, report_id: str) -> Response:
    await posted(request)
    await svc.mark_reports_read([report_id])
    return done(request, "/", "Marked read.")
