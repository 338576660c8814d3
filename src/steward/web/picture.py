"""A screenshot sent to the browser as a picture: ``image/png`` and nothing else — no browser
may guess it is a page (it is taken from others' sites, and a file in the workspace can be
written by a task), and one opened on its own runs nothing."""

from __future__ import annotations

from fastapi.responses import Response


def png(data: bytes) -> Response:
    """``data``, a PNG, as a picture the browser shows and never reads as anything else."""
    return Response(
        data,
        media_type="image/png",
        headers={
            "X-Content-Type-Options": "nosniff",
            # opened directly: no script, no style, no plugin, its own opaque origin
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "Cache-Control": "no-store",  # the person's own pages: never kept by a shared cache
        },
    )
