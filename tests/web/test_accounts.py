"""The security page's connected accounts, against a real CalDAV server (Radicale) and a local
OAuth authorization server, on both backends: connect with a password or through OAuth from
the dashboard, see what each account may do and how it is watched (in the person's time zone),
test it, disconnect it and forget what came through it."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import httpx

from steward.domain.memory import MemoryKind, Source, SourceKind
from steward.domain.watch import Found
from steward.testing.http_server import serving
from support.caldavserver import PersonCalendars
from support.oauth_server import AuthorizationServer, caldav_gateway
from support.web import Site


def text_of(page: str) -> str:
    """What the page says, without its markup."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


async def test_connect_see_test_and_disconnect_an_account(
    site: Site, calendars: PersonCalendars
) -> None:
    me = await site.session(site.a.control)
    page = (await me.get("/security")).text
    assert 'action="/accounts"' in page
    assert 'id="connect-calendar"' in page  # a form per kind, with that kind's settings
    assert 'name="starting_soon_minutes" type="number"' in page
    user, password = calendars.user, calendars.server.passwords[calendars.user]
    form = {"kind": "calendar", "name": "home", "url": calendars.server.url, "username": user}

    refused = await me.post("/accounts", **form, password="wrong")
    assert refused.status_code == 400
    assert f"refused the sign-in as {user}" in html.unescape(refused.text)
    assert [c.name for c in await site.owner.list_connections(person_id=site.a.person.id)] == [
        "ann's mail"
    ]

    made = await me.post(
        "/accounts", **form, password=password, read_only="yes", calendars="Work, Home"
    )
    assert made.status_code == 303, made.text
    page = text_of((await me.get("/security")).text)
    assert f"Connected home. Signed in to 127.0.0.1 as {user}: 2 calendars (Home, Work)." in page
    assert "home Calendar (CalDAV)" in page
    assert "May read calendars; only the calendars work and home." in page
    assert "Not watched yet." in page
    assert password not in page

    [home] = [
        c for c in await site.owner.list_connections(person_id=site.a.person.id) if c.name == "home"
    ]
    await site.store.watches.record(
        person_id=site.a.person.id,
        connection_id=home.id,
        source="calendar.changed",
        found=[Found(type="calendar.changed", dedupe_key="k1")],
        cursor={"token": "t1"},
        now=site.clock.now(),
    )
    await site.store.watches.record_failure(
        connection_id=home.id,
        source="calendar.starting",
        error="cannot reach 127.0.0.1",
        now=site.clock.now(),
        retry_at=site.clock.now() + timedelta(minutes=5),
    )
    page = text_of((await me.get("/security")).text)
    assert "Could not reach it once (cannot reach 127.0.0.1); trying again at 08:05" in page

    tested = await me.post(f"/accounts/{home.id}/test")
    assert tested.status_code == 303
    page = text_of((await me.get("/security")).text)
    assert f"home works. Signed in to 127.0.0.1 as {user}: 2 calendars (Home, Work)." in page

    await site.owner.memory.write(
        person_id=site.a.person.id,
        content="Dentist on Friday",
        kind=MemoryKind.FACT,
        source=Source(kind=SourceKind.CONNECTOR, ref=f"{home.id}/e1", trusted=False),
        actor="connector",
    )
    gone = await me.post(f"/connections/{home.id}/disconnect", forget="yes")
    assert gone.status_code == 303
    page = text_of((await me.get("/security")).text)
    assert "home disconnected: nothing goes through it any more." in page
    assert "Forgot 1 memory learned through it." in page
    assert f'id="{home.id}"' not in page
    assert home.secret not in {
        s.name for s in await site.owner.list_secrets(person_id=site.a.person.id)
    }


async def test_a_read_token_cannot_connect_test_or_disconnect(site: Site) -> None:
    me = await site.session(site.a.read)
    before = await site.owner.list_connections(person_id=site.a.person.id)
    for path, fields in (
        ("/accounts", {"kind": "calendar", "name": "x"}),
        (f"/accounts/{site.a.connection.id}/test", {}),
        (f"/connections/{site.a.connection.id}/disconnect", {"forget": "yes"}),
    ):
        answer = await me.post(path, **fields)
        assert answer.status_code == 403, path
    assert await site.owner.list_connections(person_id=site.a.person.id) == before


async def test_forms_need_the_csrf_token_and_anothers_account_is_not_found(site: Site) -> None:
    me = await site.session(site.a.control)
    for path in ("/accounts", f"/accounts/{site.a.connection.id}/test"):
        answer = await me.client.post(path, data={"kind": "calendar", "name": "x"})
        assert answer.status_code == 403, path
        assert "reload the page" in answer.text
    answer = await me.post(f"/accounts/{site.b.connection.id}/test")
    assert answer.status_code == 404


