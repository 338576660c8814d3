"""Connecting a calendar account with OAuth 2.0, end to end over real sockets: a local
authorization server (authorization code with PKCE, refresh), a CalDAV gateway in front of
Radicale that admits only its access tokens, on both store backends. When the token expires,
the next sign-in refreshes it and keeps the new one in the vault."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from steward.connectors.base import ConnectionFailed
from steward.domain.clock import SimulatedClock
from steward.errors import UsageError
from steward.service import Service
from steward.store import Store
from steward.testing.http_server import serving
from support.caldavserver import PersonCalendars
from support.oauth_server import AuthorizationServer, caldav_gateway

REDIRECT = "http://127.0.0.1:9/callback"
"""Where the provider sends the person back (the CLI listens there; here the test reads the
redirect itself)."""


@pytest.fixture
async def svc(store: Store, clock: SimulatedClock, tmp_path: Path) -> Service:
    return Service(store, clock, data_dir=tmp_path)


async def authorize(svc: Service, me: str, auth: str) -> tuple[str, str]:
    """Start the flow and play the person's browser: the code and the PKCE verifier."""
    start = await svc.start_oauth(
        person_id=me,
        kind="calendar",
        provider="custom",
        client_id="steward-test-client",
        redirect_uri=REDIRECT,
        authorization_endpoint=f"{auth}/authorize",
        token_endpoint=f"{auth}/token",
        scope="calendar",
    )
    query = parse_qs(urlsplit(start.url).query)
    assert query["code_challenge_method"] == ["S256"]
    assert start.code_verifier not in start.url  # only its hash travels
    async with httpx.AsyncClient() as browser:
        answer = await browser.get(start.url)
    assert answer.status_code == 302
    back = parse_qs(urlsplit(answer.headers["location"]).query)
    assert back["state"] == [start.state]
    return back["code"][0], start.code_verifier


async def test_an_oauth_calendar_is_connected_and_its_token_refreshed_when_it_expires(
    svc: Service, clock: SimulatedClock, calendars: PersonCalendars
) -> None:
    me = (await svc.ensure_person()).id
    issuer = AuthorizationServer(lifetime=3600)
    server, user = calendars.server, calendars.user
    gateway = caldav_gateway(issuer, server.url, user, server.passwords[user])
    async with serving(issuer.app()) as auth, serving(gateway) as caldav:
        # the token endpoint is on this machine: a connection must name the host first
        await svc.add_connection(
            person_id=me, kind="http", name="local auth", scopes=["api.call"], hosts=["127.0.0.1"]
        )
        code, verifier = await authorize(svc, me, auth)
        done = await svc.connect_oauth(
            person_id=me,
            kind="calendar",
            name="google",
            provider="custom",
            username=user,
            client_id="steward-test-client",
            redirect_uri=REDIRECT,
            code=code,
            code_verifier=verifier,
            token_endpoint=f"{auth}/token",
            settings={"url": f"{caldav}/"},
        )
        assert done.check == f"Signed in to 127.0.0.1 as {user}: 2 calendars (Home, Work)"
        assert done.connection.settings["auth"] == "oauth2"
        assert issuer.grants == ["authorization_code"]
        [first] = issuer.access

        clock.advance(timedelta(hours=2))
        checked = await svc.test_connection("google", person_id=me)
        assert (checked.ok, checked.said) == (True, done.check)
        assert issuer.grants == ["authorization_code", "refresh_token"]
        assert first not in issuer.access  # the old token no longer works: the new one did

        # a second check uses the stored new token: no further refresh
        assert (await svc.test_connection("google", person_id=me)).ok
        assert issuer.grants == ["authorization_code", "refresh_token"]

        # the provider forgets the tokens (access revoked): the check says so in plain words
        issuer.access.clear()
        issuer.refresh.clear()
        clock.advance(timedelta(hours=2))
        failed = await svc.test_connection("google", person_id=me)
        assert not failed.ok
        assert "refreshing OAuth secret" in failed.said


async def test_a_code_used_twice_or_a_wrong_verifier_connects_nothing(
    svc: Service, calendars: PersonCalendars
) -> None:
    me = (await svc.ensure_person()).id
    issuer = AuthorizationServer()
    async with serving(issuer.app()) as auth:
        code, verifier = await authorize(svc, me, auth)
        for wrong in (verifier[:-1] + ("a" if verifier[-1] != "a" else "b"), verifier):
            with pytest.raises(ConnectionFailed, match="your OAuth provider did not accept the"):
                await svc.connect_oauth(
                    person_id=me,
                    kind="calendar",
                    name="google",
                    provider="custom",
                    username=calendars.user,
                    client_id="steward-test-client",
                    redirect_uri=REDIRECT,
                    code=code,
                    code_verifier=wrong,
                    token_endpoint=f"{auth}/token",
                    settings={"url": calendars.server.url},
                )
    assert await svc.list_connections(person_id=me) == []
    assert await svc.list_secrets(person_id=me) == []


async def test_providers_know_their_servers_and_a_custom_one_needs_its_endpoints(
    svc: Service,
) -> None:
    me = (await svc.ensure_person()).id
    gmail = await svc.start_oauth(
        person_id=me,
        kind="calendar",
        provider="gmail",
        client_id="id.apps.googleusercontent.com",
        redirect_uri=REDIRECT,
    )
    assert gmail.url.startswith("https://accounts.google.com/o/oauth2/v2/auth?")
    query = parse_qs(urlsplit(gmail.url).query)
    assert query["scope"] == ["https://www.googleapis.com/auth/calendar"]
    assert query["access_type"] == ["offline"]
    with pytest.raises(UsageError, match=r"Microsoft 365 .* offers mail over OAuth, not calendar"):
        await svc.start_oauth(
            person_id=me,
            kind="calendar",
            provider="microsoft365",
            client_id="id",
            redirect_uri=REDIRECT,
        )
    with pytest.raises(UsageError, match="custom OAuth provider needs its token endpoint"):
        await svc.start_oauth(
            person_id=me, kind="calendar", provider="custom", client_id="id", redirect_uri=REDIRECT
        )
    with pytest.raises(UsageError, match="no OAuth provider named 'yahoo'"):
        await svc.start_oauth(
            person_id=me, kind="calendar", provider="yahoo", client_id="id", redirect_uri=REDIRECT
        )
