"""What Steward learned to do: skills, their versions, diffs, restores and proposals."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import Field

from steward.api.common import Caller, json
from steward.api.routes.work import Body
from steward.domain.limits import MAX_SEQ

router = APIRouter(tags=["skills"])


class RestoreIn(Body):
    version: int = Field(ge=1)


class ProposalDecision(Body):
    approve: bool


@router.get("/skills", summary="Skills by name")
async def list_skills(
    svc: Caller, status: Literal["active", "proposed", "archived"] | None = None
) -> JSONResponse:
    return json({"items": await svc.list_skills(person_id="", status=status)})


@router.get("/skills/{skill}", summary="A skill (by name or id)")
async def get_skill(svc: Caller, skill: str) -> JSONResponse:
    return json(await svc.get_skill(skill, person_id=""))


@router.get("/skills/{skill}/history", summary="Every version of a skill")
async def skill_history(svc: Caller, skill: str) -> JSONResponse:
    return json({"items": await svc.skill_history(skill, person_id="")})


@router.get("/skills/{skill}/diff", summary="What changed between two versions")
async def skill_diff(
    svc: Caller,
    skill: str,
    from_version: Annotated[int | None, Query(ge=1, le=MAX_SEQ, alias="from")] = None,
    to_version: Annotated[int | None, Query(ge=1, le=MAX_SEQ, alias="to")] = None,
) -> JSONResponse:
    diff = await svc.skill_diff(
        skill, person_id="", from_version=from_version, to_version=to_version
    )
    return json({"diff": diff})


@router.post("/skills/{skill}/restore", summary="Make an earlier version current (future runs)")
async def restore_skill(svc: Caller, skill: str, body: RestoreIn) -> JSONResponse:
    return json(await svc.restore_skill(skill, body.version, person_id=""))


@router.post("/skills/{skill}/archive", summary="Stop using a skill")
async def archive_skill(svc: Caller, skill: str) -> JSONResponse:
    return json(await svc.archive_skill(skill, person_id=""))


@router.post("/skills/{skill}/decision", summary="Approve or reject a waiting proposal")
async def decide_skill(svc: Caller, skill: str, body: ProposalDecision) -> JSONResponse:
    return json(await svc.decide_skill_proposal(skill, approve=body.approve, person_id=""))
