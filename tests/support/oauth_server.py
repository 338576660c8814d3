"""A small OAuth 2.0 authorization server for tests, and a CalDAV gateway that admits only the
access tokens it issued (as Google's CalDAV endpoint does), in front of Radicale.

The server approves every request at ``/authorize`` at once (the person said yes) and
redirects back with a code; ``/token`` exchanges a code for tokens only with the PKCE verifier
that matches the challenge (S256), the same client and the same redirect URI, and refreshes
tokens with a refresh token (rotating it: the old one stops working). Run as a script with a
URL, this module is the "browser" a test points ``$BROWSER`` at: it follows the authorization
redirects to the loopback address the CLI listens on.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import sys
from dataclasses import dataclass, field
from urllib.parse import urlencode

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

DAV_METHODS = ["GET", "PUT", "DELETE", "OPTIONS", "PROPFIND", "PROPPATCH", "REPORT", "MKCALENDAR"]
FORWARDED = ("content-type", "depth", "if-match", "if-none-match", "prefer")
"""Request headers the gateway passes on to Radicale."""


@dataclass
class AuthorizationServer:
    """What the server issued and saw."""

    client_id: str = "steward-test-client"
    """The only client it knows."""
    lifetime: int = 3600
    """Seconds an access token lives (as ``expires_in`` says)."""
    codes: dict[str, dict[str, str]] = field(default_factory=dict)
    """Unused codes and what they were issued for."""
    access: set[str] = field(default_factory=set)
    """Access tokens that work (a refresh retires the old one)."""
    refresh: dict[str, str] = field(default_factory=dict)
    """Refresh token → the access token last issued with it."""
    grants: list[str] = field(default_factory=list)
    """The grant type of every successful token request, in order."""

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/authorize", self._authorize),
                Route("/token", self._token, methods=["POST"]),
            ]
        )

    async def _authorize(self, request: Request) -> Response:
        q = request.query_params
        if q.get("client_id") != self.client_id or q.get("code_challenge_method") != "S256":
            return Response("unknown client or no PKCE", status_code=400)
        code = secrets.token_urlsafe(16)
        self.codes[code] = {
            "challenge": q["code_challenge"],
            "redirect_uri": q["redirect_uri"],
            "scope": q.get("scope", ""),
        }
        answer = urlencode({"code": code, "state": q.get("state", "")})
        return RedirectResponse(f"{q['redirect_uri']}?{answer}", status_code=302)

    async def _token(self, request: Request) -> Response:
        form = await request.form()
        grant = str(form.get("grant_type"))
        if grant == "authorization_code":
            issued = self.codes.pop(str(form.get("code")), None)
            verifier = str(form.get("code_verifier", ""))
            challenge = (
                base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
                .rstrip(b"=")
                .decode()
            )
            if (
                issued is None
                or issued["challenge"] != challenge
                or issued["redirect_uri"] != form.get("redirect_uri")
                or form.get("client_id", self.client_id) != self.client_id
            ):
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            scope = issued["scope"]
        elif grant == "refresh_token":
            old = self.refresh.pop(str(form.get("refresh_token")), None)
            if old is None:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            self.access.discard(old)
            scope = ""
        else:
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        access, refresh = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
        self.access.add(access)
        self.refresh[refresh] = access
        self.grants.append(grant)
        return JSONResponse(
            {
                "access_token": access,
                "refresh_token": refresh,
                "token_type": "Bearer",
                "expires_in": self.lifetime,
                "scope": scope,
            }
        )


def caldav_gateway(
    issuer: AuthorizationServer, radicale: str, user: str, password: str
) -> Starlette:
    """CalDAV for ``user`` on ``radicale`` behind Bearer tokens: a request with an access token
    ``issuer`` issued (and did not retire) is passed on, signed in as ``user``; others are
    refused with 401."""

    async def gateway(request: Request) -> Response:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if token not in issuer.access:
            return Response(status_code=401, headers={"WWW-Authenticate": "Bearer"})
        async with httpx.AsyncClient(auth=(user, password)) as http:
            answer = await http.request(
                request.method,
                f"{radicale.rstrip('/')}{request.url.path}",
                content=await request.body(),
                headers={k: v for k, v in request.headers.items() if k in FORWARDED},
            )
        kept = {k: v for k, v in answer.headers.items() if k in ("content-type", "etag")}
        return Response(answer.content, answer.status_code, headers=kept)

    return Starlette(routes=[Route("/{path:path}", gateway, methods=DAV_METHODS)])


if __name__ == "__main__":  # the "browser": follow the authorization to the loopback redirect
    httpx.get(sys.argv[1], follow_redirects=True, timeout=30).raise_for_status()
