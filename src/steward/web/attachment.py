"""A workspace file sent to the browser as a download, never shown as a page: the files may
come from others (a downloaded page, a mail's attachment), and one rendered on this site's
origin could run its script with the person's session. An approval's picture is the one file
shown in place, as an image only."""

from __future__ import annotations

from urllib.parse import quote

from fastapi.responses import Response

from steward.service.workspace import FileDownload


def attachment(download: FileDownload) -> Response:
    """``download`` as ``application/octet-stream`` with ``Content-Disposition: attachment``
    (its name in ASCII, and whole in UTF-8 for browsers that read ``filename*``)."""
    encoded = quote(download.name, safe="")
    plain = "".join(
        c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in download.name
    )
    return Response(
        download.data,
        media_type="application/octet-stream",
        headers={
            "Content-Disposition": (
                f"attachment; filename=\"{plain}\"; filename*=UTF-8''{encoded}"
            ),
            "X-Content-Type-Options": "nosniff",  # no browser guesses it is a page after all
            # opened directly anyway: no script, no style, no plugin, its own opaque origin
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "Cache-Control": "no-store",
        },
    )


def picture(download: FileDownload) -> Response:
    """A picture a tool took (checked to be a PNG by the facade) as ``image/png``, shown in a
    page and never sniffed as anything else."""
    return Response(
        download.data,
        media_type="image/png",
        headers={
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "Cache-Control": "private, no-store",
        },
    )
