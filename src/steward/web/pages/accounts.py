"""The security page's connected accounts: connect one with a password or through an OAuth 2.0
provider, test it, disconnect it (and forget what came through it).

OAuth from the dashboard: the form starts the authorization (PKCE) and the page links to the
provider; the provider sends the browser back to ``/accounts/oauth/callback`` with a code and
the request's ``state``. The session cookie is ``SameSite=Strict``, so it does not come back
with that cross-site redirect: the authorization in progress is kept here in memory by its
state (unguessable, single use, ten minutes), with the session token that started it, and the
answer is a page of its own whose link back to the dashboard carries the session again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from fastapi import Request, Response
from fastapi.responses import HTMLResponse

from steward.errors import UsageError
from steward.service import Service
from steward.web.forms import Form, done, posted
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer, session_token

router = pages()

PROVIDERS = (
    ("gmail", "Google (Gmail, Google Calendar)"),
    ("microsoft365", "Microsoft 365 (mail)"),
    ("custom", "Another provider (give its endpoints)"),
)
"""The OAuth form's providers."""

AUTHORIZE_MINUTES = 10
"""How long an authorization started here waits for the provider's answer."""


@dataclass(kw_only=True, frozen=True)
class Authorizing:
    """An OAuth authorization started from the dashboard, until the provider answers."""

    token: str
    """The session token that started it: the callback acts as that session did."""
    until: datetime
    """When it is no longer accepted."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """What :meth:`~steward.service.connections.ConnectionService.connect_oauth` needs, but
    the code."""


@router.post("/accounts")
async def connect_account(request: Request, svc: Viewer) -> Response:
    form = await posted(request)
    kind = form.text("kind")
    connected = await svc.connect(
        person_id="",
        kind=kind,
        name=form.text("name"),
        settings=await _settings(svc, kind, form),
        credential=form.text("password", "") or None,
        read_only=form.text("read_only", "") == "yes",
        bounds=_bounds(form),
    )
    return _back(request, f"Connected {connected.connection.name}. {connected.check}.")


@router.post("/accounts/oauth")
async def start_oauth(request: Request, svc: Viewer) -> Response:
    form = await posted(request)
    kind, provider, client_id = form.text("kind"), form.text("provider"), form.text("client_id")
    settings = await _settings(svc, kind, form)
    redirect_uri = str(request.url_for("oauth_callback"))
    token_endpoint = form.text("token_endpoint", "").strip() or None
    # first: a kind that is not signed in to is refused as such, not for a missing user name
    start = await svc.start_oauth(
        person_id="",
        kind=kind,
        provider=provider,
        client_id=client_id.strip(),
        redirect_uri=redirect_uri,
        authorization_endpoint=form.text("authorization_endpoint", "").strip() or None,
        token_endpoint=token_endpoint,
        scope=form.text("scope", "").strip() or None,
    )
    username = str(settings.pop("username", "")).strip()
    if not username:
        raise UsageError("give the user name you sign in with at the provider")
    _authorizing(request)[start.state] = Authorizing(
        token=session_token(request),
        until=svc.clock.now() + timedelta(minutes=AUTHORIZE_MINUTES),
        arguments={
            "kind": kind,
            "provider": provider,
            "client_id": client_id.strip(),
            "token_endpoint": token_endpoint,
            "name": form.text("name"),
            "username": username,
            "client_secret": form.text("client_secret", "") or None,
            "redirect_uri": redirect_uri,
            "code_verifier": start.code_verifier,
            "settings": settings,
            "read_only": form.text("read_only", "") == "yes",
            "bounds": _bounds(form),
        },
    )
    # a link, not a redirect: the page's policy lets forms lead only to this site
    return page(
        request, "authorize.html", title="Allow access", provider=start.provider, url=start.url
    )


@router.get("/accounts/oauth/callback", name="oauth_callback")
async def oauth_callback(request: Request) -> HTMLResponse:
    q = request.query_params
    owner: Service = request.app.state.service
    pending = _authorizing(request).pop(q.get("state", ""), None)
    if pending is None or owner.clock.now() > pending.until:
        raise UsageError("this authorization is unknown or expired: start it again")
    if "code" not in q:
        why = q.get("error_description") or q.get("error") or "no reason given"
        raise UsageError(f"access was not allowed: {why}")
    svc = await owner.authenticate(pending.token)
    connected = await svc.connect_oauth(person_id="", code=q["code"], **pending.arguments)
    return page(
        request,
        "authorized.html",
        title="Connected",
        logged_in=False,  # the session cookie does not come with a provider's redirect
        said=f"Connected {connected.connection.name}. {connected.check}.",
    )


@router.post("/accounts/{connection_id}/test")
async def check_account(request: Request, svc: Viewer, connection_id: str) -> Response:
    await posted(request)
    checked = await svc.test_connection(connection_id, person_id="")
    name = checked.connection.name
    if checked.ok:
        return _back(request, f"{name} works. {checked.said}.")
    return _back(request, f"{name} does not work: {checked.said}")


@router.post("/connections/{connection_id}/disconnect")
async def disconnect(request: Request, svc: Viewer, connection_id: str) -> Response:
    form = await posted(request)
    forget = form.text("forget", "") == "yes"
    result = await svc.disconnect_account(connection_id, person_id="", forget=forget)
    said = [f"{result.connection.name} disconnected: nothing goes through it any more."]
    if result.revoked:
        said.append(f"{len(result.revoked)} grant(s) it covered revoked.")
    if result.forgotten is not None:
        count = result.forgotten
        said.append(f"Forgot {count} memor{'y' if count == 1 else 'ies'} learned through it.")
    return _back(request, " ".join(said))


def _authorizing(request: Request) -> dict[str, Authorizing]:
    """This process's authorizations in progress, by state (expired ones dropped)."""
    held: dict[str, Authorizing] = request.app.state.oauth_authorizing
    now = request.app.state.service.clock.now()
    for expired in [key for key, value in held.items() if value.until < now]:
        del held[expired]
    return held


async def _settings(svc: Service, kind: str, form: Form) -> dict[str, Any]:
    """The settings of a ``kind`` account the form gives (empty fields left out: each has a
    default, or the connector says it is missing)."""
    offered = {k.kind: k.settings for k in await svc.account_kinds()}.get(kind, [])
    settings: dict[str, Any] = {}
    for setting in offered:
        text = form.text(setting.name, "").strip()
        if not text:
            continue
        if setting.shape == "integer":
            settings[setting.name] = form.integer(setting.name)
        elif setting.shape == "list":
            settings[setting.name] = [v.strip() for v in text.split(",") if v.strip()]
        else:
            settings[setting.name] = text
    return settings


def _bounds(form: Form) -> dict[str, list[str]]:
    return {
        key: values
        for key in ("recipients", "domains", "calendars")
        if (values := [v.strip() for v in form.text(key, "").split(",") if v.strip()])
    }


def _back(request: Request, message: str) -> Response:
    return done(request, "/security", message)
