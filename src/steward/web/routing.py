"""How a page answers what went wrong: no session is a redirect to the login form, and a
caller's mistake (:class:`~steward.errors.UsageError`: unknown id, stale form, missing scope,
a conflicting edit) is a page saying so with its status code — never the API's JSON, never a
500."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute

from steward.errors import UsageError
from steward.web.render import page
from steward.web.session import SESSION_COOKIE, LoginRequired

TITLES = {
    401: "Please log in again",
    403: "Not allowed",
    404: "Not found",
    409: "It changed meanwhile",
}


class PageRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handle(request)
            except LoginRequired:
                response = RedirectResponse("/login", status_code=303)
                response.delete_cookie(SESSION_COOKIE, path="/")
                return response
            except UsageError as exc:
                title = TITLES.get(exc.status_code, "That did not work")
                return page(request, "error.html", exc.status_code, title=title, error=exc)

        return answer


def pages() -> APIRouter:
    """A router for dashboard pages (kept out of the API's OpenAPI document)."""
    return APIRouter(route_class=PageRoute, include_in_schema=False)
