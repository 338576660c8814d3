"""Logging in with an API token, and out.

The login form has no session yet, so its CSRF token is derived from a random nonce kept in a
cookie of its own (a site that cannot read the cookie cannot log the browser in as someone
else)."""

from __future__ import annotations

import secrets

from fastapi import Request, Response
from fastapi.responses import RedirectResponse

from steward.domain.tokens import CONTROL
from steward.errors import Unauthorized
from steward.service import Service
from steward.web.forms import posted
from steward.web.logincodes import LoginCodes
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import LOGIN_NONCE_COOKIE, SESSION_COOKIE, csrf_token, set_cookie

router = pages()


def _form(request: Request, status: int = 200, error: str | None = None) -> Response:
    nonce = request.cookies.get(LOGIN_NONCE_COOKIE) or secrets.token_urlsafe(32)
    response = page(
        request,
        "login.html",
        status,
        title="Log in",
        error=error,
        csrf=csrf_token(request, nonce),
        logged_in=False,
    )
    set_cookie(request, response, LOGIN_NONCE_COOKIE, nonce)
    return response


@router.get("/login")
async def login_form(request: Request) -> Response:
    code = request.query_params.get("code")
    if code is None:
        return _form(request)
    # a one-time link printed by `steward up`: a new control token for this browser
    codes: LoginCodes = request.app.state.login_codes
    person_id = codes.redeem(code)
    if person_id is None:
        message = "That login link was already used or has expired. Restart `steward up` "
        message += "for a new one, or log in with a token."
        return _form(request, 401, message)
    service: Service = request.app.state.service
    _, token = await service.create_token(
        person_id=person_id, name="browser (login link)", scopes=[CONTROL]
    )
    response = RedirectResponse("/", status_code=303)
    set_cookie(request, response, SESSION_COOKIE, token)
    response.delete_cookie(LOGIN_NONCE_COOKIE, path="/")
    return response


@router.post("/login")
async def login(request: Request) -> Response:
    form = await posted(request, basis=request.cookies.get(LOGIN_NONCE_COOKIE, ""))
    token = form.text("token", "").strip()
    service: Service = request.app.state.service
    try:
        await service.authenticate(token)
    except Unauthorized:
        message = "That token is not valid (unknown or revoked). Create one with "
        message += "'steward token create browser --scope control'."
        return _form(request, 401, message)
    response = RedirectResponse("/", status_code=303)
    set_cookie(request, response, SESSION_COOKIE, token)
    response.delete_cookie(LOGIN_NONCE_COOKIE, path="/")
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    await posted(request)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response
