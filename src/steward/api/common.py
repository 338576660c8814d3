"""What every route shares: the caller (the facade bound to the request's token), problem
details, JSON encoding and pagination."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from steward.errors import Unauthorized
from steward.service import Service
from steward.service.encode import to_jsonable
from steward.web.session import SESSION_COOKIE

PROBLEM = "application/problem+json"
MOST_PER_PAGE = 500

bearer = HTTPBearer(
    auto_error=False,
    description="An API token from `steward token create` (scopes `read` or `control`).",
)


_SAFE = frozenset({"GET", "HEAD"})


def token_of(request: Request, credentials: HTTPAuthorizationCredentials | None) -> str:
    """The request's token: the bearer header, else (on a read) the session cookie."""
    if credentials is not None and credentials.credentials.strip():
        return credentials.credentials.strip()
    cookie = request.cookies.get(SESSION_COOKIE, "").strip()
    if cookie and request.method in _SAFE:
        return cookie
    raise Unauthorized(
        "send an API token as 'Authorization: Bearer <token>' (create one with "
        "'steward token create')"
    )


async def caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Service:
    """The facade bound to the request's token: the person it acts for, within its scopes."""
    service: Service = request.app.state.service
    return await service.authenticate(token_of(request, credentials))


Caller = Annotated[Service, Depends(caller)]


def problem(status: int, title: str, detail: str, **extra: Any) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def json(value: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(to_jsonable(value), status_code=status)


def page(items: Sequence[Any], *, limit: int, offset: int) -> dict[str, Any]:
    """One page of a listing fetched with one item to spare (``offset + limit + 1`` items):
    the page, and the offset of the next one (None on the last)."""
    shown = list(items[offset : offset + limit])
    more = len(items) > offset + limit
    return {"items": to_jsonable(shown), "next_offset": offset + limit if more else None}


def seq_page(items: Sequence[Any], *, limit: int, cursor: str = "next_after") -> JSONResponse:
    """One page of a listing read by position with one item to spare (``limit + 1`` items
    after a seq): the page, and under ``cursor`` the seq to read after next (None on the
    last page)."""
    shown = list(items[:limit])
    more = len(items) > limit and bool(shown)
    return json({"items": shown, cursor: shown[-1].seq if more else None})
