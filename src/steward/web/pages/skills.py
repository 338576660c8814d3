"""``/skills``: what the agent learned to do — each skill's versions, the diff between two of
them, restoring one, and deciding a proposal that waits for the person."""

from __future__ import annotations

from fastapi import Request, Response

from steward.web.forms import DECISIONS, back, done, posted
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer

router = pages()


@router.get("/skills")
async def skills(request: Request, svc: Viewer) -> Response:
    return page(request, "skills.html", title="Skills", skills=await svc.list_skills())


@router.get("/skills/{skill_id}")
async def skill(
    request: Request,
    svc: Viewer,
    skill_id: str,
    from_version: int | None = None,
    to_version: int | None = None,
) -> Response:
    found = await svc.get_skill(skill_id)
    return page(
        request,
        "skill.html",
        title=found.name,
        skill=found,
        versions=list(reversed(await svc.skill_history(found.id))),
        diff=await svc.skill_diff(found.id, from_version=from_version, to_version=to_version),
        from_version=from_version,
        to_version=to_version,
    )


@router.post("/skills/{skill_id}/versions/{version}")
async def restore(request: Request, svc: Viewer, skill_id: str, version: int) -> Response:
    await posted(request)
    restored = await svc.restore_skill(skill_id, version)
    message = f"Version {version} restored (as version {restored.version})."
    return done(request, f"/skills/{restored.id}", message)


@router.post("/skills/{skill_id}/proposal")
async def decide(request: Request, svc: Viewer, skill_id: str) -> Response:
    form = await posted(request)
    approve = form.choice("decision", DECISIONS)
    decided = await svc.decide_skill_proposal(skill_id, approve=approve)
    said = "Applied: I use it from now on." if approve else "Rejected: I will not use it."
    return done(request, back(form, f"/skills/{decided.id}"), f"{decided.name}: {said}")
