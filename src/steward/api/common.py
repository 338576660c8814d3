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

PROBLEM = "application/problem+json"
MOST_PER_PAGE = 500

_bearer = HTTPBearer(
    auto_error=False,
    description="An API token from `steward token create` (scopes `read` or `control`).",
)


async def caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Service:
    """The facade bound to the request's token: the person it acts for, within its scopes."""
    if credentials is None or not credentials.credentials.strip():
        raise Unauthorized(
            "send an API token as 'Authorization: Bearer <token>' (create one with "
            "'steward token create')"
        )
    service: Service = request.app.state.service
    return await service.authenticate(credentials.credentials.strip())


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
