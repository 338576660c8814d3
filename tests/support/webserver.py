"""A small web site on 127.0.0.1 for tests: pages registered (and changed) while it runs,
conditional GET, robots.txt, redirects, error answers — and a log of every request it got.

    with serve_site() as site:
        site.page("/shop", "<p class=price>1 299,00 €</p>")
        ...  # fetch f"{site.url}/shop"
        site.page("/shop", "<p class=price>999,00 €</p>")  # the price drops
        assert site.count("/shop") == 2 and site.not_modified("/shop") == 0

A page answers with an ``ETag`` (from its body) and, when given, a ``Last-Modified``; a request
whose ``If-None-Match`` or ``If-Modified-Since`` still holds gets a 304, counted. A path nobody
registered answers 404 (so does ``/robots.txt`` until :meth:`Site.robots` sets one). Served by
uvicorn in a thread (:func:`steward.testing.model_server.serve_in_thread`), so it is safe to
use from any event loop; :attr:`Site.stamp` (a clock's ``now``) dates each request in the
test's time.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import format_datetime, parsedate_to_datetime

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from steward.testing.model_server import serve_in_thread


@dataclass(kw_only=True)
class Resource:
    """What one path answers."""

    body: bytes = b""
    """The body, as sent."""
    content_type: str = "text/html; charset=utf-8"
    """Its Content-Type header."""
    status: int = 200
    """The status answered."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra headers (Location, Retry-After...)."""
    etag: bool = True
    """Answer with an ETag from the body and honour If-None-Match."""
    last_modified: datetime | None = None
    """Answer with this Last-Modified and honour If-Modified-Since."""


@dataclass(kw_only=True, frozen=True)
class Hit:
    """One request the site got."""

    path: str
    """The path asked for (with its query, if any)."""
    status: int
    """What it answered."""
    headers: dict[str, str]
    """The request's headers (lower-case names)."""
    at: datetime | None
    """When, by :attr:`Site.stamp`, when set."""


@dataclass
class Site:
    """The site's pages and its log; every method is safe from any thread."""

    url: str = ""
    """``http://127.0.0.1:<port>``."""
    stamp: Callable[[], datetime] | None = None
    """Dates each request (a simulated clock's ``now``)."""
    _pages: dict[str, Resource] = field(default_factory=dict)
    _hits: list[Hit] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def page(
        self,
        path: str,
        body: str | bytes,
        *,
        content_type: str = "text/html; charset=utf-8",
        status: int = 200,
        headers: dict[str, str] | None = None,
        etag: bool = True,
        last_modified: datetime | None = None,
        encoding: str = "utf-8",
    ) -> None:
        """Serve ``body`` at ``path`` (replacing what was there)."""
        raw = body.encode(encoding) if isinstance(body, str) else body
        self._set(
            path,
            Resource(
                body=raw,
                content_type=content_type,
                status=status,
                headers=dict(headers or {}),
                etag=etag,
                last_modified=last_modified,
            ),
        )

    def robots(self, text: str, *, status: int = 200) -> None:
        """Serve ``text`` as ``/robots.txt`` (or answer ``status`` with it)."""
        self.page("/robots.txt", text, content_type="text/plain", status=status, etag=False)

    def redirect(self, path: str, to: str, *, status: int = 302) -> None:
        """Answer ``path`` with a redirect to ``to``."""
        self.page(path, "", status=status, headers={"Location": to}, etag=False)

    def fail(self, path: str, status: int, *, retry_after: str | None = None) -> None:
        """Answer ``path`` with ``status`` (and a Retry-After, when given)."""
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        self.page(path, f"error {status}", status=status, headers=headers, etag=False)

    def remove(self, path: str) -> None:
        """Stop serving ``path`` (it answers 404)."""
        with self._lock:
            self._pages.pop(path, None)

    def hits(self, path: str | None = None) -> list[Hit]:
        """Requests received (for ``path`` only, when given), in order."""
        with self._lock:
            return [h for h in self._hits if path is None or h.path == path]

    def count(self, path: str | None = None) -> int:
        """How many requests were received (for ``path``)."""
        return len(self.hits(path))

    def not_modified(self, path: str | None = None) -> int:
        """How many were answered 304 (for ``path``)."""
        return sum(1 for h in self.hits(path) if h.status == 304)

    def _set(self, path: str, resource: Resource) -> None:
        with self._lock:
            self._pages[path] = resource

    async def _answer(self, request: Request) -> Response:
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        with self._lock:
            resource = self._pages.get(path) or self._pages.get(request.url.path)
        response = _response(resource, request)
        with self._lock:
            self._hits.append(
                Hit(
                    path=path,
                    status=response.status_code,
                    headers={k.lower(): v for k, v in request.headers.items()},
                    at=self.stamp() if self.stamp is not None else None,
                )
            )
        return response


def _response(resource: Resource | None, request: Request) -> Response:
    if resource is None:
        return Response("not found", status_code=404, media_type="text/plain")
    headers = dict(resource.headers)
    if resource.etag:
        headers["ETag"] = '"' + hashlib.sha256(resource.body).hexdigest()[:16] + '"'
    if resource.last_modified is not None:
        headers["Last-Modified"] = format_datetime(resource.last_modified, usegmt=True)
    if resource.status == 200 and _still_fresh(resource, headers, request):
        return Response(status_code=304, headers=headers)
    headers["Content-Type"] = resource.content_type
    return Response(resource.body, status_code=resource.status, headers=headers)


def _still_fresh(resource: Resource, headers: dict[str, str], request: Request) -> bool:
    """The request's validators match the page (If-None-Match wins over If-Modified-Since, as
    RFC 9110 §13.2.2 says)."""
    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None and "ETag" in headers:
        return headers["ETag"] in [v.strip() for v in if_none_match.split(",")]
    since = request.headers.get("if-modified-since")
    if since is not None and resource.last_modified is not None:
        try:
            return resource.last_modified.replace(microsecond=0) <= parsedate_to_datetime(since)
        except (TypeError, ValueError):
            return False
    return False


@contextmanager
def serve_site() -> Iterator[Site]:
    """A :class:`Site` served on a free port of 127.0.0.1 for the block's duration."""
    site = Site()
    app = Starlette(routes=[Route("/{path:path}", site._answer, methods=["GET", "HEAD", "POST"])])
    with serve_in_thread(app) as url:
        site.url = url
        yield site
