"""The OAuth 2.0 authorization-code flow with PKCE (S256) that produces the token set the egress
broker uses (:class:`~steward.sentinel.oauthtokens.OAuthTokens`): where to send the person, and the
exchange of the code they bring back. Endpoints must use https (plain http only on a local
host).

authlib is imported by the two functions that use it: every command imports this module through
the facade, and authlib costs ~50 ms to import."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from steward.errors import UsageError
from steward.sentinel.egress import LOCAL_HOSTS, EgressFailed
from steward.sentinel.oauthtokens import OAuthTokens
from steward.sentinel.urls import UrlRefused, parse_url
from steward.sentinel.vault import Redactor


@dataclass(kw_only=True, frozen=True)
class AuthorizationRequest:
    """Where to send the person to authorize, and what to keep until they come back."""

    url: str
    """The authorization URL (with the S256 code challenge)."""
    state: str
    """Compare with the ``state`` the redirect brings back (CSRF protection)."""
    code_verifier: str
    """Keep server-side; :func:`exchange_code` needs it."""


def oauth_authorization_url(
    *,
    authorization_endpoint: str,
    client_id: str,
    redirect_uri: str,
    scope: str,
    state: str | None = None,
    **extra: str,
) -> AuthorizationRequest:
    """Start the authorization-code flow with PKCE (S256). ``extra`` are further parameters
    (``access_type="offline"``, ``prompt="consent"``...)."""
    from authlib.common.security import generate_token
    from authlib.oauth2.client import OAuth2Client

    _require_secure(authorization_endpoint, "authorization endpoint")
    verifier = str(generate_token(64))
    client = OAuth2Client(
        None,
        client_id=client_id,
        redirect_uri=redirect_uri,
        scope=scope,
        code_challenge_method="S256",
    )
    url, state = client.create_authorization_url(
        authorization_endpoint, state=state, code_verifier=verifier, **extra
    )
    return AuthorizationRequest(url=str(url), state=str(state), code_verifier=verifier)


async def exchange_code(
    *,
    token_endpoint: str,
    client_id: str,
    client_secret: str | None,
    redirect_uri: str,
    code: str,
    code_verifier: str,
    now: datetime,
    timeout_seconds: float = 30.0,
) -> OAuthTokens:
    """Exchange an authorization code (and its PKCE verifier) for a token set; encrypt
    ``.to_secret()`` and store it with ``put_secret`` to use it through the broker."""
    import httpx2
    from authlib.common.errors import AuthlibBaseError
    from authlib.integrations.httpx_client import AsyncOAuth2Client

    _require_secure(token_endpoint, "token endpoint")
    try:
        async with AsyncOAuth2Client(
            client_id=client_id,
            client_secret=client_secret,
            redirect_uri=redirect_uri,
            timeout=timeout_seconds,
            follow_redirects=False,
        ) as client:
            token = await client.fetch_token(
                token_endpoint,
                grant_type="authorization_code",
                code=code,
                code_verifier=code_verifier,
            )
    except (AuthlibBaseError, httpx2.HTTPError, ValueError) as exc:
        redactor = Redactor(("oauth", v) for v in (code, code_verifier, client_secret or ""))
        detail = redactor.redact(f"{type(exc).__name__}: {exc}")
        raise EgressFailed(f"exchanging the authorization code failed: {detail}") from None
    return OAuthTokens.from_response(
        token,
        token_endpoint=token_endpoint,
        client_id=client_id,
        client_secret=client_secret,
        now=now,
    )


def _require_secure(url: str, what: str) -> None:
    try:
        target = parse_url(url)
    except UrlRefused as exc:
        raise UsageError(f"the OAuth {what} is not a usable URL: {exc}") from None
    if target.scheme != "https" and target.host not in LOCAL_HOSTS:
        raise UsageError(f"the OAuth {what} must use https: {url!r}")
