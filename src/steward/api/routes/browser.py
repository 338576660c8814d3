"""The person's browser: what it last showed each task (with the page's screenshot), and
logging it out of every site."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse, Response

from steward.api.common import Caller, json
from steward.web.picture import png

router = APIRouter(tags=["browser"])

TaskId = Annotated[str, Path(min_length=1, max_length=80, description="The task's id.")]


@router.get("/browser/views", summary="What the browser last showed each task, newest first")
async def list_views(svc: Caller) -> JSONResponse:
    return json(await svc.browser_views())


@router.get(
    "/browser/views/{task_id}/picture",
    summary="The screenshot of what the browser last showed a task",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}}},
)
async def picture(svc: Caller, task_id: TaskId) -> Response:
    return png(await svc.browser_picture(task_id))


@router.post("/browser/clear", summary="Log the browser out of every site")
async def clear(svc: Caller) -> JSONResponse:
    return json({"said": await svc.clear_browser()})