async def test_an_oauth_account_is_connected_from_the_dashboard(
    site: Site, calendars: PersonCalendars
) -> None:
    """The form starts the authorization; the page links to the provider (here a local
    authorization server); the provider sends the browser back with a code — without the
    session cookie, which is SameSite=Strict — and the account is connected for the session
    that started it, once."""
    issuer = AuthorizationServer()
    server, user = calendars.server, calendars.user
    gateway = caldav_gateway(issuer, server.url, user, server.passwords[user])
    me = await site.session(site.a.control)
    page = text_of((await me.get("/security")).text)
    assert f"must be {site.url}/accounts/oauth/callback" in page
    async with serving(issuer.app()) as auth, serving(gateway) as caldav:
        started = await me.post(
            "/accounts/oauth",
            kind="calendar",
            provider="custom",
            name="google",
            username=user,
            client_id=issuer.client_id,
            authorization_endpoint=f"{auth}/authorize",
            token_endpoint=f"{auth}/token",
            scope="calendar",
            url=f"{caldav}/",
        )
        assert started.status_code == 200, started.text
        [link] = re.findall(r'href="([^"]*/authorize\?[^"]*)"', started.text)
        async with httpx.AsyncClient() as browser:
            sent = await browser.get(html.unescape(link))
            assert sent.status_code == 302
            back = sent.headers["location"]
            assert back.startswith(f"{site.url}/accounts/oauth/callback?")
            answer = await browser.get(back)  # a cross-site redirect: no session cookie
            assert answer.status_code == 200, answer.text
            assert (
                f"Connected google. Signed in to 127.0.0.1 as {user}: 2 calendars (Home, Work)."
                in text_of(answer.text)
            )
            again = await browser.get(back)
            assert again.status_code == 400
            assert "unknown or expired" in html.unescape(again.text)
    [google] = [
        c
        for c in await site.owner.list_connections(person_id=site.a.person.id)
        if c.name == "google"
    ]
    assert (google.settings["auth"], google.settings["url"]) == ("oauth2", f"{caldav}/")
    assert issuer.grants == ["authorization_code"]


async def test_an_authorization_the_provider_refused_or_that_expired_connects_nothing(
    site: Site,
) -> None:
    me = await site.session(site.a.control)
    before = await site.owner.list_connections(person_id=site.a.person.id)
    form = {
        "kind": "calendar",
        "provider": "gmail",
        "name": "google",
        "username": "ann@gmail.com",
        "client_id": "id.apps.googleusercontent.com",
    }
    for answer in ({"error": "access_denied"}, {"code": "c"}):
        started = await me.post("/accounts/oauth", **form)
        assert started.status_code == 200, started.text
        [link] = re.findall(r'href="(https://accounts\.google\.com/[^"]*)"', started.text)
        state = parse_qs(urlsplit(html.unescape(link)).query)["state"][0]
        if "code" in answer:
            site.clock.advance(timedelta(minutes=11))
        async with httpx.AsyncClient(base_url=site.url) as browser:
            back = await browser.get("/accounts/oauth/callback", params={**answer, "state": state})
        assert back.status_code == 400
        said = html.unescape(back.text)
        assert ("access_denied" if "error" in answer else "unknown or expired") in said
    assert await site.owner.list_connections(person_id=site.a.person.id) == before


def connect_form(page: str, kind: str) -> str:
    """The part of the security page that connects a ``kind`` account."""
    start = page.index(f'id="connect-{kind}"')
    ends = [page.find(mark, start) for mark in ('<details class="card"', "<h2>")]
    return page[start : min(end for end in ends if end > 0)]


async def test_only_kinds_signed_in_to_ask_for_a_password_or_offer_oauth(site: Site) -> None:
    me = await site.session(site.a.control)
    page = (await me.get("/security")).text
    asks = {
        kind: (
            'name="password"' in connect_form(page, kind),
            'action="/accounts/oauth"' in connect_form(page, kind),
            'name="recipients"' in connect_form(page, kind),
            'name="calendars"' in connect_form(page, kind),
        )
        for kind in ("mail", "calendar", "folder", "web", "feed")
    }
    assert asks == {
        "mail": (True, True, True, False),
        "calendar": (True, True, False, True),
        "folder": (False, False, False, False),
        "web": (False, False, False, False),
        "feed": (False, False, False, False),
    }
    refused = await me.post("/accounts", kind="folder", name="docs", roots="/tmp", password="x")
    assert refused.status_code == 400
    assert "Folders on this machine takes no password" in html.unescape(refused.text)
    oauth = await me.post(
        "/accounts/oauth", kind="web", provider="gmail", client_id="c", name="n", username="u"
    )
    assert oauth.status_code == 400
    assert "takes no OAuth provider" in html.unescape(oauth.text)
    assert [c.name for c in await site.owner.list_connections(person_id=site.a.person.id)] == [
        "ann's mail"
    ]
