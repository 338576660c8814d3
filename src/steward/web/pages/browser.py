"""The person's browser on the dashboard: a task's last screenshot (shown on the Files page and
beside the task's steps), and logging the browser out of every site — asked on a page of its
own first, so one stray tap cannot do it."""

from __future__ import annotations

from fastapi import Request, Response

from steward.web.forms import done, posted
from steward.web.picture import png
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer

router = pages()


@router.get("/browser/{task_id}/picture")
async def picture(svc: Viewer, task_id: str) -> Response:
    return png(await svc.browser_picture(task_id))


@router.get("/browser/clear")
async def confirm_clear(request: Request, svc: Viewer) -> Response:
    return page(request, "browser_clear.html", title="Log out everywhere?")


@router.post("/browser/clear")
async def clear(request: Request, svc: Viewer) -> Response:
    await posted(request)
    return done(request, "/files#browser", await svc.clear_browser())
