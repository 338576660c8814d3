"""``/``: while you were away — since the last visit (the ``steward_seen`` cookie), per goal:
what was done and decided, what waits for the person, and what each goal has cost."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query, Request, Response

from steward.domain import TaskStatus
from steward.domain.limits import MAX_SEQ
from steward.web import feed
from steward.web.digest import digest
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer, set_cookie

router = pages()

SEEN_COOKIE = "steward_seen"
MOST_SHOWN = 500
YEAR = 365 * 24 * 3600


@router.get("/")
async def home(
    request: Request, svc: Viewer, since: Annotated[int | None, Query(ge=0, le=MAX_SEQ)] = None
) -> Response:
    seen = feed.cookie_seq(request, SEEN_COOKIE) if since is None else since
    entries = await feed.since(svc, seen, most=MOST_SHOWN)
    goals = await svc.list_goals(person_id="")
    usage: dict[str, dict[str, Any]] = {g.id: (await svc.goal_detail(g.id))["usage"] for g in goals}
    waiting = await svc.list_tasks(status=TaskStatus.WAITING.value, limit=200)
    questions = [t for t in waiting if t.wait is not None and t.wait.kind == "input"]
    newest = entries[-1].seq if entries else seen
    response = page(
        request,
        "home.html",
        title="While you were away",
        digests=digest(
            goals=goals,
            usage=usage,
            entries=entries,
            approvals=await svc.list_approvals(person_id=""),
            questions=questions,
        ),
        seen=seen,
        refresh=f"/?since={seen}",  # a live update shows the same span, not just the newest
        news=len(entries),
        after=newest,
    )
    # the next visit shows what happens after this one
    set_cookie(request, response, SEEN_COOKIE, str(newest), max_age=YEAR)
    return response
