"""``/files``: the files in the person's workspace, newest first — what the assistant wrote,
downloaded or kept from its tools — each with its size, time and where it came from, and a
link that downloads it (never opens it as a page); below them, what the person's browser last
showed each task (:mod:`steward.web.pages.browser`)."""

from __future__ import annotations

from fastapi import Request, Response

from steward.web.attachment import attachment
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer

router = pages()


@router.get("/files")
async def files(request: Request, svc: Viewer) -> Response:
    listing = await svc.workspace_files()
    views = await svc.browser_views()
    return page(request, "files.html", title="Files", listing=listing, views=views)


@router.get("/files/download")
async def download(svc: Viewer, path: str) -> Response:
    return attachment(await svc.workspace_file(path))
