"""Who is looking: the session cookie (the API token the person logged in with), the facade
bound to it, and the CSRF token derived from it."""

from __future__ import annotations

import hashlib
import hmac
from typing import Annotated

from fastapi import Depends, Request, Response

from steward.domain.tokens import CONTROL
from steward.errors import Unauthorized
from steward.service import Service
from steward.web import words

SESSION_COOKIE = "steward_session"
"""The dashboard's session: the token the person logged in with, in an HttpOnly, SameSite=Strict
cookie. The API takes it on reads only (a browser's ``EventSource`` cannot send a header); a
change through the API needs the bearer header, so no other site can make a browser change
anything."""
LOGIN_NONCE_COOKIE = "steward_login"
"""Before there is a session, the login form's CSRF token is derived from this random value."""


class LoginRequired(Exception):
    """No valid session: the page redirects to the login form."""


def session_token(request: Request) -> str:
    return request.cookies.get(SESSION_COOKIE, "").strip()


async def viewer(request: Request) -> Service:
    """The facade bound to the session's token (a revoked token ends the session)."""
    token = session_token(request)
    if not token:
        raise LoginRequired
    service: Service = request.app.state.service
    try:
        bound = await service.authenticate(token)
    except Unauthorized:
        raise LoginRequired from None
    # what every page shows in the person's terms: their zone, and whether they may act
    person = await bound.person(None)
    request.state.tz = words.zone(person.timezone)
    request.state.can_control = bound.principal is not None and (
        CONTROL in bound.principal.token.scopes
    )
    return bound


Viewer = Annotated[Service, Depends(viewer)]


def csrf_token(request: Request, basis: str | None = None) -> str:
    """The value every form of this session must post back: an HMAC of the session's token
    (of ``basis``, on the login form: a random nonce) under a key only this process knows, so
    another site can neither read nor forge it. Empty without a basis: nothing can match."""
    basis = session_token(request) if basis is None else basis
    if not basis:
        return ""
    key: bytes = request.app.state.csrf_key
    return hmac.new(key, basis.encode(), hashlib.sha256).hexdigest()


def set_cookie(
    request: Request, response: Response, name: str, value: str, *, max_age: int | None = None
) -> None:
    """A cookie only this site's pages send, and (over https) only over https."""
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        httponly=True,
        samesite="strict",
        path="/",
        secure=request.url.scheme == "https",
    )
