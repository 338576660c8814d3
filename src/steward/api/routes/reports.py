"""Reports: what Steward told the person, newest first, and marking them read."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse

from steward.api.common import Caller, json
from steward.api.routes.work import Offset

router = APIRouter(tags=["reports"])

Limit = Annotated[int, Query(ge=1, le=200, description="Reports per page.")]
ReportId = Annotated[str, Path(min_length=1, max_length=80, description="The report's id.")]


@router.get("/reports", summary="Reports, newest first")
async def list_reports(
    svc: Caller, unread: bool = False, limit: Limit = 50, offset: Offset = 0
) -> JSONResponse:
    """What Steward told the person (by the agent or the runtime), with where each stands on
    its way to them: ``pending``, ``held`` (quiet hours), ``digest``, ``digested``,
    ``delivered`` or ``dropped`` (on the dashboard only, by the goal's report policy)."""
    found = await svc.list_reports(person_id="", unread=unread, limit=limit + 1, offset=offset)
    more = len(found) > limit
    return json({"items": found[:limit], "next_offset": offset + limit if more else None})


@router.post("/reports/{report_id}/read", summary="Mark a report read", status_code=204)
async def mark_report_read(svc: Caller, report_id: ReportId) -> None:
    await svc.mark_reports_read([report_id])
