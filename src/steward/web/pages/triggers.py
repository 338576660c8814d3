"""``/triggers``: what wakes work by itself, when it fires next, its daily budget and today's
use, a heartbeat's idle checks; enable or disable each."""

from __future__ import annotations

from fastapi import Request, Response

from steward.web.forms import done, posted
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer

router = pages()


@router.get("/triggers")
async def triggers(request: Request, svc: Viewer) -> Response:
    return page(
        request,
        "triggers.html",
        title="Triggers",
        reports=await svc.trigger_reports(person_id=""),
    )


@router.post("/triggers/{trigger_id}")
async def switch(request: Request, svc: Viewer, trigger_id: str) -> Response:
    form = await posted(request)
    enabled = form.choice("enabled", {"true": True, "false": False})
    trigger = await svc.set_trigger_enabled(trigger_id, enabled)
    return done(request, "/triggers", f"{trigger.name} {'enabled' if enabled else 'disabled'}.")
