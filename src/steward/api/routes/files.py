"""The person's workspace files: listed newest first, and one downloaded whole (as
``application/octet-stream``, an attachment: never served as a page)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse, Response

from steward.api.common import Caller, json
from steward.web.attachment import attachment

router = APIRouter(tags=["files"])

FilePath = Annotated[
    str,
    Path(
        min_length=1,
        max_length=4096,
        description="The file's path from the workspace, as listed: notes/plan.txt",
    ),
]


@router.get("/files", summary="The workspace's files, newest first")
async def list_files(svc: Caller) -> JSONResponse:
    return json(await svc.workspace_files())


@router.get(
    "/files/{path:path}",
    summary="Download a workspace file",
    response_class=Response,
    responses={200: {"content": {"application/octet-stream": {}}}},
)
async def download_file(svc: Caller, path: FilePath) -> Response:
    return attachment(await svc.workspace_file(path))
